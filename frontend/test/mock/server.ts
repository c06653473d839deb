/** Development server: the built bundle inside a TensorBoard-like page (same iframe entry, same
 * <base>), with the API answered by MockApi. For working on the UI without the Python engine:
 *   npm run mock-server -- [port] [steps] [kernelsPerStep] [tileDelayMs]
 *   npm run mock-server -- [port] dense [tracks] [eventsPerTrack]   (drawing-speed checks) */

import { readFile } from "node:fs/promises";
import { createServer } from "node:http";
import { extname, join, normalize } from "node:path";
import { MockApi } from "./api.ts";
import { makeDenseTrace, makeTrace } from "./trace.ts";

const [port = "6199", steps = "40", kernels = "40", delay = "0"] = process.argv.slice(2);
const staticDir = normalize(join(process.cwd(), "../tb_plugin/profscope/static"));
const trace = steps === "dense" ? makeDenseTrace(Number(kernels), Number(delay)) : makeTrace(Number(steps), Number(kernels));
const api = new MockApi(trace, { ingestPolls: 2, tileDelayMs: steps === "dense" ? 0 : Number(delay) });

const TOP = `<!doctype html><html><head><title>mock TensorBoard</title>
<style>body{margin:0;font-family:sans-serif}header{height:40px;background:#f57c00;color:#fff;padding:10px}
iframe{border:0;width:100%;height:calc(100vh - 60px)}</style></head>
<body><header>mock TensorBoard (profscope dev server)</header>
<script>if (!location.hash.startsWith("#profscope")) location.hash = "profscope";</script>
<iframe src="/data/plugin_entry.html?name=profscope"></iframe></body></html>`;

const ENTRY = `<!DOCTYPE html><head><base href="plugin/profscope/" /></head>
<body><script type="module">import("./index.js").then((m) => void m.render());</script></body>`;

const TYPES: Record<string, string> = { ".js": "text/javascript", ".css": "text/css" };

createServer(async (req, res) => {
  const url = new URL(req.url ?? "/", `http://${req.headers.host}`);
  const send = (status: number, type: string, body: string | Uint8Array) => {
    res.writeHead(status, { "Content-Type": type });
    res.end(body);
  };
  try {
    if (url.pathname === "/") return send(200, "text/html", TOP);
    if (url.pathname === "/data/plugin_entry.html") return send(200, "text/html", ENTRY);
    const prefix = "/data/plugin/profscope/";
    if (!url.pathname.startsWith(prefix)) return send(404, "text/plain", "Not found");
    const rest = url.pathname.slice(prefix.length);
    if (rest === "index.js" || rest.startsWith("static/")) {
      const file = normalize(join(staticDir, rest === "index.js" ? "index.js" : rest.slice(7)));
      if (!file.startsWith(staticDir)) return send(400, "text/plain", "bad path");
      return send(200, TYPES[extname(file)] ?? "application/octet-stream", await readFile(file));
    }
    const answer = await api.fetch(url.href);
    res.writeHead(answer.status, { "Content-Type": answer.headers.get("Content-Type") ?? "text/plain" });
    res.end(new Uint8Array(await answer.arrayBuffer()));
  } catch (e) {
    send(500, "text/plain", String(e));
  }
}).listen(Number(port), "127.0.0.1", () => {
  console.log(`mock TensorBoard on http://127.0.0.1:${port}/#profscope (${api.trace.events.length} events)`);
});
