/** A synthetic trace and a reference tile builder/encoder that follow docs/ARCHITECTURE.md, so the
 * viewer's decoding, level choice and hit testing can be tested (and developed in a browser) without
 * the Python engine. Edge cases only: real profiles are exercised by the end-to-end tests. */

import type { EventDetails, MetaSection, MetaTrack, SummaryResponse, TraceMeta } from "../../src/api/types.ts";

export interface MockEvent {
  id: number;
  track: number;
  name: string;
  category: string;
  start: number;
  dur: number;
  depth: number;
  args: Record<string, unknown>;
}

export interface MockCounter {
  track: number;
  time: number;
  value: number;
}

export interface MockTrace {
  meta: TraceMeta;
  events: MockEvent[];
  flows: { src: number; dst: number; name: string }[];
  counters: MockCounter[];
}

/** Deterministic pseudo-random numbers (mulberry32) so fixtures are identical on every run. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const BASE_NS = 1.024;
const TILE_PX = 1024;

export function maxLevelFor(spanNs: number): number {
  let z = 0;
  while (BASE_NS * 2 ** z < spanNs) z++;
  return z;
}

/** A host-CPU + GPU trace: `steps` training steps, each with nested host ops launching kernels. */
export function makeTrace(steps = 20, kernelsPerStep = 30, seed = 1): MockTrace {
  const rand = rng(seed);
  const sections: MetaSection[] = [
    { id: 0, name: "Host CPU", kind: "cpu", sort_index: 0, host: 0 },
    { id: 1, name: "GPU 0", kind: "gpu", sort_index: 1, host: 0 },
  ];
  const tracks: MetaTrack[] = [
    { id: 0, section: 0, name: "thread 100 (python)", kind: "thread", sort_index: 0, max_depth: 2, host: 0 },
    { id: 1, section: 0, name: "thread 101 (dataloader)", kind: "thread", sort_index: 1, max_depth: 0, host: 0 },
    { id: 2, section: 1, name: "stream 7", kind: "stream", sort_index: 0, max_depth: 0, host: 0 },
    { id: 3, section: 1, name: "GPU memory (MB)", kind: "counter", sort_index: 1, max_depth: 0, host: 0 },
  ];
  const events: MockEvent[] = [];
  const flows: MockTrace["flows"] = [];
  const counters: MockCounter[] = [];
  const add = (e: Omit<MockEvent, "id">): number => {
    events.push({ ...e, id: events.length });
    return events.length - 1;
  };
  let t = 1000;
  let gpuFree = 0;
  for (let s = 0; s < steps; s++) {
    const stepStart = t;
    const stepId = add({
      track: 0,
      name: `ProfilerStep#${s}`,
      category: "cpu_op",
      start: t,
      dur: 0,
      depth: 0,
      args: { step: s },
    });
    t += 500;
    for (let k = 0; k < kernelsPerStep; k++) {
      const opDur = 2000 + Math.floor(rand() * 8000);
      add({ track: 0, name: k % 3 ? "aten::conv2d" : "aten::linear", category: "cpu_op", start: t, dur: opDur, depth: 1, args: {} });
      const launchStart = t + 200;
      const launch = add({
        track: 0,
        name: "cudaLaunchKernel",
        category: "cuda_runtime",
        start: launchStart,
        dur: 600,
        depth: 2,
        args: { correlation: events.length },
      });
      const kStart = Math.max(gpuFree, launchStart + 3000) + Math.floor(rand() * 500);
      const kDur = 500 + Math.floor(rand() * 20000);
      const kernel = add({
        track: 2,
        name: k % 2 ? "volta_sgemm_128x64_nn" : "implicit_convolve_sgemm",
        category: "kernel",
        start: kStart,
        dur: kDur,
        depth: 0,
        args: { grid: [128, 1, 1], block: [256, 1, 1], "bytes accessed": 1 << 20, flops: 2 ** 30 },
      });
      gpuFree = kStart + kDur;
      flows.push({ src: launch, dst: kernel, name: "ac2g" });
      t += opDur + 100;
    }
    events[stepId].dur = t - stepStart;
    add({ track: 1, name: "DataLoader.__next__", category: "python", start: stepStart + 100, dur: 1500, depth: 0, args: {} });
    counters.push({ track: 3, time: stepStart, value: 1000 + s * 10 }, { track: 3, time: t - 1, value: 1500 + s * 10 });
    t += 2000;
  }
  const end = Math.max(t, gpuFree);
  return {
    events,
    flows,
    counters,
    meta: {
      span_ns: [0, end],
      hosts: [{ name: "worker0", source: "mock", format: "chrome_trace", offset_ns: 0, clock_origin_ns: null, num_events: events.length, num_flows: flows.length, num_counter_samples: 0, warnings: [], skipped: {} }],
      sections,
      tracks,
      num_events: events.length,
      num_flows: flows.length,
      warnings: [],
      tile: { base_ns: BASE_NS, tile_px: TILE_PX, max_level: maxLevelFor(end) },
    },
  };
}

