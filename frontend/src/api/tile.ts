/** Decoder of the binary trace tile (`PST1`, docs/ARCHITECTURE.md "Tiles"): typed-array views on
 * the response buffer, no per-event objects, so a 100 k-event tile costs one allocation per column. */

export interface TileEvents {
  n: number;
  id: Uint32Array;
  track: Uint32Array;
  name: Uint32Array;
  /** ns from the tile start (may be negative for events that began in an earlier tile). */
  start: Float32Array;
  dur: Float32Array;
  depth: Uint16Array;
}

export interface TileSummaries {
  n: number;
  track: Uint32Array;
  depth: Uint16Array;
  start: Float32Array;
  width: Float32Array;
  count: Uint32Array;
  busy: Float32Array;
}

export interface TileCounters {
  n: number;
  track: Uint32Array;
  start: Float32Array;
  width: Float32Array;
  min: Float64Array;
  max: Float64Array;
  last: Float64Array;
}

export interface TileFlows {
  n: number;
  srcId: Uint32Array;
  srcTrack: Uint32Array;
  srcTime: Float32Array;
  srcDepth: Uint16Array;
  dstId: Uint32Array;
  dstTrack: Uint32Array;
  dstTime: Float32Array;
  dstDepth: Uint16Array;
}

export interface Tile {
  level: number;
  index: number;
  startNs: number;
  widthNs: number;
  names: string[];
  events: TileEvents;
  summaries: TileSummaries;
  counters: TileCounters;
  flows: TileFlows;
  byteLength: number;
}

export class TileFormatError extends Error {
  override name = "TileFormatError";
}

const MAGIC = 0x31545350; // "PST1" read as little-endian u32

type ArrayCtor<T> = { new (buffer: ArrayBuffer, byteOffset: number, length: number): T; BYTES_PER_ELEMENT: number };

/** Reads consecutive 8-aligned little-endian arrays out of one buffer, checking bounds. */
class Cursor {
  constructor(
    private readonly buffer: ArrayBuffer,
    public offset: number,
    private readonly what: string,
  ) {}

  take<T>(ctor: ArrayCtor<T>, n: number, field: string): T {
    this.offset = (this.offset + 7) & ~7;
    const bytes = n * ctor.BYTES_PER_ELEMENT;
    if (this.offset + bytes > this.buffer.byteLength) {
      throw new TileFormatError(
        `${this.what}: truncated at ${field} (needs ${this.offset + bytes} bytes, got ${this.buffer.byteLength})`,
      );
    }
    const view = new ctor(this.buffer, this.offset, n);
    this.offset += bytes;
    return view;
  }
}

function count(header: Record<string, unknown>, key: string, what: string): number {
  const v = header[key];
  if (typeof v !== "number" || !Number.isInteger(v) || v < 0) {
    throw new TileFormatError(`${what}: header field ${key} is ${JSON.stringify(v)}, expected a count`);
  }
  return v;
}

/** Decodes one tile. `what` names the tile in error messages (e.g. "tile level 3 index 7"). */
export function decodeTile(buffer: ArrayBuffer, what = "tile"): Tile {
  if (buffer.byteLength < 8) throw new TileFormatError(`${what}: ${buffer.byteLength} bytes is too short`);
  const dv = new DataView(buffer);
  if (dv.getUint32(0, true) !== MAGIC) throw new TileFormatError(`${what}: bad magic (not a PST1 tile)`);
  const headerLength = dv.getUint32(4, true);
  if (8 + headerLength > buffer.byteLength) {
    throw new TileFormatError(`${what}: header length ${headerLength} exceeds the ${buffer.byteLength}-byte tile`);
  }
  let header: Record<string, unknown>;
  try {
    header = JSON.parse(new TextDecoder().decode(new Uint8Array(buffer, 8, headerLength)));
  } catch (e) {
    throw new TileFormatError(`${what}: header is not JSON (${(e as Error).message})`);
  }
  const names = header.names;
  if (!Array.isArray(names)) throw new TileFormatError(`${what}: header has no names list`);
  const n = count(header, "n_events", what);
  const m = count(header, "n_summaries", what);
  const k = count(header, "n_counters", what);
  const f = count(header, "n_flows", what);
  const c = new Cursor(buffer, 8 + headerLength, what);
  const events: TileEvents = {
    n,
    id: c.take(Uint32Array, n, "events.id"),
    track: c.take(Uint32Array, n, "events.track"),
    name: c.take(Uint32Array, n, "events.name"),
    start: c.take(Float32Array, n, "events.start"),
    dur: c.take(Float32Array, n, "events.dur"),
    depth: c.take(Uint16Array, n, "events.depth"),
  };
  const summaries: TileSummaries = {
    n: m,
    track: c.take(Uint32Array, m, "summaries.track"),
    depth: c.take(Uint16Array, m, "summaries.depth"),
    start: c.take(Float32Array, m, "summaries.start"),
    width: c.take(Float32Array, m, "summaries.width"),
    count: c.take(Uint32Array, m, "summaries.count"),
    busy: c.take(Float32Array, m, "summaries.busy"),
  };
  const counters: TileCounters = {
    n: k,
    track: c.take(Uint32Array, k, "counters.track"),
    start: c.take(Float32Array, k, "counters.start"),
    width: c.take(Float32Array, k, "counters.width"),
    min: c.take(Float64Array, k, "counters.min"),
    max: c.take(Float64Array, k, "counters.max"),
    last: c.take(Float64Array, k, "counters.last"),
  };
  const flows: TileFlows = {
    n: f,
    srcId: c.take(Uint32Array, f, "flows.src_id"),
    srcTrack: c.take(Uint32Array, f, "flows.src_track"),
    srcTime: c.take(Float32Array, f, "flows.src_time"),
    srcDepth: c.take(Uint16Array, f, "flows.src_depth"),
    dstId: c.take(Uint32Array, f, "flows.dst_id"),
    dstTrack: c.take(Uint32Array, f, "flows.dst_track"),
    dstTime: c.take(Float32Array, f, "flows.dst_time"),
    dstDepth: c.take(Uint16Array, f, "flows.dst_depth"),
  };
  for (let i = 0; i < n; i++) {
    if (events.name[i] >= names.length) {
      throw new TileFormatError(`${what}: event ${i} names string ${events.name[i]} of ${names.length}`);
    }
  }
  return {
    level: Number(header.level),
    index: Number(header.index),
    startNs: Number(header.start_ns),
    widthNs: Number(header.width_ns),
    names: names.map(String),
    events,
    summaries,
    counters,
    flows,
    byteLength: buffer.byteLength,
  };
}
