/** XProf's allocation timeline of an XLA program (docs/MEMORY.md, "Allocation timeline"): each buffer
 * of the heap simulation a box, x its span in heap-simulator events (program order), y its place in
 * its temporary allocation (the allocations stacked as bands), its height its size. Drawn on the
 * heap chart's x axis and y-axis width, so a box lines up with the heap it makes; the peak's event is
 * a dashed red line. Hovering a box names it (a tip beside the pointer) and lights its row in the
 * live table; a click on a box, or on its row, selects it (the others dimmed), named under the chart.
 * The geometry and texts are plain functions of the answer (tested without a canvas). */

import type { ChartConfiguration, Plugin } from "chart.js";
import { h } from "../../dom.ts";
import { chartInk, gridColor } from "../../shared/chart_theme.ts";
import { drawChart, type DrawnChart } from "../../shared/charts.ts";
import { formatBytes, formatCount } from "../../shared/units.ts";
import type { ProgramMemory, ProgramTimeline } from "./api.ts";
import { byteStep, fixedAxisWidth, heapEventsAxis, PEAK_COLOR, type Point, PROGRAM_CHART_LAYOUT } from "./chart.ts";

/** Mid-tones that white labels read on, in both themes; box i takes colour i mod their number. */
export const BOX_COLORS = ["#1a73e8", "#188038", "#e37400", "#9334e6", "#d01884", "#12939a", "#b06000", "#5f6368", "#c5221f", "#185abc"];
/** Opacity of the boxes other than the one highlighted. */
const DIMMED = 0.3;

export function boxColor(box: number): string {
  return BOX_COLORS[box % BOX_COLORS.length];
}

/** The bytes at the box's bottom on the stacked y axis: its band's base + its offset. */
export function boxBottom(timeline: ProgramTimeline, box: number): number {
  return timeline.bands[timeline.band[box]].base_bytes + timeline.offset_bytes[box];
}

/** The box under (x events, y bytes): the smallest one containing the point (XProf's rule where
 * boxes overlap), or -1. */
export function boxAt(timeline: ProgramTimeline, x: number, y: number): number {
  let found = -1;
  let smallest = Infinity;
  timeline.buffer_id.forEach((_, i) => {
    const bottom = boxBottom(timeline, i);
    if (x < timeline.start[i] || x > timeline.end[i] || y < bottom || y > bottom + timeline.size_bytes[i]) return;
    const area = Math.max(1, timeline.end[i] - timeline.start[i]) * timeline.size_bytes[i];
    if (area < smallest) {
      smallest = area;
      found = i;
    }
  });
  return found;
}

/** What the tip and the selection line say of a box. */
export function boxLines(timeline: ProgramTimeline, box: number): string[] {
  const size = timeline.size_bytes[box];
  const unpadded = timeline.unpadded_bytes[box];
  const band = timeline.bands[timeline.band[box]];
  const lines = [
    timeline.instruction[box],
    `${timeline.shape[box] || "shape not in the module"}${timeline.dtype[box] ? ` · ${timeline.dtype[box]}` : ""}`,
    `${formatBytes(size)}${unpadded !== size ? ` (${formatBytes(unpadded)} without padding)` : ""} · temporary, allocation ${band.allocation} at offset ${formatBytes(timeline.offset_bytes[box])}`,
    `heap events ${formatCount(timeline.start[box])}–${formatCount(timeline.end[box])}${timeline.at_peak[box] ? " · live at the peak" : ""}`,
  ];
  if (timeline.op_name[box]) lines.push(timeline.op_name[box]);
  return lines;
}

/** "4 buffers of 1 temporary allocation over 8 heap events", and what the bound left out. */
export function timelineText(timeline: ProgramTimeline): string {
  const shown = timeline.buffer_id.length;
  const bands = timeline.bands.length;
  const what = `${formatCount(timeline.boxes)} buffers of ${formatCount(bands)} temporary ${bands === 1 ? "allocation" : "allocations"} over ${formatCount(timeline.events)} heap events`;
  if (shown === timeline.boxes) return what;
  return `${what}: ${formatCount(shown)} drawn (the live table's and the largest), ${formatCount(timeline.boxes - shown)} left out (${formatBytes(timeline.left_out_bytes)})`;
}