interface BuiltTile {
  header: Record<string, unknown>;
  events: MockEvent[];
  summaries: { track: number; depth: number; start: number; width: number; count: number; busy: number }[];
  counters: { track: number; start: number; width: number; min: number; max: number; last: number }[];
  flows: { src: MockEvent; dst: MockEvent }[];
}

/** The content of tile (level, index) by the documented rule: events at least one tile pixel wide
 * (and instants) in full, narrower ones folded into per-pixel summaries, counters reduced per pixel. */
export function buildTile(trace: MockTrace, level: number, index: number): BuiltTile {
  const width = BASE_NS * 2 ** level;
  const px = width / TILE_PX;
  const t0 = index * width;
  const t1 = t0 + width;
  const names: string[] = [];
  const nameIds = new Map<string, number>();
  const shown: MockEvent[] = [];
  const bins = new Map<string, { track: number; depth: number; start: number; width: number; count: number; busy: number }>();
  for (const e of trace.events) {
    const end = e.start + e.dur;
    if (end < t0 || e.start >= t1 || (e.dur > 0 && end === t0)) continue;
    if (e.dur === 0 || e.dur >= px) {
      shown.push(e);
      if (!nameIds.has(e.name)) {
        nameIds.set(e.name, names.length);
        names.push(e.name);
      }
    } else {
      if (e.start < t0) continue;
      const p = Math.floor((e.start - t0) / px);
      const key = `${e.track}/${e.depth}/${p}`;
      const bin = bins.get(key) ?? { track: e.track, depth: e.depth, start: p * px, width: px, count: 0, busy: 0 };
      bin.count += 1;
      bin.busy += e.dur;
      bins.set(key, bin);
    }
  }
  const cbins = new Map<string, { track: number; start: number; width: number; min: number; max: number; last: number }>();
  for (const c of trace.counters) {
    if (c.time < t0 || c.time >= t1) continue;
    const p = Math.floor((c.time - t0) / px);
    const key = `${c.track}/${p}`;
    const bin = cbins.get(key);
    if (!bin) cbins.set(key, { track: c.track, start: p * px, width: px, min: c.value, max: c.value, last: c.value });
    else {
      bin.min = Math.min(bin.min, c.value);
      bin.max = Math.max(bin.max, c.value);
      bin.last = c.value;
    }
  }
  const ids = new Set(shown.map((e) => e.id));
  const flows = trace.flows
    .filter((f) => ids.has(f.src) || ids.has(f.dst))
    .map((f) => ({ src: trace.events[f.src], dst: trace.events[f.dst] }));
  const summaries = [...bins.values()];
  const counters = [...cbins.values()];
  return {
    header: {
      level,
      index,
      start_ns: t0,
      width_ns: width,
      names,
      n_events: shown.length,
      n_summaries: summaries.length,
      n_counters: counters.length,
      n_flows: flows.length,
    },
    events: shown.map((e) => ({ ...e, start: e.start - t0, name: String(nameIds.get(e.name)) })),
    summaries,
    counters,
    flows,
  };
}

/** Encodes a built tile into the PST1 binary layout. */
export function encodeTile(tile: BuiltTile): ArrayBuffer {
  let json = JSON.stringify(tile.header);
  while ((8 + new TextEncoder().encode(json).length) % 8) json += " ";
  const head = new TextEncoder().encode(json);
  const parts: [string, number[]][] = [];
  const ev = tile.events;
  parts.push(["u32", ev.map((e) => e.id)], ["u32", ev.map((e) => e.track)], ["u32", ev.map((e) => Number(e.name))]);
  parts.push(["f32", ev.map((e) => e.start)], ["f32", ev.map((e) => e.dur)], ["u16", ev.map((e) => e.depth)]);
  const sm = tile.summaries;
  parts.push(["u32", sm.map((s) => s.track)], ["u16", sm.map((s) => s.depth)], ["f32", sm.map((s) => s.start)]);
  parts.push(["f32", sm.map((s) => s.width)], ["u32", sm.map((s) => s.count)], ["f32", sm.map((s) => s.busy)]);
  const ct = tile.counters;
  parts.push(["u32", ct.map((c) => c.track)], ["f32", ct.map((c) => c.start)], ["f32", ct.map((c) => c.width)]);
  parts.push(["f64", ct.map((c) => c.min)], ["f64", ct.map((c) => c.max)], ["f64", ct.map((c) => c.last)]);
  const t0 = Number(tile.header.start_ns);
  const fl = tile.flows;
  parts.push(["u32", fl.map((f) => f.src.id)], ["u32", fl.map((f) => f.src.track)]);
  parts.push(["f32", fl.map((f) => f.src.start - t0)], ["u16", fl.map((f) => f.src.depth)]);
  parts.push(["u32", fl.map((f) => f.dst.id)], ["u32", fl.map((f) => f.dst.track)]);
  parts.push(["f32", fl.map((f) => f.dst.start - t0)], ["u16", fl.map((f) => f.dst.depth)]);
  const size = { u16: 2, u32: 4, f32: 4, f64: 8 } as const;
  let total = 8 + head.length;
  for (const [type, values] of parts) total = ((total + 7) & ~7) + values.length * size[type as keyof typeof size];
  const buf = new ArrayBuffer((total + 7) & ~7);
  const dv = new DataView(buf);
  dv.setUint32(0, 0x31545350, true);
  dv.setUint32(4, head.length, true);
  new Uint8Array(buf, 8, head.length).set(head);
  let off = 8 + head.length;
  for (const [type, values] of parts) {
    off = (off + 7) & ~7;
    for (const v of values) {
      if (type === "u16") dv.setUint16(off, v, true);
      else if (type === "u32") dv.setUint32(off, v, true);
      else if (type === "f32") dv.setFloat32(off, v, true);
      else dv.setFloat64(off, v, true);
      off += size[type as keyof typeof size];
    }
  }
  return buf;
}

