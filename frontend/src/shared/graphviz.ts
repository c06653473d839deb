/** Graphviz in the browser, for every view that draws a graph (the XLA tab's graph dumps, the trace's
 * HLO graph): the WASM build from @viz-js/viz, imported on first use so it costs nothing until a graph
 * is drawn. The SVG it returns is stripped of links and event attributes, since the graphs are data
 * from the logdir. */

import type { Viz } from "@viz-js/viz";

let viz: Promise<Viz> | null = null;

function instance(): Promise<Viz> {
  viz ??= import("@viz-js/viz").then((m) => m.instance());
  return viz;
}

/** Remove anything in a rendered SVG that could run or navigate: scripts, links, on* handlers. */
export function sanitizeSvg(root: Element): void {
  for (const el of Array.from(root.querySelectorAll("script, foreignObject"))) el.remove();
  for (const el of [root, ...Array.from(root.querySelectorAll("*"))]) {
    for (const attr of Array.from(el.attributes)) {
      const name = attr.name.toLowerCase();
      if (name.startsWith("on") || name === "href" || name === "xlink:href") el.removeAttribute(attr.name);
    }
  }
}

/** Lay out and draw `dot`; throws with Graphviz's own message when the text is not valid DOT. */
export async function renderDot(dot: string): Promise<SVGSVGElement> {
  const v = await instance();
  const result = v.render(dot, { format: "svg" });
  if (result.status !== "success") {
    throw new Error(`Graphviz could not draw this graph: ${result.errors.map((e) => e.message).join("; ")}`);
  }
  const doc = new DOMParser().parseFromString(result.output, "image/svg+xml");
  const svgEl = doc.documentElement;
  if (svgEl.nodeName !== "svg") throw new Error("Graphviz returned no SVG");
  sanitizeSvg(svgEl);
  return document.importNode(svgEl, true) as unknown as SVGSVGElement;
}