/** Which box is lit: the one under the pointer, else the one selected (-1: none). */
export interface BoxState {
  hovered: number;
  selected: number;
}

export function litBox(state: BoxState): number {
  return state.hovered >= 0 ? state.hovered : state.selected;
}

/** Draws the bands, the boxes (the lit one outlined, the others dimmed while one is lit) with their
 * instruction where it fits, and the peak's event. */
function boxPainter(program: ProgramMemory, timeline: ProgramTimeline, state: BoxState): Plugin<"scatter"> {
  return {
    id: "memTimelineBoxes",
    beforeDatasetsDraw(chart) {
      const { ctx, chartArea, scales } = chart;
      const ink = chartInk();
      const px = (x: number) => scales.x.getPixelForValue(x);
      const py = (y: number) => scales.y.getPixelForValue(y);
      ctx.save();
      ctx.beginPath();
      ctx.rect(chartArea.left, chartArea.top, chartArea.right - chartArea.left, chartArea.bottom - chartArea.top);
      ctx.clip();
      ctx.fillStyle = ink.band;
      for (const band of timeline.bands) {
        const top = py(band.base_bytes + band.size_bytes);
        ctx.fillRect(px(0), top, px(timeline.events) - px(0), py(band.base_bytes) - top);
      }
      const lit = litBox(state);
      ctx.font = "10px system-ui, sans-serif";
      ctx.textBaseline = "middle";
      timeline.buffer_id.forEach((_, i) => {
        const left = px(timeline.start[i]);
        const top = py(boxBottom(timeline, i) + timeline.size_bytes[i]);
        const width = Math.max(1, px(timeline.end[i]) - left);
        const height = Math.max(1, py(boxBottom(timeline, i)) - top);
        ctx.globalAlpha = lit >= 0 && i !== lit ? DIMMED : 1;
        ctx.fillStyle = boxColor(i);
        ctx.fillRect(left, top, width, height);
        if (width > 40 && height > 12) {
          ctx.fillStyle = "#ffffff";
          const label = timeline.instruction[i];
          const room = Math.floor((width - 6) / 5.5);
          ctx.fillText(label.length > room ? `${label.slice(0, Math.max(1, room - 1))}…` : label, left + 3, top + height / 2, width - 6);
        }
      });
      ctx.globalAlpha = 1;
      if (lit >= 0) {
        const left = px(timeline.start[lit]);
        const top = py(boxBottom(timeline, lit) + timeline.size_bytes[lit]);
        ctx.strokeStyle = ink.ink;
        ctx.lineWidth = 2;
        ctx.strokeRect(left, top, Math.max(1, px(timeline.end[lit]) - left), Math.max(1, py(boxBottom(timeline, lit)) - top));
      }
      if (program.peak_position > 0) {
        const x = px(program.peak_position - 0.5); // the middle of the peak event's column
        ctx.strokeStyle = PEAK_COLOR;
        ctx.lineWidth = 1;
        ctx.setLineDash([4, 3]);
        ctx.beginPath();
        ctx.moveTo(x, chartArea.top);
        ctx.lineTo(x, chartArea.bottom);
        ctx.stroke();
      }
      ctx.restore();
      // where the plot lies on the canvas (CSS pixels), for the DOM's users (the browser tests)
      chart.canvas.dataset.area = [chartArea.left, chartArea.top, chartArea.right, chartArea.bottom].map(Math.round).join(",");
    },
  };
}

/** The chart's configuration: no dataset, the boxes painted on its scales. `pointed(box, x, y)` is
 * told the box under the pointer (x, y: canvas pixels), `clicked(box)` a click's. */
