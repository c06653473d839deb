/** The roofline chart (geometry.ts says what it holds), drawn with the project's charting library:
 * log-log, x the operational intensity of one memory level (a picker when several have traffic), y
 * the FLOP rate. One flat compute roof per precision the ops run at (bf16, fp32, …) whose peak is known,
 * each op coloured as its roof (legend). Hovering a point shows its figures; clicking one selects it: its table row is
 * highlighted and a card stays with a link to its events in the Trace tab. The canvas holds every
 * point as text (fallback content) with its position once drawn, for screen readers and tests. */

import type { Chart, ChartConfiguration, ChartDataset, Plugin, ScriptableContext, TooltipModel } from "chart.js";
import { clear, h } from "../../dom.ts";
import { type DrawnChart, drawChart } from "../../shared/charts.ts";
import { formatByteRate, formatFlopRate, formatPercent } from "../../shared/units.ts";
import type { RooflineOpRow } from "./api.ts";
import { type Column, ESTIMATED, type FigureRow, figureColumns, formatIntensity, levelLabel, type RooflineContext } from "./cells.ts";
import type { PlotPoint, RooflineModel } from "./geometry.ts";
import { chartInk } from "../../shared/chart_theme.ts";

const ROOF_COLORS = ["#1a73e8", "#e37400", "#188038", "#9334e6", "#d01884", "#12b5cb", "#5f6368"];
/** The compute roof in the theme's text colour: on the canvas from chartInk(), in the legend the CSS variable. */
const COMPUTE_COLOR = (): string => chartInk().ink;
const COMPUTE_SWATCH = "var(--ps-chart-ink)";
const OP_COLOR = "#1a73e8";
/** Op colours by compute roof, in the order of the answer's roofs (most FLOPs first). */
const PRECISION_COLORS = ["#1a73e8", "#b06000", "#137333", "#a142f4", "#e52592", "#007b83"];
const NO_PEAK_COLOR = "#80868b";
const PROGRAM_COLOR = "#d93025";
const SELECTED_COLOR = "#fbbc04";

export interface RooflineChartEvents {
  select(point: PlotPoint): void;
  openTrace(op: RooflineOpRow): void;
  level(level: string): void;
}

type ScatterConfig = ChartConfiguration<"scatter", XYData[], unknown>;
type XYData = { x: number; y: number };

/** Whether `v` is a whole power of ten (the log axes label only those). */
export function isDecade(v: number): boolean {
  const e = Math.log10(v);
  return Number.isFinite(e) && Math.abs(e - Math.round(e)) < 1e-9;
}

/** An x-axis label: "0.01", "1", "1,000". */
export function formatAxisNumber(v: number): string {
  return Number(v.toPrecision(3)).toLocaleString("en-US", { maximumSignificantDigits: 3, maximumFractionDigits: 12 });
}

/** The lines of a point's tooltip: its name, then the figures of the chart's level. */
export function tooltipLines(point: PlotPoint, ctx: RooflineContext, level: string): string[] {
  const wanted = new Set(["flop_rate", `oi:${level}`, `bw:${level}`, "bound", "efficiency", "roof"]);
  const columns = figureColumns<FigureRow>(ctx).filter((c: Column<FigureRow>) => wanted.has(c.id));
  const lines = point.kind === "op" ? [point.row.name, `${point.row.category} · ${point.row.occurrences.toLocaleString("en-US")} occurrences`] : [`Program: ${/^\d+$/.test(point.label) ? `step ${point.label}` : point.label}`];
  for (const column of columns) lines.push(`${column.title}: ${column.cell(point.row).text}`);
  if (point.kind === "op") lines.push(`Self time: ${formatPercent(point.row.time_fraction)} of the program's device time`);
  if (point.row.source === ESTIMATED) lines.push(`FLOPs and bytes ${ESTIMATED}`);
  if (point.row.figures.anomaly) lines.push(point.row.figures.anomaly);
  return lines;
}

/** The colour of an op point at the compute roof `precision`: by the roof's place among the answer's
 * roofs with a known peak; grey for a roof whose peak is not known. */
export function roofColor(ctx: RooflineContext, precision: string): string {
  const known = ctx.roofs.filter((r) => r.peak !== null).map((r) => r.precision);
  const at = known.indexOf(precision);
  if (at < 0) return ctx.roofs.length || precision ? NO_PEAK_COLOR : OP_COLOR;
  return PRECISION_COLORS[at % PRECISION_COLORS.length] as string;
}

/** The op points grouped by their compute roof, in order of first appearance. */
export function opsByRoof(ops: readonly PlotPoint[]): Map<string, PlotPoint[]> {
  const out = new Map<string, PlotPoint[]>();
  for (const p of ops) {
    const roof = p.kind === "op" ? p.roof : "";
    out.set(roof, [...(out.get(roof) ?? []), p]);
  }
  return out;
}

