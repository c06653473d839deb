// Builds the frontend into tb_plugin/profscope/static/ deterministically (no timestamps), so
// `npm run build && git diff --exit-code tb_plugin/profscope/static` tells whether the committed
// bundle is stale.
//
// Two outputs: `static/app.js` (the app, code-split: each view is its own chunk, loaded on first
// use) and `static/index.js`, the tiny module TensorBoard imports and calls `render()` on. Names:
// app.js, index.js and each view's `views/<tool>.js` keep their name across rebuilds (a change to a
// view changes that one file, not a renamed one); only the shared chunks (code several of them
// import, lazily loaded libraries) are named by content hash, `<name>-<hash>.js`. The
// loader exists because TensorBoard serves `index.js` at /data/plugin/profscope/index.js but
// every other file under /data/plugin/profscope/static/; keeping all chunks next to app.js lets
// their relative imports resolve without any server-side rewriting.
import { build } from "esbuild";
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { discoverTools, toolsDefine } from "./scripts/views.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const outdir = resolve(here, "../tb_plugin/profscope/static");
const target = ["chrome110", "firefox115", "safari16"];

const common = {
  absWorkingDir: here,
  bundle: true,
  format: "esm",
  target,
  minify: true,
  legalComments: "none",
  charset: "utf8",
  loader: { ".css": "text" },
  // Tools are discovered, not listed: each src/views/<tool>/tool.json is a tab, its index.ts (if any)
  // the view's own chunk (scripts/views.mjs).
  define: toolsDefine(),
  write: false,
  logLevel: "warning",
};

// Each view an entry of its own, so its chunk is `views/<tool>.js` rather than `<tool>-<hash>.js`:
// the registry's `import(`./${tool}/index.ts`)` then resolves to that entry's file.
const views = Object.fromEntries(discoverTools().map((t) => [`views/${t.id}`, `src/views/${t.id}/index.ts`]));
const app = await build({
  ...common,
  entryPoints: { app: "src/app.ts", ...views },
  outdir,
  splitting: true,
  chunkNames: "[name]-[hash]",
});
const loader = await build({
  ...common,
  entryPoints: { index: "src/index.ts" },
  outdir,
});

const files = [...app.outputFiles, ...loader.outputFiles];
mkdirSync(outdir, { recursive: true });
// Whatever an earlier build left that this one does not write (old hashed chunks) goes.
const keep = new Set(files.map((f) => relative(outdir, f.path)));
const keepDirs = new Set([...keep].flatMap((p) => p.split("/").slice(0, -1).map((_, i, parts) => parts.slice(0, i + 1).join("/"))));
(function prune(dir) {
  for (const entry of readdirSync(join(outdir, dir), { withFileTypes: true })) {
    const name = dir ? `${dir}/${entry.name}` : entry.name;
    if (entry.isDirectory() && keepDirs.has(name)) prune(name);
    else if (!keep.has(name)) rmSync(join(outdir, name), { recursive: true });
  }
})("");
let total = 0;
for (const f of files.sort((a, b) => a.path.localeCompare(b.path))) {
  mkdirSync(dirname(f.path), { recursive: true });
  const old = (() => {
    try {
      return readFileSync(f.path);
    } catch {
      return null;
    }
  })();
  if (!old || !old.equals(f.contents)) writeFileSync(f.path, f.contents);
  total += f.contents.length;
  console.log(`${relative(here, f.path).padEnd(60)} ${(f.contents.length / 1024).toFixed(1)} KiB`);
}
console.log(`total ${(total / 1024).toFixed(1)} KiB in ${files.length} files`);
