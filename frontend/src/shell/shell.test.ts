// @vitest-environment happy-dom
import { afterEach, describe, expect, it } from "vitest";
import { MockApi } from "../../test/mock/api.ts";
import { makeTrace } from "../../test/mock/trace.ts";
import { ProfscopeClient } from "../api/client.ts";
import type { RunsResponse } from "../api/types.ts";
import type { FragmentStore } from "./link.ts";
import { Shell } from "./shell.ts";

const BASE = "http://tb.local/data/plugin/profscope/";

class MemoryStore implements FragmentStore {
  readonly where = "self";
  constructor(public params = new URLSearchParams()) {}
  read() {
    return new URLSearchParams(this.params);
  }
  /** The entries written with `push` (new browser history entries). */
  pushed: string[] = [];
  write(p: URLSearchParams, push = false) {
    this.params = new URLSearchParams(p);
    if (push) this.pushed.push(p.toString());
  }
  href(p: URLSearchParams) {
    return `#${p}`;
  }
  listen() {
    return () => {};
  }
}

async function settle(): Promise<void> {
  for (let i = 0; i < 10; i++) await new Promise((r) => setTimeout(r, 0));
}

/** Waits (up to 5 s) until `ok()` holds: a view loads its chunk and asks the server in its own time. */
async function until(ok: () => boolean): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!ok() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
}

function open(runs?: RunsResponse, link = "") {
  const api = new MockApi(makeTrace(2, 3), runs ? { runs } : {});
  const store = new MemoryStore(new URLSearchParams(link));
  const shell = new Shell(new ProfscopeClient(BASE, api.fetch), store);
  document.body.append(shell.el);
  return { shell, store, api, q: (sel: string) => shell.el.querySelector(sel) as HTMLElement };
}

afterEach(() => {
  document.body.innerHTML = "";
});

