/** The app shell: run / session / host pickers, one tab per tool, loading and error states, and
 * the deep link. Views are mounted lazily per subject and kept while their tab is hidden, so going
 * back to the trace does not reload it. */

import { ApiError, type ProfscopeClient } from "../api/client.ts";
import type { RunsHost, RunsResponse, RunsRun, RunsSession, Subject, ToolId } from "../api/types.ts";
import { clear, h, isAbort, messageOf } from "../dom.ts";
import { isToolId, loadView, type ToolInfo, TOOLS, tabOrder, toolInfo } from "../views/registry.ts";
import type { ViewInstance } from "../views/view.ts";
import type { FragmentStore } from "./link.ts";
import type { Captured } from "./capture.ts";
import { CaptureDialog } from "./capture_dialog.ts";
import { runLabel, sessionLabel } from "./labels.ts";

const SHELL_KEYS = new Set(["run", "session", "host", "tool"]);

interface Selection {
  run: string;
  session: string;
  hosts: string[];
  tool: ToolId;
}

/** What a deep link or a picker asks for; no tool means the first tab the chosen hosts have. */
type Wanted = Omit<Selection, "tool"> & { tool: ToolId | null };

interface MountedView {
  tool: ToolId;
  container: HTMLElement;
  instance: ViewInstance | null;
  abort: AbortController;
}

/** Every host's tool list in a `/runs` answer (each in the server's tab order). */
function hostToolLists(runs: RunsResponse): string[][] {
  return runs.runs.flatMap((r) => r.sessions.flatMap((s) => s.hosts.map((x) => x.tools)));
}

/** Tools that apply to the chosen hosts: those `/runs` lists for any of them that this build has. */
export function toolsFor(hosts: RunsHost[]): Set<ToolId> {
  const out = new Set<ToolId>();
  for (const host of hosts) for (const t of host.tools) if (isToolId(t)) out.add(t);
  return out;
}

export class Shell {
  private runs: RunsResponse | null = null;
  /** The tabs, in the order `/runs` gives (the server's `Tool(order=...)`); by id before it answers. */
  private tabList: readonly ToolInfo[] = TOOLS;
  private sel: Selection | null = null;
  /** Non-shell deep-link keys (the views' own: range, selection, …). */
  private viewParams = new URLSearchParams();
  private readonly views = new Map<ToolId, MountedView>();
  private subjectKey = "";
  private runsAbort: AbortController | null = null;
  private logdirErrors: string[] = [];

  readonly el: HTMLElement;
  private readonly runSelect = h("select", { "data-testid": "run-select", "aria-label": "Run" });
  private readonly sessionSelect = h("select", { "data-testid": "session-select", "aria-label": "Session" });
  private readonly hostSelect = h("select", { "data-testid": "host-select", "aria-label": "Host" });
  private readonly tabs = h("nav", { class: "ps-tabs", role: "tablist" });
  private readonly notices = h("div", { class: "ps-notices" });
  private readonly main = h("main", { class: "ps-main" });
  private readonly linkButton = h("button", { class: "ps-button", "data-testid": "copy-link", type: "button" }, "Copy link");
  private readonly pickers: HTMLElement;
  private readonly captureDialog: CaptureDialog;

  constructor(
    private readonly client: ProfscopeClient,
    private readonly store: FragmentStore,
  ) {
    this.pickers = h(
      "div",
      { class: "ps-pickers" },
      h("label", {}, h("span", {}, "Run"), this.runSelect),
      h("label", {}, h("span", {}, "Session"), this.sessionSelect),
      h("label", {}, h("span", {}, "Host"), this.hostSelect),
    );
    const reload = h(
      "button",
      // A symbol, not words: the bar stays one line at 1280 px with the pickers, Capture… and the tabs.
      { class: "ps-button ps-icon-button", type: "button", title: "Reload the list of runs", "aria-label": "Reload runs", "data-testid": "reload-runs" },
      "↻",
    );
    reload.addEventListener("click", () => void this.loadRuns());
    this.linkButton.addEventListener("click", () => void this.copyLink());
    this.linkButton.title =
      store.where === "top"
        ? "The address bar always holds a link to this view; this copies it"
        : "Copy a link that reopens this view";
    this.captureDialog = new CaptureDialog(client.base, {
      runs: () => this.runs?.runs.map((r) => r.name) ?? [],
      currentRun: () => this.sel?.run ?? null,
      landed: (captured) => this.showCaptured(captured),
    });
    this.el = h(
      "div",
      { class: "ps-app" },
      h(
        "header",
        { class: "ps-bar" },
        this.pickers,
        this.captureDialog.button,
        this.tabs,
        h("span", { class: "ps-spacer" }),
        this.linkButton,
        reload,
      ),
      this.notices,
      this.main,
      this.captureDialog.el,
    );
    this.runSelect.addEventListener("change", () => this.pick({ run: this.runSelect.value }));
    this.sessionSelect.addEventListener("change", () => this.pick({ session: this.sessionSelect.value }));
    this.hostSelect.addEventListener("change", () => this.pick({ hosts: this.hostSelect.value.split(",") }));
    store.listen(() => this.applyFragment());
  }