export class RooflineChart {
  readonly el = h("section", { class: "rf-chart-section", "data-testid": "rf-chart" });
  private readonly levelSelect = h("select", { "aria-label": "Intensity of", "data-testid": "rf-level" });
  private readonly area = h("div", { class: "rf-chart-area" });
  private readonly legend = h("ul", { class: "rf-legend", "data-testid": "rf-legend" });
  private readonly notes = h("p", { class: "rf-hint", "data-testid": "rf-not-drawn" });
  private readonly hover = h("div", { class: "rf-tooltip", role: "tooltip", "data-testid": "rf-tooltip", hidden: true });
  private readonly pinned = h("div", { class: "rf-tooltip rf-pinned", "data-testid": "rf-pinned", hidden: true });
  private drawn: DrawnChart<"scatter", XYData[], unknown> | null = null;
  private chart: Chart<"scatter", XYData[], unknown> | null = null;
  private model: RooflineModel | null = null;
  private ctx: RooflineContext | null = null;
  /** The point datasets' points, by dataset index (roof datasets have none). */
  private pointsOf: PlotPoint[][] = [];
  private items = new Map<string, HTMLElement>();
  private selected: string | null = null;

  constructor(private readonly events: RooflineChartEvents) {
    this.levelSelect.addEventListener("change", () => this.events.level(this.levelSelect.value));
    this.area.append(this.hover, this.pinned);
    this.el.append(
      h("div", { class: "rf-chart-head" }, h("h2", {}, "Roofline"), h("label", { class: "rf-level-label" }, "Operational intensity of ", this.levelSelect)),
      this.area,
      this.legend,
      this.notes,
    );
  }

  /** Draws `model` (the level picker offers `ctx.levels`). */
  show(model: RooflineModel, ctx: RooflineContext): void {
    this.model = model;
    this.ctx = ctx;
    clear(this.levelSelect);
    for (const level of ctx.levels) this.levelSelect.append(h("option", { value: level, selected: level === model.level }, levelLabel(ctx, level)));
    this.levelSelect.disabled = ctx.levels.length < 2;
    this.drawn?.destroy();
    this.chart = null;
    this.area.querySelector("canvas")?.remove();
    this.items.clear();
    const points = [...model.program, ...model.ops];
    const fallback = h(
      "ul",
      {},
      ...points.map((p) => {
        const li = h("li", { "data-testid": "rf-point", "data-key": p.key, "data-kind": p.kind }, tooltipLines(p, ctx, model.level).join("; "));
        this.items.set(p.key, li);
        return li;
      }),
    );
    const canvas = h("canvas", { role: "img", "aria-label": `Roofline: FLOP rate against operational intensity of ${model.levelLabel}` }, fallback);
    this.area.prepend(canvas);
    const drawn = drawChart(canvas, this.config(model));
    this.drawn = drawn;
    void drawn.ready.then((chart) => {
      if (this.drawn === drawn) this.chart = chart;
    });
    this.fillLegend(model);
    this.notes.textContent = model.notDrawn.length ? `Not drawn: ${model.notDrawn.join("; ")}.` : "";
    this.hideHover();
    this.select(this.selected);
  }

  /** Emphasizes the point `key` and pins its card (null: none). */
  select(key: string | null): void {
    this.selected = key;
    this.chart?.update("none");
    const point = key === null ? undefined : this.pointsOf.flat().find((p) => p.key === key);
    if (!point || !this.ctx || !this.model) {
      this.pinned.hidden = true;
      return;
    }
    clear(this.pinned);
    const close = h("button", { type: "button", class: "rf-close", "aria-label": "Close" }, "×");
    close.addEventListener("click", () => this.select(null));
    this.pinned.append(close, ...this.lines(point));
    if (point.kind === "op") {
      const op = point.row;
      const link = h("button", { type: "button", class: "rf-link", "data-testid": "rf-pinned-trace" }, "Open its events in the Trace tab");
      link.addEventListener("click", () => this.events.openTrace(op));
      this.pinned.append(h("div", {}, link));
    }
    this.pinned.hidden = false;
    this.place(this.pinned, point);
  }

  destroy(): void {
    this.drawn?.destroy();
    this.drawn = null;
    this.chart = null;
  }

  private lines(point: PlotPoint): HTMLElement[] {
    const [title, ...rest] = tooltipLines(point, this.ctx as RooflineContext, (this.model as RooflineModel).level);
    return [h("div", { class: "rf-tooltip-title" }, title ?? ""), ...rest.map((l) => h("div", {}, l))];
  }

