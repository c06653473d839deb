/** The Trace tab: mounts the streaming trace viewer for the selected run, session and hosts. */

import { ensureStyle } from "../../shared/style.ts";
import type { ViewContext, ViewInstance } from "../view.ts";
import css from "./trace.css";
import { TraceViewer } from "./viewer.ts";

export function mount(container: HTMLElement, ctx: ViewContext): ViewInstance {
  ensureStyle("tv-style", css);
  const viewer = new TraceViewer(ctx);
  container.append(viewer.el);
  void viewer.start();
  return {
    update: (params) => viewer.applyParams(params),
    show: () => viewer.show(),
    unmount: () => viewer.destroy(),
  };
}
