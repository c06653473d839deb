/** What a tab with options keeps across its loads: the options, held in its deep-link keys (the user
 * changes one: it is written to the link and the tab reloads; the link changes under the tab: the tab
 * takes its options and reloads), and the one load in flight: a new load aborts the one before (its
 * answer would be stale), and unmounting the tab (the view's signal) aborts it too. */

import { isAbort } from "../dom.ts";
import type { ViewContext } from "../views/view.ts";

/** How a tab's options read from and write to its deep-link keys. */
export interface LinkCodec<O> {
  read(params: URLSearchParams): O;
  same(a: O, b: O): boolean;
  params(options: O): Record<string, string | undefined>;
}

export class LinkedOptions<O> {
  private current: O;

  /** `changed` runs after each change; `fromLink`: the link changed (the tab shows the new options). */
  constructor(
    private readonly codec: LinkCodec<O>,
    private readonly ctx: Pick<ViewContext, "params" | "setParams">,
    private readonly changed: (fromLink: boolean) => void,
  ) {
    this.current = codec.read(ctx.params);
  }

  get value(): O {
    return this.current;
  }

  /** The deep link changed under the tab: takes its options when they differ. */
  fromLink(params: URLSearchParams): void {
    const next = this.codec.read(params);
    if (this.codec.same(next, this.current)) return;
    this.current = next;
    this.changed(true);
  }

  /** The user changed an option: takes `next` and writes it to the link, when it differs. */
  set(next: O): void {
    if (this.codec.same(next, this.current)) return;
    this.current = next;
    this.ctx.setParams(this.codec.params(next));
    this.changed(false);
  }
}

export interface Load {
  /** Aborted by the next load and by the view's signal. */
  signal: AbortSignal;
  /** Whether no load has started since this one. */
  latest(): boolean;
  /** Unhooks the load from the view's signal (call it in `finally`). */
  end(): void;
}

export class Loads {
  private controller: AbortController | null = null;

  constructor(private readonly viewSignal: AbortSignal) {}

  /** Aborts the load in flight and starts the next. */
  next(): Load {
    this.abort();
    const controller = new AbortController();
    this.controller = controller;
    const abort = () => controller.abort();
    this.viewSignal.addEventListener("abort", abort, { once: true });
    return {
      signal: controller.signal,
      latest: () => this.controller === controller,
      end: () => this.viewSignal.removeEventListener("abort", abort),
    };
  }

  /** Runs the next load: `fetch`'s answer goes to `show`; its error, or one `show` throws, to `fail`;
   * neither runs once the load is aborted (a newer load or the view's end). */
  async run<T>(fetch: (signal: AbortSignal) => Promise<T>, show: (answer: T) => void, fail: (error: unknown) => void): Promise<void> {
    const load = this.next();
    try {
      const answer = await fetch(load.signal);
      if (load.signal.aborted) return;
      show(answer);
    } catch (e) {
      if (isAbort(e) || load.signal.aborted) return;
      fail(e);
    } finally {
      load.end();
    }
  }

  /** Aborts the load in flight, if any. */
  abort(): void {
    this.controller?.abort();
  }
}