  /** Puts a card beside `point`'s pixel position (from the drawn chart or the fallback item). */
  private place(card: HTMLElement, point: PlotPoint, at?: { x: number; y: number }): void {
    const item = this.items.get(point.key);
    const x = at?.x ?? Number(item?.dataset.x ?? Number.NaN);
    const y = at?.y ?? Number(item?.dataset.y ?? Number.NaN);
    if (!Number.isFinite(x) || !Number.isFinite(y)) return;
    const width = this.area.clientWidth || 600;
    const left = x + 14 + 280 > width ? Math.max(0, x - 14 - 280) : x + 14;
    const bottom = (this.area.clientHeight || 440) - card.offsetHeight - 4;
    card.style.left = `${left}px`;
    card.style.top = `${Math.max(0, Math.min(y - 10, bottom))}px`;
  }

  private hideHover(): void {
    this.hover.hidden = true;
  }

  private pointAt(datasetIndex: number, index: number): PlotPoint | undefined {
    return this.pointsOf[datasetIndex]?.[index];
  }

  private onTooltip(tooltip: TooltipModel<"scatter">): void {
    const item = tooltip.dataPoints?.[0];
    const point = item ? this.pointAt(item.datasetIndex, item.dataIndex) : undefined;
    if (tooltip.opacity === 0 || !point) {
      this.hideHover();
      return;
    }
    clear(this.hover);
    this.hover.append(...this.lines(point), h("div", { class: "rf-hint" }, point.kind === "op" ? "Click to select its row and keep this card" : "Click to select its row"));
    this.hover.hidden = false;
    this.place(this.hover, point, { x: tooltip.caretX, y: tooltip.caretY });
  }

  /** Writes each point's drawn position (CSS px in the canvas) into its fallback item. */
  private recordPositions(chart: Chart): void {
    this.pointsOf.forEach((points, datasetIndex) => {
      const meta = chart.getDatasetMeta(datasetIndex);
      points.forEach((p, i) => {
        const element = meta.data[i];
        const item = this.items.get(p.key);
        if (!element || !item) return;
        item.dataset.x = element.x.toFixed(1);
        item.dataset.y = element.y.toFixed(1);
      });
    });
    const selected = this.pointsOf.flat().find((p) => p.key === this.selected);
    if (selected && !this.pinned.hidden) this.place(this.pinned, selected);
  }

  private fillLegend(model: RooflineModel): void {
    clear(this.legend);
    const swatch = (color: string, shape: string) => h("span", { class: `rf-swatch rf-${shape}`, style: `--c: ${color}` });
    const ctx = this.ctx as RooflineContext;
    if (model.compute !== null) {
      const precision = ctx.device?.roof_precision;
      this.legend.append(h("li", { "data-roof": precision ?? "" }, swatch(COMPUTE_SWATCH, "line"), `Compute roof${precision && precision !== "peak" ? ` (${precision})` : ""}: ${formatFlopRate(model.compute)}`));
    }
    for (const roof of model.otherRoofs) {
      this.legend.append(h("li", { "data-roof": roof.precision }, swatch(roofColor(ctx, roof.precision), "dashed"), `${roof.precision} compute roof: ${formatFlopRate(roof.peak)}`));
    }
    for (const roof of ctx.roofs.filter((r) => r.peak === null)) {
      this.legend.append(h("li", { "data-roof": roof.precision }, swatch(NO_PEAK_COLOR, "dot"), `${roof.precision}: peak not known, no roof`));
    }
    model.roofs.forEach((roof, i) => {
      const ridge = roof.ridge === null ? "" : ` · ridge point ${formatIntensity(roof.ridge)}`;
      this.legend.append(h("li", { "data-level": roof.level }, swatch(ROOF_COLORS[i % ROOF_COLORS.length] as string, "line"), `${roof.label} roof: ${formatByteRate(roof.bandwidth)}${ridge}`));
    });
    if (model.program.length) this.legend.append(h("li", {}, swatch(PROGRAM_COLOR, "diamond"), `program rows (${model.program.length})`));
    const byRoof = opsByRoof(model.ops);
    for (const [roof, ops] of byRoof) {
      const label = byRoof.size > 1 || roof ? `ops at the ${roof || "device's"} roof (${ops.length})` : `ops (${ops.length})`;
      this.legend.append(h("li", { "data-ops-roof": roof }, swatch(roofColor(ctx, roof), "dot"), label));
    }
    if ([...model.program, ...model.ops].some((p) => p.row.source === ESTIMATED)) {
      this.legend.append(h("li", {}, swatch(OP_COLOR, "ring"), ESTIMATED));
    }
  }

