/** The "Export…" dialog of the trace view: the trace (whole, or the visible window) as gzipped
 * Chrome trace JSON for Perfetto UI and chrome://tracing, redacted by default. Before the download
 * link appears, `export/preview` with the same parameters says how many events, flows and counter
 * samples the file holds and what redaction takes out, by kind, then each distinct value replaced
 * (partly masked by the server, `ab…yz → <host-1>`), so a user sees what would leak before sharing. */

import type { ExportPreview, RedactedValue } from "../../api/answers.gen.ts";
import type { ProfscopeClient } from "../../api/client.ts";
import type { Subject } from "../../api/types.ts";
import { clear, h, isAbort, messageOf } from "../../dom.ts";
import { formatCount, formatDuration } from "../../shared/units.ts";

export interface ExportOptions {
  /** "visible": only the events of [start, end] (ns from the session start). */
  range: "whole" | "visible";
  start: number;
  end: number;
  redact: boolean;
  shapes: boolean;
  args: boolean;
}

export interface ExportHost {
  client: ProfscopeClient;
  subject: Subject;
  /** The window the timeline shows (ns), null before the trace is open. */
  visibleRange(): { start: number; end: number } | null;
}

/** The query parameters of `export` and `export/preview` for these options. */
export function exportParams(o: ExportOptions): Record<string, string | number> {
  const params: Record<string, string | number> = {};
  if (o.range === "visible") {
    params.start = o.start;
    params.end = o.end;
  }
  if (o.redact) {
    params.redact = 1;
    if (o.shapes) params.redact_shapes = 1;
    if (o.args) params.redact_args = 1;
  }
  return params;
}

/** How a redacted kind is named in the preview. */
export const KIND_LABELS: Record<string, string> = {
  secret_value: "secret values (token=, password=, key=…)",
  bearer_token: "bearer tokens",
  github_token: "GitHub tokens",
  huggingface_token: "Hugging Face tokens",
  api_key: "API keys (sk-…)",
  aws_access_key: "AWS access keys",
  aws_secret_key: "AWS secret keys",
  long_secret: "long hex / base64 secrets",
  email: "e-mail addresses",
  user: "user names",
  host: "host names",
  address: "IP addresses",
  machine_id: "machine ids (UUIDs, serials)",
  path: "file paths (file names kept)",
  shapes: "input shapes",
  args: "argument values",
};

/** The preview's lines: what the file holds, then one line per redacted kind. */
export function previewLines(p: ExportPreview): string[] {
  const lines = [
    `${formatCount(p.events)} events, ${formatCount(p.flows)} flows, ${formatCount(p.counter_samples)} counter samples`,
  ];
  if (!p.redact) return [...lines, "Not redacted: names, paths and arguments are exported as they are."];
  if (!p.redactions.length) return [...lines, "Redaction found nothing to take out."];
  for (const r of p.redactions) {
    const label = KIND_LABELS[r.kind] ?? r.kind;
    const values = r.kind === "args" ? "" : `${formatCount(r.values)}${r.capped ? "+" : ""} distinct, `;
    lines.push(`${label}: ${values}${formatCount(r.occurrences)} ${r.occurrences === 1 ? "place" : "places"}`);
  }
  return lines;
}

/** One group of the replaced values: a kind, its values (original → replacement) and how many
 * more the preview leaves out. */
export interface ReplacementGroup {
  label: string;
  values: RedactedValue[];
  more: number;
}

/** The replaced values by kind, in the order of the kinds' lines. */
export function replacementGroups(p: ExportPreview): ReplacementGroup[] {
  if (!p.redact) return [];
  return p.redactions
    .map((r) => {
      const values = p.replacements.filter((v) => v.kind === r.kind);
      return { label: KIND_LABELS[r.kind] ?? r.kind, values, more: Math.max(0, r.values - values.length) };
    })
    .filter((g) => g.values.length > 0 || g.more > 0);
}

/** A list of each replaced value, kind by kind, scrolling when long. */
function replacementList(groups: ReplacementGroup[]): HTMLElement {
  const list = h("div", { "data-testid": "export-values", style: "max-height: 16em; overflow: auto; margin-top: 6px; font-size: 12px" });
  for (const g of groups) {
    list.append(h("div", { style: "font-weight: 600; margin-top: 4px" }, g.label));
    for (const v of g.values) {
      list.append(
        h(
          "div",
          { "data-testid": "export-value", style: "font-family: monospace; padding-left: 1em" },
          h("span", { title: "original, partly masked" }, v.original),
          " → ",
          h("span", {}, v.replacement),
        ),
      );
    }
    if (g.more) list.append(h("div", { style: "padding-left: 1em" }, `… and ${formatCount(g.more)} more`));
  }
  return list;
}

