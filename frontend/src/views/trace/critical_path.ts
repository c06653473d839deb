/** The "Critical path" toggle's overlay: the critical path of the step in view (`trace/critical_path`,
 * docs/OVERVIEW.md "Critical path"), its events outlined and its dependencies between different
 * events drawn as arrows, and a one-line breakdown of the step's time by cause. In a merged session
 * each rank's path may cross into another rank's section at a collective (analysis/rank_path.py):
 * the arrow from the last arriver to the waiting rank is drawn across the sections, and an event or
 * arrow several ranks' paths share is drawn once.
 *
 * The path is asked for the step holding the middle of the view (`at=`), and asked again once the
 * middle leaves that step's window; one request at a time, the latest view wins. */

import type { CriticalPathEdge, CriticalPathHost, TraceCriticalPath } from "../../api/answers.gen.ts";
import { formatDuration, formatPercent } from "../../shared/units.ts";
import { type Layout, ROW_HEIGHT } from "./layout.ts";
import type { Projection, Range } from "./viewport.ts";

const COLOR = "rgba(216, 27, 96, 0.95)";
const FILL = "rgba(216, 27, 96, 0.18)";
/** Causes in the order the readout names them. */
const CAUSES = ["cpu", "launch", "compute", "communication", "kernel_gap", "rank_wait", "data_loading", "idle"] as const;
const CAUSE_LABELS: Record<string, string> = {
  kernel_gap: "kernel gaps",
  rank_wait: "waiting for another rank",
  data_loading: "data loading",
};
/** Event ids of a merged timeline: host index × 2^32 + the event's index in its host. */
const HOST_ID_BASE = 2 ** 32;

export interface CriticalPathDeps {
  load(atNs: number, signal: AbortSignal): Promise<TraceCriticalPath>;
  redraw(): void;
  /** Shows the readout (null: none) or the reason it failed. */
  show(text: string | null): void;
}

/** The edges worth an arrow: those between two different events (an event's own span is its box). */
export function arrowsOf(host: CriticalPathHost): CriticalPathEdge[] {
  return host.edges.filter((e) => e.src !== e.dst && (e.src_track !== e.dst_track || e.kind !== "work"));
}

/** "step 7 · critical path 12.3 ms of 15 ms: cpu 60% · launch 2% · compute 38%" (causes with time only). */
export function readout(host: CriticalPathHost): string {
  const window = host.end_ns - host.start_ns;
  const parts = CAUSES.filter((c) => (host.by_cause_ns[c] ?? 0) > 0).map(
    (c) => `${CAUSE_LABELS[c] ?? c} ${formatPercent(host.by_cause_ns[c] / Math.max(window, 1e-9), 2)}`,
  );
  const step = host.step === null ? "whole trace" : `step ${host.step}`;
  return `${step} · critical path ${formatDuration(host.total_ns)} of ${formatDuration(window)}: ${parts.join(" · ")}`;
}

/** The readout of every host's path: one host as `readout`, several each after its name. */
export function readouts(hosts: readonly CriticalPathHost[]): string {
  if (hosts.length === 1) return readout(hosts[0]);
  return hosts.map((h) => `${h.host}: ${readout(h)}`).join(" | ");
}

/** The host index of a global event id. */
export function hostOf(id: number): number {
  return Math.floor(id / HOST_ID_BASE);
}

/** The events and arrows of all hosts' paths, each once (ranks' paths share the straggler's chain),
 * and how many arrows join two hosts' sections. */
export function shapesOf(hosts: readonly CriticalPathHost[]): { events: CriticalPathHost["events"]; arrows: CriticalPathEdge[]; crossing: number } {
  const events = new Map<number, CriticalPathHost["events"][number]>();
  const arrows = new Map<string, CriticalPathEdge>();
  for (const host of hosts) {
    for (const ev of host.events) events.set(ev.id, ev);
    for (const e of arrowsOf(host)) arrows.set(`${e.src}:${e.src_end}:${e.dst}:${e.dst_end}`, e);
  }
  const all = [...arrows.values()];
  return { events: [...events.values()], arrows: all, crossing: all.filter((e) => hostOf(e.src) !== hostOf(e.dst)).length };
}

export class CriticalPathOverlay {
  private hosts: CriticalPathHost[] = [];
  private enabled = false;
  private loading: AbortController | null = null;
  private askedAt: number | null = null;

  constructor(private readonly deps: CriticalPathDeps) {}