  /** Loads `/runs` and opens what the deep link names (or the first run). */
  async loadRuns(): Promise<void> {
    this.runsAbort?.abort();
    const abort = (this.runsAbort = new AbortController());
    this.pickers.hidden = true;
    this.setMessage(h("div", { class: "ps-loading", "data-testid": "runs-loading" }, "Loading runs…"));
    try {
      this.runs = await this.client.runs(abort.signal);
    } catch (e) {
      if (isAbort(e)) return;
      const retry = h("button", { class: "ps-button", type: "button" }, "Retry");
      retry.addEventListener("click", () => void this.loadRuns());
      this.setMessage(
        h("div", { class: "ps-error", role: "alert", "data-testid": "runs-error" }, `Could not list runs: ${messageOf(e)} `, retry),
      );
      return;
    }
    this.logdirErrors = this.runs.errors ?? [];
    this.tabList = tabOrder(hostToolLists(this.runs));
    if (!this.runs.runs.length) {
      const msg =
        this.runs.empty_message ||
        `No profiles found under ${this.runs.logdir}. Write a profile there (TensorFlow, JAX, PyTorch or PyTorch/XLA) and reload.`;
      this.renderTabs();
      this.renderNotices([], null);
      this.setMessage(h("div", { class: "ps-empty", "data-testid": "empty-logdir" }, msg));
      return;
    }
    this.pickers.hidden = false;
    this.applyFragment();
  }

  /** A capture landed: list the runs again and open its session. */
  private showCaptured(captured: Captured): void {
    this.store.write(new URLSearchParams({ run: captured.run, session: captured.session }), true);
    void this.loadRuns();
  }

  private setMessage(el: HTMLElement): void {
    this.unmountAll();
    clear(this.main);
    this.main.append(el);
  }

  /** Reads the deep link and shows what it names, falling back to the first valid choice. */
  private applyFragment(): void {
    if (!this.runs || !this.runs.runs.length) return;
    const p = this.store.read();
    const view = new URLSearchParams();
    for (const [k, v] of p) if (!SHELL_KEYS.has(k)) view.set(k, v);
    this.viewParams = view;
    const hosts = p.get("host");
    const tool = p.get("tool");
    this.select(
      {
        run: p.get("run") ?? "",
        session: p.get("session") ?? "",
        hosts: hosts ? hosts.split(",") : [],
        tool: isToolId(tool) ? tool : null,
      },
      true,
    );
  }

  /** A picker changed: the rest of the selection follows, view keys are dropped. */
  private pick(change: Partial<Selection>): void {
    if (!this.sel) return;
    const next = { ...this.sel, ...change };
    if (change.run) next.session = "";
    if (change.run || change.session) next.hosts = [];
    this.viewParams = new URLSearchParams();
    this.select(next, false, true);
  }