export class ExportDialog {
  readonly el: HTMLElement;
  private readonly whole = h("input", { type: "radio", name: "tv-export-range", value: "whole", checked: true, "data-testid": "export-whole" });
  private readonly visible = h("input", { type: "radio", name: "tv-export-range", value: "visible", "data-testid": "export-visible" });
  private readonly visibleLabel = h("span", {}, "Visible window");
  private readonly redact = h("input", { type: "checkbox", checked: true, "data-testid": "export-redact" });
  private readonly shapes = h("input", { type: "checkbox", "data-testid": "export-redact-shapes" });
  private readonly args = h("input", { type: "checkbox", "data-testid": "export-redact-args" });
  private readonly preview = h("div", { class: "tv-export-preview", "data-testid": "export-preview", "aria-live": "polite" });
  private readonly link = h("a", { class: "ps-button", "data-testid": "export-download", hidden: true }, "Download .json.gz");
  private window: { start: number; end: number } | null = null;
  private abort: AbortController | null = null;

  constructor(private readonly host: ExportHost) {
    for (const input of [this.whole, this.visible, this.redact, this.shapes, this.args]) {
      input.addEventListener("change", () => this.refresh());
    }
    const close = h("button", { type: "button", class: "ps-button", "data-testid": "export-close" }, "Close");
    close.addEventListener("click", () => this.close());
    const box = h(
      "div",
      { class: "tv-help-box" },
      h("h2", {}, "Export trace"),
      h("p", { class: "tv-hint" }, "Gzipped Chrome trace JSON: opens in Perfetto UI, chrome://tracing and profscope."),
      h("fieldset", {}, h("legend", {}, "Range"), h("label", {}, this.whole, " Whole trace"), " ", h("label", {}, this.visible, " ", this.visibleLabel)),
      h(
        "fieldset",
        {},
        h("legend", {}, "Redaction"),
        h("label", { title: "File paths (file names kept), user and host names, IP and e-mail addresses, machine ids, tokens and keys" }, this.redact, " Redact paths, names, addresses, tokens and keys"),
        h("br"),
        h("label", {}, this.shapes, " Also input shapes and types"),
        h("br"),
        h("label", {}, this.args, " Also every argument value"),
      ),
      this.preview,
      h("p", {}, this.link, " ", close),
    );
    this.el = h("div", { class: "tv-help", role: "dialog", "aria-label": "Export trace", "data-testid": "export-dialog", hidden: true }, box);
    this.el.addEventListener("click", (e) => {
      if (e.target === this.el) this.close();
    });
    // Keys pressed here belong to the dialog, not to the timeline's shortcuts.
    this.el.addEventListener("keydown", (e) => {
      if (e.key === "Escape") this.close();
      e.stopPropagation();
    });
  }

  get isOpen(): boolean {
    return !this.el.hidden;
  }

  /** Opens the dialog on the current visible window and counts what the export holds. */
  open(): void {
    this.window = this.host.visibleRange();
    this.visible.disabled = !this.window;
    if (!this.window) this.whole.checked = true;
    this.visibleLabel.textContent = this.window
      ? `Visible window (${formatDuration(this.window.end - this.window.start)})`
      : "Visible window";
    this.el.hidden = false;
    this.refresh();
  }

  close(): void {
    this.abort?.abort();
    this.el.hidden = true;
  }

  /** The options the dialog shows. */
  options(): ExportOptions {
    const window = this.window ?? { start: 0, end: 0 };
    return {
      range: this.visible.checked && this.window ? "visible" : "whole",
      start: window.start,
      end: window.end,
      redact: this.redact.checked,
      shapes: this.shapes.checked,
      args: this.args.checked,
    };
  }

  /** Asks the preview for the options shown; the link appears with its counts. */
  async refresh(): Promise<void> {
    this.shapes.disabled = this.args.disabled = !this.redact.checked;
    const options = this.options();
    const params = exportParams(options);
    this.abort?.abort();
    const abort = (this.abort = new AbortController());
    this.link.hidden = true;
    this.preview.textContent = "Counting what the export holds…";
    try {
      const answer = await this.host.client.getJson<ExportPreview>("export/preview", this.host.subject, params, abort.signal);
      if (abort.signal.aborted) return;
      clear(this.preview);
      for (const line of previewLines(answer)) this.preview.append(h("div", { "data-testid": "export-preview-line" }, line));
      const groups = replacementGroups(answer);
      if (groups.length) this.preview.append(replacementList(groups));
      this.link.href = this.host.client.url("export", this.host.subject, params);
      this.link.download = answer.filename;
      this.link.hidden = false;
    } catch (e) {
      if (isAbort(e) || abort.signal.aborted) return;
      this.preview.textContent = `Cannot export: ${messageOf(e)}`;
    }
  }
}
