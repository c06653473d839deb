/** The events another tab linked to: `lk` in the deep link names them by id (a Roofline row's
 * kernels, a finding's evidence), `find` by name (an XLA op: its device executions first). "k of N"
 * in the toolbar, ◀ ▶ walk through them, each selected in turn and shown at the current zoom. */

import type { SearchMatch } from "../../api/types.ts";
import { h } from "../../dom.ts";
import { formatCount } from "../../shared/units.ts";

/** Links carry at most this many event ids. */
export const MAX_LINKED = 200;

export interface LinkedWalkHost {
  /** Select the event and bring it into view; `first`: the walk's first step. */
  show(id: number, first: boolean): Promise<void>;
}

/** The ids of the `lk` key (empty when it has none). */
export function readLinkedIds(p: URLSearchParams): number[] {
  return (p.get("lk") ?? "").split(",").filter(Boolean).map(Number).filter(Number.isInteger).slice(0, MAX_LINKED);
}

/** The name of the `find` key (null when it has none). */
export function readFind(p: URLSearchParams): string | null {
  return (p.get("find") ?? "").trim() || null;
}

/** The events a `find` link names: those named exactly `text` on the device's tracks when there are
 * any (an XLA op runs there; a host TraceMe may share its name), else those named exactly so, else
 * every match. */
export function pickLinked(matches: readonly SearchMatch[], text: string, deviceTracks: ReadonlySet<number>): number[] {
  const exact = matches.filter((m) => m.name === text);
  const onDevice = exact.filter((m) => deviceTracks.has(m.track));
  const chosen = onDevice.length ? onDevice : exact.length ? exact : matches;
  return chosen.slice(0, MAX_LINKED).map((m) => m.id);
}

export class LinkedWalk {
  readonly el: HTMLElement;
  private readonly count = h("span", { class: "tv-search-count", "data-testid": "linked-count" });
  private ids: number[] = [];
  private index = -1;

  constructor(private readonly host: LinkedWalkHost) {
    const prev = h("button", { type: "button", class: "ps-button", title: "Previous linked event", "data-testid": "linked-prev" }, "◀");
    const next = h("button", { type: "button", class: "ps-button", title: "Next linked event", "data-testid": "linked-next" }, "▶");
    prev.addEventListener("click", () => void this.step(-1));
    next.addEventListener("click", () => void this.step(1));
    this.el = h("div", { class: "tv-searchbox", "data-testid": "linked-walk", hidden: true, title: "The events the link named" }, "Linked", this.count, prev, next);
  }

  /** The link's ids (empty when no walk is on). */
  get linked(): readonly number[] {
    return this.ids;
  }

  /** Starts walking `ids` at the one numbered `at` (when it is one of them), else at the first. */
  async start(ids: number[], at?: number): Promise<void> {
    this.ids = ids.slice(0, MAX_LINKED);
    this.el.hidden = !this.ids.length;
    if (!this.ids.length) return;
    const i = at === undefined ? -1 : this.ids.indexOf(at);
    this.index = i >= 0 ? i : 0;
    await this.showCurrent(true);
  }

  stop(): void {
    this.ids = [];
    this.index = -1;
    this.el.hidden = true;
  }

  async step(dir: 1 | -1): Promise<void> {
    const n = this.ids.length;
    if (!n) return;
    this.index = (this.index + dir + n) % n;
    await this.showCurrent(false);
  }

  private async showCurrent(first: boolean): Promise<void> {
    this.count.textContent = `${formatCount(this.index + 1)} of ${formatCount(this.ids.length)}`;
    await this.host.show(this.ids[this.index], first);
  }
}