  private config(model: RooflineModel): ScatterConfig {
    const datasets: ChartDataset<"scatter", XYData[]>[] = [];
    this.pointsOf = [];
    const isSelected = (c: ScriptableContext<"line">) => this.pointAt(c.datasetIndex, c.dataIndex)?.key === this.selected;
    const pointSet = (points: PlotPoint[], color: string, style: "rectRot" | "circle", radius: number): ChartDataset<"scatter", XYData[]> => {
      this.pointsOf[datasets.length] = points;
      return {
        data: points.map((p) => ({ x: p.x, y: p.y })),
        pointStyle: style,
        pointRadius: (c) => (isSelected(c) ? radius + 3 : radius),
        pointHoverRadius: radius + 2,
        pointHitRadius: 4,
        pointBorderWidth: (c) => (isSelected(c) ? 3 : 1),
        pointBorderColor: (c) => (isSelected(c) ? SELECTED_COLOR : color),
        pointBackgroundColor: (c) => (this.pointAt(c.datasetIndex, c.dataIndex)?.row.source === ESTIMATED ? chartInk().surface : `${color}b3`),
        order: 0,
      };
    };
    const line = (data: XYData[], color: string | (() => string), dashed = false): ChartDataset<"scatter", XYData[]> => ({
      data,
      showLine: true,
      borderColor: color,
      borderWidth: 2,
      borderDash: dashed ? [6, 4] : [],
      pointRadius: 0,
      pointHitRadius: 0,
      pointHoverRadius: 0,
      order: 2,
    });
    model.roofs.forEach((roof, i) => {
      if (roof.line.length) datasets.push(line(roof.line, ROOF_COLORS[i % ROOF_COLORS.length] as string, roof.level !== model.level));
    });
    if (model.computeLine.length) datasets.push(line(model.computeLine, COMPUTE_COLOR));
    const ctx = this.ctx as RooflineContext;
    for (const roof of model.otherRoofs) datasets.push(line(roof.line, roofColor(ctx, roof.precision), true));
    const ridges = model.roofs.filter((r) => r.ridge !== null && model.compute !== null);
    if (ridges.length) {
      datasets.push({
        data: ridges.map((r) => ({ x: r.ridge as number, y: model.compute as number })),
        pointStyle: "triangle",
        pointRadius: 6,
        pointHitRadius: 0,
        pointHoverRadius: 6,
        pointBackgroundColor: ridges.map((r) => ROOF_COLORS[model.roofs.indexOf(r) % ROOF_COLORS.length] as string),
        pointBorderColor: () => chartInk().surface,
        order: 1,
      });
    }
    datasets.push(pointSet(model.program, PROGRAM_COLOR, "rectRot", 6));
    for (const [roof, ops] of opsByRoof(model.ops)) datasets.push(pointSet(ops, roofColor(ctx, roof), "circle", 4));
    const positions: Plugin<"scatter"> = { id: "rooflinePositions", afterRender: (chart) => this.recordPositions(chart as unknown as Chart) };
    const gridColor = (c: { tick?: { value: number } }) => (c.tick && isDecade(c.tick.value) ? chartInk().gridMajor : chartInk().grid);
    return {
      type: "scatter",
      data: { datasets },
      options: {
        responsive: true,
        maintainAspectRatio: false,
        interaction: { mode: "nearest", intersect: true },
        layout: { padding: { right: 12, top: 8 } },
        scales: {
          x: {
            type: "logarithmic",
            min: model.x[0],
            max: model.x[1],
            grid: { color: gridColor },
            ticks: { autoSkip: false, maxRotation: 0, callback: (v) => (isDecade(Number(v)) ? formatAxisNumber(Number(v)) : "") },
            title: { display: true, text: `Operational intensity (FLOP per byte of ${model.levelLabel})` },
          },
          y: {
            type: "logarithmic",
            min: model.y[0],
            max: model.y[1],
            grid: { color: gridColor },
            ticks: { autoSkip: false, callback: (v) => (isDecade(Number(v)) ? formatFlopRate(Number(v)) : "") },
            title: { display: true, text: "FLOP rate (FLOP/s)" },
          },
        },
        plugins: {
          tooltip: { enabled: false, external: ({ tooltip }) => this.onTooltip(tooltip as TooltipModel<"scatter">) },
        },
        onHover: (event, elements) => {
          const target = event.native?.target as HTMLElement | undefined;
          if (target) target.style.cursor = elements.some((e) => this.pointAt(e.datasetIndex, e.index)) ? "pointer" : "default";
        },
        onClick: (_event, elements) => {
          const hit = elements.map((e) => this.pointAt(e.datasetIndex, e.index)).find(Boolean);
          if (!hit) return;
          this.events.select(hit);
        },
      },
      plugins: [positions],
    };
  }
}