describe("shell", () => {
  it("lists runs, sessions and hosts with an all-hosts option", async () => {
    const { shell, q } = open();
    await shell.loadRuns();
    await settle();
    const runs = [...q("[data-testid=run-select]").querySelectorAll("option")].map((o) => o.textContent);
    expect(runs).toEqual(["resnet — Chrome trace", "xla_run — XLA logs"]);
    const hosts = [...q("[data-testid=host-select]").querySelectorAll("option")].map((o) => [o.value, o.textContent]);
    expect(hosts[0]).toEqual(["worker0,worker1", "All 2 hosts (merged timeline)"]);
    expect(hosts.slice(1).map((x) => x[0])).toEqual(["worker0", "worker1"]);
    expect((q("[data-testid=host-select]") as HTMLSelectElement).value).toBe("worker0");
  });

  it("pushes a history entry for a tab switch and another run, not for opening the first view", async () => {
    const { shell, q, store } = open();
    await shell.loadRuns();
    await settle();
    expect(store.pushed).toEqual([]);
    q("[data-testid=tab-trace]").click();
    expect(store.pushed.map((p) => new URLSearchParams(p).get("tool"))).toEqual(["trace"]);
    q("[data-testid=tab-trace]").click();
    expect(store.pushed).toHaveLength(1);
    const run = q("[data-testid=run-select]") as HTMLSelectElement;
    run.value = "xla_run";
    run.dispatchEvent(new Event("change"));
    expect(store.pushed.map((p) => new URLSearchParams(p).get("run"))).toEqual(["resnet", "xla_run"]);
  });

  it("enables the tabs the host's tools name and opens the first of them", async () => {
    const { shell, q, store } = open();
    await shell.loadRuns();
    await settle();
    expect((q("[data-testid=tab-trace]") as HTMLButtonElement).disabled).toBe(false);
    expect((q("[data-testid=tab-overview]") as HTMLButtonElement).disabled).toBe(false);
    expect((q("[data-testid=tab-xla]") as HTMLButtonElement).disabled).toBe(true);
    // /runs lists worker0's tools as ["overview", "trace"]: the first one opens.
    expect(q("[data-testid=view-overview]")).not.toBeNull();
    expect(q("[data-testid=tab-overview]").getAttribute("aria-selected")).toBe("true");
    expect(store.params.get("tool")).toBe("overview");
  });

  it("opens the first tool /runs lists for the host when the link names none", async () => {
    const host = (name: string, tools: string[]) => ({ name, tools, files: [] });
    const runs: RunsResponse = {
      logdir: "/l",
      runs: [{ name: "r", sessions: [{ name: "s", label: "s", hosts: [host("a", ["roofline", "xla"]), host("b", ["trace", "xla"])] }] }],
      errors: [],
    };
    const { shell, q, store } = open(runs, "run=r&session=s&host=b");
    await shell.loadRuns();
    await settle();
    expect(store.params.get("tool")).toBe("trace");
    expect(q("[data-testid=tab-trace]").getAttribute("aria-selected")).toBe("true");
  });

  it("follows a run change: sessions, hosts and tools of the new run", async () => {
    const { shell, q, store } = open();
    await shell.loadRuns();
    await settle();
    const run = q("[data-testid=run-select]") as HTMLSelectElement;
    run.value = "xla_run";
    run.dispatchEvent(new Event("change"));
    await settle();
    expect(store.params.get("run")).toBe("xla_run");
    expect(store.params.get("host")).toBe("cpu");
    expect(store.params.get("tool")).toBe("xla");
    expect(q("[data-testid=view-xla]")).not.toBeNull();
  });

  it("opens what a deep link names, including a merged host list", async () => {
    const { shell, q, store } = open(undefined, "run=resnet&session=2024_01_01_00_00_00&host=worker0,worker1&tool=overview&start=5");
    await shell.loadRuns();
    await settle();
    expect((q("[data-testid=host-select]") as HTMLSelectElement).value).toBe("worker0,worker1");
    expect(store.params.get("tool")).toBe("overview");
    expect(store.params.get("start")).toBe("5");
  });

  it("falls back to the first run when a link names an unknown one, and says so", async () => {
    const { shell, q } = open(undefined, "run=gone&tool=trace");
    await shell.loadRuns();
    await settle();
    expect((q("[data-testid=run-select]") as HTMLSelectElement).value).toBe("resnet");
    expect(shell.el.textContent).toContain('The link names run "gone"');
  });

  it("shows the server's empty-logdir message", async () => {
    const { shell, q } = open({ logdir: "/x", runs: [], errors: [], empty_message: "No profile data found in /x." });
    await shell.loadRuns();
    expect(q("[data-testid=empty-logdir]").textContent).toBe("No profile data found in /x.");
  });

  it("shows a failed /runs with the server's message and a retry", async () => {
    const store = new MemoryStore();
    const failing = () => Promise.resolve(new Response("Internal trouble: disk gone", { status: 500 }));
    const shell = new Shell(new ProfscopeClient(BASE, failing), store);
    await shell.loadRuns();
    const err = shell.el.querySelector("[data-testid=runs-error]");
    expect(err?.textContent).toContain("runs: Internal trouble: disk gone (HTTP 500)");
    expect(err?.querySelector("button")?.textContent).toBe("Retry");
  });

  it("draws one tab per registered tool, in the order /runs lists the hosts' tools in", async () => {
    // The server's order (Python Tool(order=...)): no host here has every tool, and xla's host comes first.
    const host = (name: string, tools: string[]) => ({ name, tools, files: [] });
    const runs: RunsResponse = {
      logdir: "/l",
      runs: [
        { name: "x", sessions: [{ name: "s", label: "s", hosts: [host("cpu", ["xla"])] }] },
        { name: "r", sessions: [{ name: "s", label: "s", hosts: [host("a", ["overview", "trace", "roofline"]), host("b", ["roofline", "xla"])] }] },
      ],
      errors: [],
    };
    const { shell, store } = open(runs);
    await shell.loadRuns();
    await settle();
    const tabs = [...shell.el.querySelectorAll("[role=tab]")].map((t) => [t.getAttribute("data-testid"), t.textContent, (t as HTMLButtonElement).disabled]);
    expect(tabs).toEqual([
      ["tab-overview", "Overview", true],
      ["tab-trace", "Trace", true],
      ["tab-roofline", "Roofline", true],
      ["tab-xla", "XLA", false],
      ["tab-compare", "Compare", true],
      ["tab-memory", "Memory", true],
    ]);
    expect(store.params.get("tool")).toBe("xla");
  });

  it("ignores tool ids that are not tools of this build, from /runs or from a link", async () => {
    const runs: RunsResponse = {
      logdir: "/l",
      runs: [{ name: "r", sessions: [{ name: "s", label: "s", hosts: [{ name: "h", tools: ["flamegraph", "trace"], files: [] }] }] }],

      errors: [],
    };
    const { shell, q, store } = open(runs, "run=r&session=s&host=h&tool=flamegraph");
    await shell.loadRuns();
    await settle();
    expect(q("[data-testid=tab-flamegraph]")).toBeNull();
    expect(store.params.get("tool")).toBe("trace");
    expect(q("[data-testid=view-trace]")).not.toBeNull();
  });

  it("shows a session's label in the picker while links and requests name the session", async () => {
    const host = (name: string) => ({
      name,
      tools: ["trace"],
      files: [{ name: `${name}.pt.trace.json`, path: `${name}.pt.trace.json`, format: "chrome_trace", format_label: "Chrome trace", size: 1, mtime: null }],
    });
    const runs: RunsResponse = {
      logdir: "/l",
      runs: [
        {
          name: "torch",
          sessions: [
            { name: "1795998778000000000", label: "2026-11-30 00:32:58", hosts: [host("w0")] },
            { name: "1796000000000000000", label: "2026-11-30 00:53:20", hosts: [host("w0")] },
          ],
        },
      ],

      errors: [],
    };
    const { shell, q, store, api } = open(runs);
    await shell.loadRuns();
    await settle();
    const select = q("[data-testid=session-select]") as HTMLSelectElement;
    expect([...select.querySelectorAll("option")].map((o) => [o.value, o.textContent])).toEqual([
      ["1795998778000000000", "2026-11-30 00:32:58"],
      ["1796000000000000000", "2026-11-30 00:53:20"],
    ]);
    expect(store.params.get("session")).toBe("1795998778000000000");
    select.value = "1796000000000000000";
    select.dispatchEvent(new Event("change"));
    await settle();
    expect(store.params.get("session")).toBe("1796000000000000000");
    const sessionsAsked = () =>
      api.requests.filter((r) => r.includes("trace/meta")).map((r) => new URLSearchParams(r.split("?")[1]).get("session"));
    await until(() => sessionsAsked().includes("1796000000000000000"));
    const metas = sessionsAsked();
    expect(metas).toContain("1796000000000000000");
    expect(metas.every((s) => s === "1795998778000000000" || s === "1796000000000000000")).toBe(true);
  });

  it("lists unreadable files of the chosen host", async () => {
    const runs: RunsResponse = {
      logdir: "/l",
      runs: [
        {
          name: "r",
          sessions: [
            {
              name: "s",
              label: "s",
              hosts: [{ name: "h", tools: ["trace"], files: [{ name: "h.xplane.pb", path: "h.xplane.pb", format: "xplane", format_label: "XPlane", size: 3, mtime: null, error: "truncated protobuf" }] }],
            },
          ],
        },
      ],

      errors: [],
    };
    const { shell } = open(runs);
    await shell.loadRuns();
    expect(shell.el.textContent).toContain("h: h.xplane.pb could not be read: truncated protobuf");
  });
});
