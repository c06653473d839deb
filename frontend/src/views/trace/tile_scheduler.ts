/** Which tiles the visible window needs and when to ask the cache for them: at once when the view is
 * still, at most every 250 ms while held keys move it (the coarser tiles held are drawn meanwhile). */

import type { TileParams } from "../../api/types.ts";
import { levelFor, tilesCovering } from "./levels.ts";
import type { Timeline } from "./timeline.ts";
import type { TileCache, TileId } from "./tilecache.ts";
import type { Range } from "./viewport.ts";

/** A still view asks this long after the last change (a burst of wheel events asks once). */
const SETTLE_MS = 60;
/** A moving view asks at least this often... */
const MOVING_MAX_WAIT_MS = 250;
/** ...and waits at most this long after a change. */
const MOVING_STEP_MS = 80;

/** The tiles to hold for `range` drawn at `nsPerPx`, most wanted first: the root tile (the
 * fallback under everything), the level's visible tiles from the middle out, then one tile of margin
 * on each side so a small pan never shows coarse tiles. */
export function tilesToFetch(params: TileParams, spanEnd: number, range: Range, nsPerPx: number): TileId[] {
  const level = levelFor(params, nsPerPx);
  const target = tilesCovering(params, level, range.start, range.end, spanEnd);
  const mid = (target.first + target.last) / 2;
  const ids: TileId[] = [{ level: params.max_level, index: 0 }];
  const visible: TileId[] = [];
  for (let i = target.first; i <= target.last; i++) visible.push({ level, index: i });
  visible.sort((a, b) => Math.abs(a.index - mid) - Math.abs(b.index - mid));
  ids.push(...visible);
  const all = tilesCovering(params, level, -Infinity, Infinity, spanEnd);
  if (target.first > all.first) ids.push({ level, index: target.first - 1 });
  if (target.last < all.last) ids.push({ level, index: target.last + 1 });
  return ids;
}

export class TileScheduler {
  private timer: ReturnType<typeof setTimeout> | null = null;
  private deadline = 0;

  /** `moving`: whether the view moves by itself now; `asked`: called after each request to the cache. */
  constructor(
    private readonly timeline: Timeline,
    private readonly cache: TileCache,
    private readonly moving: () => boolean,
    private readonly asked: () => void,
  ) {}

  /** Asks for the tiles of the current window, `now` (the next task) or when the view settles. */
  schedule(now: boolean): void {
    if (!this.timeline.meta) return;
    const t = performance.now();
    if (now || !this.moving()) {
      this.restart(now ? 0 : SETTLE_MS);
      this.deadline = 0;
      return;
    }
    if (!this.deadline) this.deadline = t + MOVING_MAX_WAIT_MS;
    this.restart(Math.max(0, Math.min(MOVING_STEP_MS, this.deadline - t)));
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
  }

  private restart(delayMs: number): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => this.fetchNow(), delayMs);
  }

  private fetchNow(): void {
    this.timer = null;
    this.deadline = 0;
    const meta = this.timeline.meta;
    if (!meta || !this.timeline.width) return;
    this.cache.want(tilesToFetch(meta.tile, meta.span_ns[1], this.timeline.range, this.timeline.projection().nsPerPx));
    this.asked();
  }
}
