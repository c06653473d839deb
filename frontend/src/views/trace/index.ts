/** The Trace tab: mounts the streaming trace viewer for the selected run, session and hosts. */

import type { ViewContext, ViewInstance } from "../view.ts";
import css from "./trace.css";
import { TraceViewer } from "./viewer.ts";

/** The view's own rules, added once to the document the first time the tab opens. */
function ensureStyle(): void {
  if (document.getElementById("tv-style")) return;
  const style = document.createElement("style");
  style.id = "tv-style";
  style.textContent = css;
  document.head.append(style);
}

export function mount(container: HTMLElement, ctx: ViewContext): ViewInstance {
  ensureStyle();
  const viewer = new TraceViewer(ctx);
  container.append(viewer.el);
  void viewer.start();
  return {
    update: (params) => viewer.applyParams(params),
    show: () => viewer.show(),
    unmount: () => viewer.destroy(),
  };
}
