/** The Memory tab: each allocator's allocated and reserved bytes over the capture, its peak (step and
 * op), the blocks live at the peak, those never freed, and the allocating ops. */

import type { ViewContext, ViewInstance } from "../view.ts";
import { MemoryView } from "./view.ts";

export function mount(container: HTMLElement, ctx: ViewContext): ViewInstance {
  const view = new MemoryView(ctx);
  container.append(view.el);
  void view.start();
  return { update: (params) => view.update(params), unmount: () => view.destroy() };
}
