// Runs a TypeScript file under Node (which cannot strip types before v22): bundles it with esbuild
// into a temporary module and imports it, passing the remaining arguments through.
import { build } from "esbuild";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [entry, ...args] = process.argv.slice(2);
const out = join(mkdtempSync(join(tmpdir(), "profscope-")), "main.mjs");
await build({ entryPoints: [entry], bundle: true, platform: "node", format: "esm", outfile: out, logLevel: "warning" });
process.argv = [process.argv[0], entry, ...args];
await import(pathToFileURL(out).href);