  /** `push`: a new history entry (the user picked another run, session or hosts). */
  private select(want: Wanted, fromLink: boolean, push = false): void {
    const runs = (this.runs as RunsResponse).runs;
    const run: RunsRun = runs.find((r) => r.name === want.run) ?? runs[0];
    const session: RunsSession | undefined = run.sessions.find((s) => s.name === want.session) ?? run.sessions[0];
    const known = new Set(session ? session.hosts.map((x) => x.name) : []);
    let hosts = want.hosts.filter((x) => known.has(x));
    if (!hosts.length && session?.hosts.length) hosts = [session.hosts[0].name];
    const hostInfo = session ? session.hosts.filter((x) => hosts.includes(x.name)) : [];
    const available = toolsFor(hostInfo);
    // The tool asked for if the hosts have it, else their first tab (the first tool `/runs` lists).
    let tool = want.tool;
    if (tool === null || !available.has(tool)) tool = this.tabList.find((t) => available.has(t.id))?.id ?? want.tool ?? this.tabList[0].id;
    const invalidLink =
      fromLink && want.run !== "" && (run.name !== want.run || (want.session !== "" && session?.name !== want.session));
    if (invalidLink) this.viewParams = new URLSearchParams();
    this.sel = { run: run.name, session: session ? session.name : "", hosts, tool };
    this.renderPickers(run, session);
    this.renderTabs();
    this.renderNotices(hostInfo, invalidLink ? want : null);
    this.writeFragment(push);
    this.showTool(hostInfo, available);
  }

  private renderPickers(run: RunsRun, session: RunsSession | undefined): void {
    const sel = this.sel as Selection;
    const options = (select: HTMLSelectElement, items: { value: string; text: string }[], value: string) => {
      clear(select);
      for (const it of items) select.append(h("option", { value: it.value }, it.text));
      select.value = value;
      select.disabled = items.length < 2;
    };
    const runs = (this.runs as RunsResponse).runs;
    options(
      this.runSelect,
      runs.map((r) => ({ value: r.name, text: runLabel(r) })),
      run.name,
    );
    options(
      this.sessionSelect,
      run.sessions.map((s) => ({ value: s.name, text: sessionLabel(s) })),
      sel.session,
    );
    const hosts = session ? session.hosts : [];
    const items = hosts.map((x) => ({ value: x.name, text: x.name }));
    if (hosts.length > 1) {
      const all = hosts.map((x) => x.name).join(",");
      items.unshift({ value: all, text: `All ${hosts.length} hosts (merged timeline)` });
      // A link may name a subset of several hosts: offer it as it is.
      const current = sel.hosts.join(",");
      if (sel.hosts.length > 1 && current !== all) items.push({ value: current, text: `${sel.hosts.length} hosts: ${current}` });
    }
    options(this.hostSelect, items, sel.hosts.join(","));
  }

  private renderTabs(): void {
    clear(this.tabs);
    const sel = this.sel;
    const session = sel ? this.currentSession() : undefined;
    const hostInfo = session && sel ? session.hosts.filter((x) => sel.hosts.includes(x.name)) : [];
    const available = toolsFor(hostInfo);
    for (const t of this.tabList) {
      const active = sel?.tool === t.id;
      const enabled = available.has(t.id);
      const b = h(
        "button",
        {
          type: "button",
          role: "tab",
          class: `ps-tab${active ? " active" : ""}`,
          "data-testid": `tab-${t.id}`,
          "aria-selected": active ? "true" : "false",
          disabled: !enabled,
          title: enabled ? t.title : `${t.title}: no data for this tool in the selected host`,
        },
        t.title,
      );
      b.addEventListener("click", () => this.switchTool(t.id));
      this.tabs.append(b);
    }
  }

  private renderNotices(hosts: RunsHost[], badLink: Wanted | null): void {
    clear(this.notices);
    for (const e of this.logdirErrors) this.notices.append(h("div", { class: "ps-notice", role: "status" }, e));
    if (badLink) {
      this.notices.append(
        h(
          "div",
          { class: "ps-notice" },
          `The link names run "${badLink.run}"${badLink.session ? `, session "${badLink.session}"` : ""}, which is not in this logdir; showing the first run instead.`,
        ),
      );
    }
    for (const host of hosts) {
      for (const f of host.files) {
        if (f.error) {
          this.notices.append(
            h("div", { class: "ps-notice", role: "status" }, `${host.name}: ${f.path} could not be read: ${f.error}`),
          );
        }
      }
    }
  }

  private currentSession(): RunsSession | undefined {
    const sel = this.sel;
    if (!sel || !this.runs) return undefined;
    return this.runs.runs.find((r) => r.name === sel.run)?.sessions.find((s) => s.name === sel.session);
  }

  private subject(): Subject {
    const sel = this.sel as Selection;
    return { run: sel.run, session: sel.session, hosts: sel.hosts };
  }

  private writeFragment(push = false): void {
    const sel = this.sel;
    if (!sel) return;
    const p = new URLSearchParams({ run: sel.run, session: sel.session, host: sel.hosts.join(","), tool: sel.tool });
    for (const [k, v] of this.viewParams) p.set(k, v);
    this.store.write(p, push);
  }

