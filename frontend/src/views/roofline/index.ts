/** The Roofline tab: how close each program and op comes to the device's compute and memory roofs. */

import type { ViewContext, ViewInstance } from "../view.ts";
import { RooflineView } from "./view.ts";

export function mount(container: HTMLElement, ctx: ViewContext): ViewInstance {
  const view = new RooflineView(ctx);
  container.append(view.el);
  void view.start();
  return {
    update: (params) => view.applyParams(params),
    unmount: () => view.destroy(),
  };
}
