/** The Compare tab: the selected run against a base picked from `/runs`, step time with its spread,
 * breakdown and op deltas, cautions and the method's advice. */

import type { ViewContext, ViewInstance } from "../view.ts";
import { CompareView } from "./view.ts";

export function mount(container: HTMLElement, ctx: ViewContext): ViewInstance {
  const view = new CompareView(ctx);
  container.append(view.el);
  void view.start();
  return {
    update: (params) => view.applyParams(params),
    unmount: () => view.destroy(),
  };
}