  get on(): boolean {
    return this.enabled;
  }

  /** Turns the overlay on (asking for the step in view) or off. */
  setEnabled(on: boolean, view: Range): void {
    this.enabled = on;
    if (!on) {
      this.loading?.abort();
      this.loading = null;
      this.hosts = [];
      this.askedAt = null;
      this.deps.show(null);
      this.deps.redraw();
      return;
    }
    this.viewChanged(view);
  }

  /** Asks for the path again when the middle of the view left the step shown. */
  viewChanged(view: Range): void {
    if (!this.enabled) return;
    const middle = (view.start + view.end) / 2;
    const shown = this.hosts[0];
    if (shown && middle >= shown.start_ns && middle <= shown.end_ns) return;
    if (this.loading && this.askedAt !== null) return;
    this.fetch(middle);
  }

  private fetch(atNs: number): void {
    const controller = new AbortController();
    this.loading = controller;
    this.askedAt = atNs;
    this.deps.show("critical path: computing…");
    this.deps.load(atNs, controller.signal).then(
      (answer) => {
        if (this.loading !== controller) return;
        this.loading = null;
        this.hosts = answer.hosts;
        this.deps.show(answer.hosts.length ? readouts(answer.hosts) : "critical path: no host");
        this.deps.redraw();
      },
      (error: unknown) => {
        if (this.loading !== controller || controller.signal.aborted) return;
        this.loading = null;
        this.deps.show(`critical path: ${(error as Error).message}`);
      },
    );
  }

  /** Outlines the path's events and draws its arrows over the frame; returns what it drew. The
   * canvas' `data-critical-crossing` says how many drawn arrows join two hosts' sections. */
  draw(ctx: CanvasRenderingContext2D, proj: Projection, layout: Layout, scrollY: number, left: number, width: number): { events: number; arrows: number } {
    const drawn = { events: 0, arrows: 0 };
    let crossing = 0;
    const data = (ctx.canvas as HTMLCanvasElement | undefined)?.dataset;
    if (data) data.criticalCrossing = "0";
    if (!this.enabled) return drawn;
    const shapes = shapesOf(this.hosts);
    ctx.save();
    ctx.beginPath();
    ctx.rect(left, 0, width - left, ctx.canvas.height);
    ctx.clip();
    ctx.lineWidth = 2;
    ctx.strokeStyle = COLOR;
    ctx.fillStyle = FILL;
    for (const ev of shapes.events) {
      const y = layout.yOf(ev.track, ev.depth);
      const x0 = proj.x(ev.start_ns);
      const x1 = Math.max(proj.x(ev.start_ns + ev.dur_ns), x0 + 2);
      if (y === null || x1 < left || x0 > width) continue;
      const top = y - scrollY - ROW_HEIGHT / 2 + 1;
      ctx.fillRect(x0, top, x1 - x0, ROW_HEIGHT - 2);
      ctx.strokeRect(x0, top, x1 - x0, ROW_HEIGHT - 2);
      drawn.events++;
    }
    ctx.fillStyle = COLOR;
    ctx.lineWidth = 1.5;
    for (const e of shapes.arrows) {
      const ys = layout.yOf(e.src_track, e.src_depth);
      const yd = layout.yOf(e.dst_track, e.dst_depth);
      const xs = proj.x(e.src_ns);
      const xd = proj.x(e.dst_ns);
      if (ys === null || yd === null || (xs < left && xd < left) || (xs > width && xd > width)) continue;
      arrow(ctx, xs, ys - scrollY, xd, yd - scrollY);
      drawn.arrows++;
      if (hostOf(e.src) !== hostOf(e.dst)) crossing++;
    }
    ctx.restore();
    if (data) data.criticalCrossing = String(crossing);
    return drawn;
  }
}

function arrow(ctx: CanvasRenderingContext2D, x0: number, y0: number, x1: number, y1: number): void {
  ctx.beginPath();
  ctx.moveTo(x0, y0);
  ctx.lineTo(x1, y1);
  ctx.stroke();
  const angle = Math.atan2(y1 - y0, x1 - x0);
  ctx.beginPath();
  ctx.moveTo(x1, y1);
  ctx.lineTo(x1 - 7 * Math.cos(angle - 0.4), y1 - 7 * Math.sin(angle - 0.4));
  ctx.lineTo(x1 - 7 * Math.cos(angle + 0.4), y1 - 7 * Math.sin(angle + 0.4));
  ctx.closePath();
  ctx.fill();
}