/** Answer of trace/event for one mock event. */
export function eventDetails(trace: MockTrace, id: number): EventDetails {
  const e = trace.events[id];
  const children = trace.events.filter(
    (c) => c.track === e.track && c.depth === e.depth + 1 && c.start >= e.start && c.start + c.dur <= e.start + e.dur,
  );
  const link = (other: MockEvent, flow: string) => ({ id: other.id, name: other.name, flow, start_ns: other.start, dur_ns: other.dur, track: other.track });
  return {
    id: e.id,
    name: e.name,
    category: e.category,
    track: e.track,
    section: trace.meta.tracks[e.track].section,
    host: 0,
    start_ns: e.start,
    dur_ns: e.dur,
    self_ns: e.dur - children.reduce((s, c) => s + c.dur, 0),
    depth: e.depth,
    args: e.args,
    flows_out: trace.flows.filter((f) => f.src === id).map((f) => link(trace.events[f.dst], f.name)),
    flows_in: trace.flows.filter((f) => f.dst === id).map((f) => link(trace.events[f.src], f.name)),
  };
}

/** Answer of trace/summary for a list of mock events. */
export function summarize(trace: MockTrace, events: MockEvent[]): SummaryResponse {
  const rows = new Map<string, { name: string; count: number; total_ns: number; self_ns: number; min_ns: number; max_ns: number }>();
  for (const e of events) {
    const self = eventDetails(trace, e.id).self_ns;
    const r = rows.get(e.name) ?? { name: e.name, count: 0, total_ns: 0, self_ns: 0, min_ns: Infinity, max_ns: -Infinity };
    r.count++;
    r.total_ns += e.dur;
    r.self_ns += self;
    r.min_ns = Math.min(r.min_ns, e.dur);
    r.max_ns = Math.max(r.max_ns, e.dur);
    rows.set(e.name, r);
  }
  return {
    num_events: events.length,
    rows: [...rows.values()]
      .map((r) => ({ ...r, avg_ns: r.total_ns / r.count }))
      .sort((a, b) => b.total_ns - a.total_ns),
    num_names: rows.size,
    truncated: false,
  };
}

/** Many busy tracks of back-to-back events in two nesting levels: enough boxes on screen at once to
 * measure drawing speed (100 k+), which the CPU/GPU fixture above cannot reach. */
export function makeDenseTrace(nTracks = 64, perTrack = 4000, seed = 7): MockTrace {
  const rand = rng(seed);
  const sections: MetaSection[] = [{ id: 0, name: "Dense", kind: "cpu", sort_index: 0, host: 0 }];
  const tracks: MetaTrack[] = [];
  const events: MockEvent[] = [];
  let end = 0;
  for (let tr = 0; tr < nTracks; tr++) {
    tracks.push({ id: tr, section: 0, name: `thread ${tr}`, kind: "thread", sort_index: tr, max_depth: 1, host: 0 });
    let t = 0;
    for (let k = 0; k < perTrack / 2; k++) {
      const dur = 200 + Math.floor(rand() * 800);
      const name = `op_${Math.floor(rand() * 30)}`;
      events.push({ id: events.length, track: tr, name, category: "", start: t, dur, depth: 0, args: {} });
      events.push({ id: events.length, track: tr, name: `${name}_inner`, category: "", start: t + 10, dur: dur / 2, depth: 1, args: {} });
      t += dur + 20;
    }
    end = Math.max(end, t);
  }
  return {
    events,
    flows: [],
    counters: [],
    meta: {
      span_ns: [0, end],
      hosts: [{ name: "dense", source: "mock", format: "chrome_trace", offset_ns: 0, clock_origin_ns: null, num_events: events.length, num_flows: 0, num_counter_samples: 0, warnings: [], skipped: {} }],
      sections,
      tracks,
      num_events: events.length,
      num_flows: 0,
      warnings: [],
      tile: { base_ns: BASE_NS, tile_px: TILE_PX, max_level: maxLevelFor(end) },
    },
  };
}
