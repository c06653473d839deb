// @vitest-environment happy-dom
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { discoverTools } from "../../scripts/views.mjs";
import { isToolId, loadView, TOOLS, toolInfo } from "./registry.ts";

describe("registry", () => {
  it("is the tools the folders under src/views/ declare, in tab order", () => {
    expect(TOOLS).toEqual(discoverTools());
    expect(TOOLS.map((t) => [t.id, t.title])).toEqual([
      ["trace", "Trace"],
      ["overview", "Overview"],
      ["roofline", "Roofline"],
      ["xla", "XLA"],
      ["compare", "Compare"],
    ]);
    const orders = TOOLS.map((t) => t.order);
    expect(orders).toEqual([...orders].sort((a, b) => a - b));
  });

  it("loads the view of every tool", async () => {
    for (const t of TOOLS) expect(typeof (await loadView(t.id)).mount).toBe("function");
  });

  it("rejects ids that are not tools of this build", () => {
    expect(isToolId("xla")).toBe(true);
    expect(isToolId("memory")).toBe(false);
    expect(isToolId(null)).toBe(false);
    expect(toolInfo("roofline").title).toBe("Roofline");
    expect(() => toolInfo("memory")).toThrow('unknown tool "memory"');
    return expect(loadView("memory")).rejects.toThrow('unknown tool "memory"');
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

  it("finds a new tool by its folder alone, placed by its order", () => {
    const dir = viewsDir({
      trace: { decl: { id: "trace", title: "Trace", order: 10 }, view: true },
      memory: { decl: { id: "memory", title: "Memory", order: 15 }, view: true },
      roofline: { decl: { id: "roofline", title: "Roofline", order: 30 }, view: true },
      shared: {},
    });
    expect(discoverTools(dir)).toEqual([
      { id: "trace", title: "Trace", order: 10 },
      { id: "memory", title: "Memory", order: 15 },
      { id: "roofline", title: "Roofline", order: 30 },
    ]);
  });

  it("breaks order ties by id", () => {
    const dir = viewsDir({
      b: { decl: { id: "b", title: "B", order: 1 }, view: true },
      a: { decl: { id: "a", title: "A", order: 1 }, view: true },
    });
    expect(discoverTools(dir).map((t) => t.id)).toEqual(["a", "b"]);
  });

  /** A `memory` tool folder: its tool.json (object, raw text or none) and whether it has a view. */
  const memory = (decl: unknown, view = true) => ({ memory: { decl, view } });
  const valid = { id: "memory", title: "Memory", order: 1 };

  it.each([
    ["a view without a declaration", memory(undefined), /memory: has an index.ts but no tool.json/],
    ["broken JSON", memory("{id: memory"), /tool.json: not valid JSON/],
    ["an id other than the folder", memory({ ...valid, id: "mem" }), /"id" is "mem" but the folder is "memory"/],
    ["an id unfit for links", { Memory: { decl: { ...valid, id: "Memory" }, view: true } }, /"id" must be a lowercase name/],
    ["a missing title", memory({ id: "memory", order: 1 }), /"title" must be a non-empty string/],
    ["a missing order", memory({ id: "memory", title: "Memory" }), /"order" must be a number/],
    ["a misspelt key", memory({ ...valid, titel: "x" }), /unknown key\(s\) titel/],
    ["a declaration without a view", memory(valid, false), /declares a tool in tool.json but has no index.ts/],
  ])("refuses %s, naming the file", (_what, tools, message) => {
    expect(() => discoverTools(viewsDir(tools))).toThrow(message);
  });
});
