/** The XLA tab: findings, metrics, counters, per-step charts and graphs of PyTorch/XLA runtime logs. */

import type { ViewContext, ViewInstance } from "../view.ts";
import { XlaView } from "./view.ts";

export function mount(container: HTMLElement, ctx: ViewContext): ViewInstance {
  const view = new XlaView(ctx);
  container.append(view.el);
  void view.start();
  return {
    update: (params) => view.applyParams(params),
  };
}