export function timelineChartConfig(
  program: ProgramMemory,
  timeline: ProgramTimeline,
  state: BoxState,
  pointed: (box: number, x: number, y: number) => void,
  clicked: (box: number) => void,
): ChartConfiguration<"scatter", Point[]> {
  const under = (event: { x: number | null; y: number | null }, chart: { scales: Record<string, { getValueForPixel(p: number): number | undefined }> }) =>
    event.x === null || event.y === null ? -1 : boxAt(timeline, chart.scales.x.getValueForPixel(event.x) ?? -1, chart.scales.y.getValueForPixel(event.y) ?? -1);
  return {
    type: "scatter",
    data: { datasets: [{ label: "boxes", data: [] }] },
    options: {
      responsive: true,
      maintainAspectRatio: false,
      layout: PROGRAM_CHART_LAYOUT,
      events: ["mousemove", "mouseout", "click"],
      onHover: (event, _elements, chart) => {
        const box = under(event, chart);
        const target = event.native?.target as HTMLElement | undefined;
        if (target) target.style.cursor = box >= 0 ? "pointer" : "default";
        pointed(box, event.x ?? 0, event.y ?? 0);
      },
      onClick: (event, _elements, chart) => clicked(under(event, chart)),
      scales: {
        x: heapEventsAxis(timeline.events),
        y: {
          type: "linear",
          min: 0,
          max: Math.max(1, timeline.height_bytes),
          grid: { color: gridColor },
          ticks: { stepSize: byteStep(timeline.height_bytes), callback: (v) => formatBytes(Number(v)) },
          title: { display: true, text: "offset in the temporary allocations" },
          afterFit: fixedAxisWidth,
        },
      },
      plugins: { tooltip: { enabled: false } },
    },
    plugins: [boxPainter(program, timeline, state)],
  };
}

export const NO_TIMELINE = "No allocation timeline: no temporary allocation of this memory space owns a heap-simulator trace (XProf draws none either).";

export const TIMELINE_HINT = "Hover a box to name its buffer; click a box, or a temporary's row in the table below, to select it.";

export interface TimelineChart {
  el: HTMLElement;
  chart: DrawnChart<"scatter", Point[], unknown>;
  /** Selects box `box` as a click on it does: the box selected already is cleared. */
  select(box: number): void;
}

/** The timeline in its frame with its tip and selection line; `lit(box)` is told each change of the
 * lit box (-1: none), for the live table to light the box's row. */
export function timelineChart(program: ProgramMemory, timeline: ProgramTimeline, lit: (box: number) => void): TimelineChart {
  const state: BoxState = { hovered: -1, selected: -1 };
  const tip = h("div", { class: "mem-box-tip", "data-testid": "mem-timeline-tip", hidden: true });
  const detail = h("p", { class: "mem-hint mem-box-detail", "data-testid": "mem-timeline-detail" }, TIMELINE_HINT);
  const fallback = h("ul", {}, h("li", {}, timelineText(timeline)));
  const canvas = h("canvas", { role: "img", "aria-label": `Allocation timeline of ${program.name}`, "data-testid": "mem-timeline-canvas" }, fallback);
  const area = h("div", { class: "mem-chart-area mem-timeline-area", "data-testid": "mem-timeline" }, canvas, tip);
  let chart: DrawnChart<"scatter", Point[], unknown> | null = null;
  const redraw = () => {
    const box = litBox(state);
    area.dataset.lit = box >= 0 ? String(timeline.buffer_id[box]) : "";
    lit(box);
    void chart?.ready.then((c) => c?.draw());
  };
  const describe = () => {
    const box = state.selected;
    detail.textContent = box >= 0 ? `Selected: ${boxLines(timeline, box).join(" · ")}` : TIMELINE_HINT;
    area.dataset.selected = box >= 0 ? String(timeline.buffer_id[box]) : "";
  };
  const pointed = (box: number, x: number, y: number) => {
    if (box >= 0) {
      tip.replaceChildren(...boxLines(timeline, box).map((line, i) => h(i ? "div" : "strong", {}, line)));
      tip.hidden = false;
      const right = x > canvas.clientWidth / 2;
      tip.style.left = right ? "" : `${x + 14}px`;
      tip.style.right = right ? `${canvas.clientWidth - x + 14}px` : "";
      tip.style.top = `${Math.max(0, y - 10)}px`;
    } else tip.hidden = true;
    if (box !== state.hovered) {
      state.hovered = box;
      redraw();
    }
  };
  const select = (box: number) => {
    state.selected = box;
    describe();
    redraw();
  };
  const clicked = (box: number) => {
    if (box >= 0) select(box === state.selected ? -1 : box);
  };
  chart = drawChart(canvas, timelineChartConfig(program, timeline, state, pointed, clicked));
  canvas.addEventListener("mouseleave", () => pointed(-1, 0, 0));
  const el = h("div", { class: "mem-timeline-block" }, area, detail);
  return { el, chart, select: clicked };
}
