/** The Overview tab: step time and where it goes, device activity, op and kernel tables, findings. */

import type { ViewContext, ViewInstance } from "../view.ts";
import { OverviewView } from "./view.ts";

export function mount(container: HTMLElement, ctx: ViewContext): ViewInstance {
  const view = new OverviewView(ctx);
  container.append(view.el);
  void view.start();
  return {
    update: (params) => view.applyParams(params),
    unmount: () => view.destroy(),
  };
}
