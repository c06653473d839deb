/** Tiles held in memory, bounded by bytes (least recently used goes first), and the requests for
 * them: a bounded number in flight, in the order the view asks, and cancelled as soon as the view
 * stops wanting them (panned or zoomed away). */

import type { Tile } from "../../api/tile.ts";
import { tileKey } from "./levels.ts";

export type TileLoader = (level: number, index: number, signal: AbortSignal) => Promise<Tile>;

export interface TileId {
  level: number;
  index: number;
}

export interface CacheStats {
  tiles: number;
  bytes: number;
  inFlight: number;
  queued: number;
  requested: number;
  cancelled: number;
  evicted: number;
  failed: number;
}

interface Pending {
  id: TileId;
  controller: AbortController;
}

export class TileCache {
  /** Insertion order = recency order (oldest first): a Map re-inserted on every touch. */
  private readonly held = new Map<string, Tile>();
  private readonly inFlight = new Map<string, Pending>();
  private queue: TileId[] = [];
  private wanted = new Set<string>();
  private readonly pinned = new Set<string>();
  private readonly failures = new Map<string, { message: string; at: number }>();
  private bytes = 0;
  readonly stats: CacheStats = { tiles: 0, bytes: 0, inFlight: 0, queued: 0, requested: 0, cancelled: 0, evicted: 0, failed: 0 };

  constructor(
    private readonly loader: TileLoader,
    private readonly onLoaded: (tile: Tile) => void,
    private readonly onError: (id: TileId, error: Error) => void,
    readonly budgetBytes = 256 * 1024 * 1024,
    readonly maxInFlight = 6,
    private readonly retryAfterMs = 5000,
  ) {}

  /** The tile if held, marking it recently used. */
  get(level: number, index: number): Tile | undefined {
    const key = tileKey(level, index);
    const tile = this.held.get(key);
    if (tile) {
      this.held.delete(key);
      this.held.set(key, tile);
    }
    return tile;
  }

  has(level: number, index: number): boolean {
    return this.held.has(tileKey(level, index));
  }

  /** Never evict this tile (the whole-trace tile: the fallback of last resort). */
  pin(level: number, index: number): void {
    this.pinned.add(tileKey(level, index));
  }

  /** Declare the tiles the view needs now, most important first. Missing ones are requested; requests
   * for tiles no longer wanted are cancelled (queued ones dropped, in-flight ones aborted). */
  want(ids: TileId[]): void {
    const next = new Set<string>();
    const queue: TileId[] = [];
    const now = Date.now();
    for (const id of ids) {
      const key = tileKey(id.level, id.index);
      if (next.has(key)) continue;
      next.add(key);
      const failure = this.failures.get(key);
      if (failure && now - failure.at < this.retryAfterMs) continue;
      if (!this.held.has(key) && !this.inFlight.has(key)) queue.push(id);
    }
    this.wanted = next;
    for (const [key, p] of this.inFlight) {
      if (!next.has(key) && !this.pinned.has(key)) {
        p.controller.abort(new DOMException("tile no longer visible", "AbortError"));
        this.inFlight.delete(key);
        this.stats.cancelled++;
      }
    }
    this.stats.cancelled += this.queue.filter((q) => !next.has(tileKey(q.level, q.index))).length;
    this.queue = queue;
    this.pump();
  }

  private pump(): void {
    while (this.inFlight.size < this.maxInFlight && this.queue.length) {
      const id = this.queue.shift() as TileId;
      const key = tileKey(id.level, id.index);
      if (this.held.has(key) || this.inFlight.has(key)) continue;
      const controller = new AbortController();
      const pending: Pending = { id, controller };
      this.inFlight.set(key, pending);
      this.stats.requested++;
      this.loader(id.level, id.index, controller.signal).then(
        (tile) => {
          if (this.inFlight.get(key) !== pending) return;
          this.inFlight.delete(key);
          this.failures.delete(key);
          this.insert(key, tile);
          this.pump();
          this.onLoaded(tile);
        },
        (error: Error) => {
          if (this.inFlight.get(key) !== pending) return;
          this.inFlight.delete(key);
          if (!controller.signal.aborted) {
            this.failures.set(key, { message: error.message, at: Date.now() });
            this.stats.failed++;
            this.onError(id, error);
          }
          this.pump();
        },
      );
    }
    this.updateStats();
  }

  private insert(key: string, tile: Tile): void {
    const old = this.held.get(key);
    if (old) this.bytes -= old.byteLength;
    this.held.delete(key);
    this.held.set(key, tile);
    this.bytes += tile.byteLength;
    for (const [k, t] of this.held) {
      if (this.bytes <= this.budgetBytes) break;
      if (this.pinned.has(k) || this.wanted.has(k)) continue;
      this.held.delete(k);
      this.bytes -= t.byteLength;
      this.stats.evicted++;
    }
    this.updateStats();
  }

  private updateStats(): void {
    this.stats.tiles = this.held.size;
    this.stats.bytes = this.bytes;
    this.stats.inFlight = this.inFlight.size;
    this.stats.queued = this.queue.length;
  }

  /** Ask again at once for the tiles that failed (the server is ready again), instead of after
   * `retryAfterMs`. */
  retryFailed(): void {
    this.failures.clear();
  }

  /** Drop everything (another trace was opened). */
  clear(): void {
    for (const p of this.inFlight.values()) p.controller.abort(new DOMException("closed", "AbortError"));
    this.inFlight.clear();
    this.queue = [];
    this.held.clear();
    this.pinned.clear();
    this.failures.clear();
    this.bytes = 0;
    this.updateStats();
  }
}
