// @vitest-environment happy-dom
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { discoverTools } from "../../scripts/views.mjs";
import { isToolId, loadView, TOOLS, tabOrder, toolInfo } from "./registry.ts";

describe("registry", () => {
  it("is the tools the folders under src/views/ declare, by id", () => {
    expect(TOOLS).toEqual(discoverTools());
    expect(TOOLS).toEqual([
      { id: "compare", title: "Compare" },
      { id: "memory", title: "Memory" },
      { id: "overview", title: "Overview" },
      { id: "roofline", title: "Roofline" },
      { id: "trace", title: "Trace" },
      { id: "xla", title: "XLA" },
    ]);
  });

  it("loads the view of every tool", async () => {
    for (const t of TOOLS) expect(typeof (await loadView(t.id)).mount).toBe("function");
  });

  it("rejects ids that are not tools of this build", () => {
    expect(isToolId("xla")).toBe(true);
    expect(isToolId("flamegraph")).toBe(false);
    expect(isToolId(null)).toBe(false);
    expect(toolInfo("roofline").title).toBe("Roofline");
    expect(() => toolInfo("flamegraph")).toThrow('unknown tool "flamegraph"');
    return expect(loadView("flamegraph")).rejects.toThrow('unknown tool "flamegraph"');
  });
});

describe("tabOrder", () => {
  const ids = (lists: string[][]) => tabOrder(lists).map((t) => t.id);

  it("follows the order /runs lists each host's tools in, then the tools no host has, by id", () => {
    expect(ids([["overview", "trace", "roofline"]])).toEqual(["overview", "trace", "roofline", "compare", "memory", "xla"]);
    expect(ids([])).toEqual(TOOLS.map((t) => t.id));
  });

  it("merges the hosts' lists into one order that keeps each of them", () => {
    // The server's order is overview, trace, roofline, xla, compare; no host has all of them.
    const lists = [["overview", "trace"], ["xla"], ["trace", "roofline", "compare"], ["overview", "xla", "compare"], ["roofline", "xla"]];
    expect(ids(lists)).toEqual(["overview", "trace", "roofline", "xla", "compare", "memory"]);
    expect(ids([["trace", "compare"], ["overview", "trace"]])).toEqual(["overview", "trace", "compare", "memory", "roofline", "xla"]);
  });

  it("leaves out ids this build lacks and keeps every tab when lists disagree", () => {
    expect(ids([["flamegraph", "trace", "overview"]])).toEqual(["trace", "overview", "compare", "memory", "roofline", "xla"]);
    expect(ids([["trace", "overview"], ["overview", "trace"]])).toEqual(["trace", "overview", "compare", "memory", "roofline", "xla"]);
  });

  it("gives each tool's declaration", () => {
    expect(tabOrder([["xla"]])[0]).toEqual({ id: "xla", title: "XLA" });
  });
});

describe("discoverTools", () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  /** A views folder holding `tools`: folder name → tool.json contents (object, raw text or none) and whether it has a view. */
  function viewsDir(tools: Record<string, { decl?: unknown; view?: boolean }>): string {
    const root = mkdtempSync(join(tmpdir(), "profscope-views-"));
    dirs.push(root);
    for (const [name, { decl, view }] of Object.entries(tools)) {
      mkdirSync(join(root, name));
      if (decl !== undefined) writeFileSync(join(root, name, "tool.json"), typeof decl === "string" ? decl : JSON.stringify(decl));
      if (view) writeFileSync(join(root, name, "index.ts"), "export function mount() { return {}; }\n");
    }
    writeFileSync(join(root, "view.ts"), "");
    return root;
  }

  it("finds a new tool by its folder alone, listed by id", () => {
    const dir = viewsDir({
      trace: { decl: { id: "trace", title: "Trace" }, view: true },
      memory: { decl: { id: "memory", title: "Memory" }, view: true },
      roofline: { decl: { id: "roofline", title: "Roofline" }, view: true },
      shared: {},
    });
    expect(discoverTools(dir)).toEqual([
      { id: "memory", title: "Memory" },
      { id: "roofline", title: "Roofline" },
      { id: "trace", title: "Trace" },
    ]);
  });

  /** A `memory` tool folder: its tool.json (object, raw text or none) and whether it has a view. */
  const memory = (decl: unknown, view = true) => ({ memory: { decl, view } });
  const valid = { id: "memory", title: "Memory" };

  it.each([
    ["a view without a declaration", memory(undefined), /memory: has an index.ts but no tool.json/],
    ["broken JSON", memory("{id: memory"), /tool.json: not valid JSON/],
    ["an id other than the folder", memory({ ...valid, id: "mem" }), /"id" is "mem" but the folder is "memory"/],
    ["an id unfit for links", { Memory: { decl: { ...valid, id: "Memory" }, view: true } }, /"id" must be a lowercase name/],
    ["a missing title", memory({ id: "memory" }), /"title" must be a non-empty string/],
    ["a tab order (the server's, from /runs)", memory({ ...valid, order: 1 }), /unknown key\(s\) order; allowed: id, title \(the tab order is the Python Tool\(order=\.\.\.\)/],
    ["a misspelt key", memory({ ...valid, titel: "x" }), /unknown key\(s\) titel/],
    ["a declaration without a view", memory(valid, false), /declares a tool in tool.json but has no index.ts/],
  ])("refuses %s, naming the file", (_what, tools, message) => {
    expect(() => discoverTools(viewsDir(tools))).toThrow(message);
  });
});
