// The frontend's tools, found from their folders rather than listed anywhere: every
// `src/views/<tool>/` holding a `tool.json` is a tool, and its `index.ts` is the view (bundled as its
// own chunk). build.mjs and vitest.config.ts both take the list from here, so
// the bundle and the unit tests always see the same registry. Types: views.d.mts.
//
// A `tool.json` holds only what the frontend alone knows (the id and the tab's title). The tab order
// is the server's: each tool's Python `Tool(order=...)` (tb_plugin/profscope/tools/<tool>/), which
// `/runs` applies when it lists each host's tools; the shell orders the tabs by those lists.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const VIEWS_DIR = join(dirname(fileURLToPath(import.meta.url)), "../src/views");

/** The global the registry (src/views/registry.ts) reads the discovered tools from. */
const TOOLS_GLOBAL = "__PROFSCOPE_TOOLS__";

/** Ids end up in deep links, test ids and chunk paths: keep them plain. */
const TOOL_ID = /^[a-z][a-z0-9_-]*$/;
const DECLARATION_KEYS = new Set(["id", "title"]);

/** Reads and checks one `tool.json`; every problem names the file and what is wrong with it. */
function readDeclaration(file, folder) {
  let decl;
  try {
    decl = JSON.parse(readFileSync(file, "utf8"));
  } catch (e) {
    throw new Error(`${file}: not valid JSON (${e instanceof Error ? e.message : String(e)})`);
  }
  if (typeof decl !== "object" || decl === null || Array.isArray(decl)) {
    throw new Error(`${file}: expected an object {id, title}`);
  }
  const unknown = Object.keys(decl).filter((k) => !DECLARATION_KEYS.has(k));
  if (unknown.length) {
    const hint = unknown.includes("order") ? " (the tab order is the Python Tool(order=...), which /runs applies)" : "";
    throw new Error(`${file}: unknown key(s) ${unknown.join(", ")}; allowed: id, title${hint}`);
  }
  if (typeof decl.id !== "string" || !TOOL_ID.test(decl.id)) {
    throw new Error(`${file}: "id" must be a lowercase name matching ${TOOL_ID}`);
  }
  if (decl.id !== folder) throw new Error(`${file}: "id" is "${decl.id}" but the folder is "${folder}"; they must match`);
  if (typeof decl.title !== "string" || !decl.title.trim()) throw new Error(`${file}: "title" must be a non-empty string`);
  return { id: decl.id, title: decl.title };
}

/** The tools declared under `viewsDir`, by id (not the tab order: that comes from `/runs`). */
export function discoverTools(viewsDir = VIEWS_DIR) {
  const tools = [];
  for (const entry of readdirSync(viewsDir, { withFileTypes: true })) {
    if (!entry.isDirectory()) continue;
    const folder = join(viewsDir, entry.name);
    const hasView = existsSync(join(folder, "index.ts"));
    const declaration = join(folder, "tool.json");
    if (existsSync(declaration)) {
      if (!hasView) throw new Error(`${folder}: declares a tool in tool.json but has no index.ts exporting its view`);
      tools.push(readDeclaration(declaration, entry.name));
    } else if (hasView) throw new Error(`${folder}: has an index.ts but no tool.json declaring the tool {id, title}`);
  }
  return tools.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/** esbuild / vitest `define` entries that hand the discovered tools to the registry. */
export function toolsDefine(viewsDir = VIEWS_DIR) {
  return { [TOOLS_GLOBAL]: JSON.stringify(discoverTools(viewsDir)) };
}