  private currentParams(): URLSearchParams {
    const sel = this.sel as Selection;
    const p = new URLSearchParams({ run: sel.run, session: sel.session, host: sel.hosts.join(","), tool: sel.tool });
    for (const [k, v] of this.viewParams) p.set(k, v);
    return p;
  }

  private async copyLink(): Promise<void> {
    if (!this.sel) return;
    const href = this.store.href(this.currentParams());
    try {
      await navigator.clipboard.writeText(href);
      this.linkButton.textContent = "Link copied";
    } catch {
      // Clipboard access can be refused inside an iframe: show the link so it can be copied by hand.
      window.prompt("Link to this view:", href);
    }
    setTimeout(() => {
      this.linkButton.textContent = "Copy link";
    }, 1500);
  }

  private switchTool(tool: ToolId, params?: Record<string, string>): void {
    if (!this.sel) return;
    // Another tab pushes a history entry, so Back returns to the view left.
    const push = tool !== this.sel.tool || params !== undefined;
    this.sel = { ...this.sel, tool };
    // A link into a tool (another tab pointing at a range or event) replaces the previous view keys.
    if (params) this.viewParams = new URLSearchParams(params);
    this.renderTabs();
    this.writeFragment(push);
    const session = this.currentSession();
    const hostInfo = session ? session.hosts.filter((x) => (this.sel as Selection).hosts.includes(x.name)) : [];
    this.showTool(hostInfo, toolsFor(hostInfo), params !== undefined);
  }

  private unmountAll(): void {
    for (const v of this.views.values()) {
      v.abort.abort();
      v.instance?.unmount?.();
      v.container.remove();
    }
    this.views.clear();
    this.subjectKey = "";
  }

  /** Shows the selected tool's view, mounting it for this subject on first use. */
  private showTool(hostInfo: RunsHost[], available: Set<ToolId>, linkChanged = false): void {
    const sel = this.sel as Selection;
    const key = JSON.stringify(this.subject());
    if (key !== this.subjectKey) {
      this.unmountAll();
      clear(this.main);
      this.subjectKey = key;
    }
    for (const v of this.views.values()) v.container.hidden = v.tool !== sel.tool;
    const existing = this.views.get(sel.tool);
    if (existing) {
      existing.instance?.show?.();
      if (linkChanged || this.viewParams.toString()) existing.instance?.update?.(new URLSearchParams(this.viewParams));
      return;
    }
    const container = h("section", { class: "ps-view", "data-testid": `view-${sel.tool}`, role: "tabpanel" });
    const mounted: MountedView = { tool: sel.tool, container, instance: null, abort: new AbortController() };
    this.views.set(sel.tool, mounted);
    this.main.append(container);
    const info = toolInfo(sel.tool);
    if (!available.has(sel.tool)) {
      container.append(h("div", { class: "ps-empty" }, `${info.title}: the selected host has no data for this tool.`));
      return;
    }
    container.append(h("div", { class: "ps-loading" }, "Loading view…"));
    const subject = this.subject();
    loadView(sel.tool).then(
      (module) => {
        if (mounted.abort.signal.aborted) return;
        clear(container);
        mounted.instance = module.mount(container, {
          client: this.client,
          subject,
          hosts: hostInfo,
          params: new URLSearchParams(this.viewParams),
          signal: mounted.abort.signal,
          setParams: (params) => {
            // A hidden view's late write (its debounced link) must not land in another tab's entry.
            if (mounted.abort.signal.aborted || this.sel?.tool !== mounted.tool) return;
            for (const [k, v] of Object.entries(params)) {
              if (v === undefined) this.viewParams.delete(k);
              else this.viewParams.set(k, v);
            }
            this.writeFragment();
          },
          // An unknown id throws here: a view linking to a tool this build lacks is a bug to surface.
          navigate: (tool, params) => this.switchTool(toolInfo(tool).id, params),
        });
      },
      (e) => {
        if (mounted.abort.signal.aborted) return;
        clear(container);
        const msg = e instanceof ApiError ? e.message : `could not load the ${sel.tool} view (${messageOf(e)})`;
        container.append(h("div", { class: "ps-error", role: "alert" }, msg));
      },
    );
  }
}
