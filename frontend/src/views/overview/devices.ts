/** Device activity of one host: busy and idle time of each device and the idle split of each stream
 * (host wait, kernel wait, other), the launch-delay distribution with its histogram and the launches
 * left out of it (each rule with its count), and the communication/computation overlap. A capture
 * without device activity (CPU only) shows every device figure as "not observed" with the reason; the
 * window the figures use (the device's active region, without steps) and CUDA/HIP graph captures and
 * launches are said above them. */

import type { ChartConfiguration, TooltipItem } from "chart.js";
import type {
  OverviewDevice,
  OverviewDevices,
  OverviewDistribution,
  OverviewHistogramBin,
  OverviewHost,
  OverviewLaunchExclusion,
  OverviewStream,
} from "../../api/answers.gen.ts";
import { h } from "../../dom.ts";
import { formatCount, formatDuration } from "../../shared/units.ts";
import { absent, card, type Cell, cellElement, count, duration, percent, text } from "./cells.ts";
import { type ChartFrame, chartFrame, GRID_COLOR } from "./chart_frame.ts";

const HISTOGRAM_COLOR = "#8ab4f8";
const IDLE_SPLIT = "the idle split is per stream: see the streams below";

/** Why the overlap is absent: no device activity at all, or no collectives on it. */
export function overlapReason(devices: OverviewDevices): string {
  return devices.observed ? "no collective communication observed on the device" : (devices.reason ?? "device activity not observed");
}

/** A busy fraction as a small bar and its percentage. */
function busyCell(fraction: number): HTMLTableCellElement {
  const bar = h("span", { class: "ov-busy-bar" });
  bar.style.width = `${Math.max(0, Math.min(1, fraction)) * 100}%`;
  const cell = percent(fraction, "");
  return h("td", { class: "num ov-busy" }, h("span", { class: "ov-busy-track" }, bar), cell.text);
}

function deviceRow(d: OverviewDevice): HTMLTableRowElement {
  const events = d.streams.reduce((n, s) => n + s.events, 0);
  const split = (): HTMLTableCellElement => h("td", { class: "num ov-hint", title: IDLE_SPLIT }, "per stream");
  return h(
    "tr",
    { class: "ov-device-row", "data-testid": "ov-device-row" },
    h("td", { title: `${d.kind}; window ${formatDuration(d.window_ns)}` }, d.name),
    cellElement(count(events, ""), true),
    cellElement(duration(d.busy_ns, ""), true),
    busyCell(d.busy_fraction),
    cellElement(duration(d.idle_ns, ""), true),
    split(),
    split(),
    split(),
    cellElement(text(""), true),
  );
}

function streamRow(s: OverviewStream, window: number): HTMLTableRowElement {
  return h(
    "tr",
    { class: "ov-stream-row", "data-testid": "ov-stream-row" },
    h("td", { class: "ov-stream-name", title: `timeline track ${s.track}` }, s.name),
    cellElement(count(s.events, ""), true),
    cellElement(duration(s.busy_ns, ""), true),
    busyCell(window > 0 ? s.busy_ns / window : 0),
    cellElement(text(""), true),
    cellElement(duration(s.idle.host_wait_ns, ""), true),
    cellElement(duration(s.idle.kernel_wait_ns, ""), true),
    cellElement(duration(s.idle.other_ns, ""), true),
    cellElement(count(s.idle.gaps, ""), true),
  );
}

function devicesTable(devices: OverviewDevice[]): HTMLElement {
  const th = (title: string, help: string) => h("th", { class: "num", title: help }, title);
  const head = h(
    "tr",
    {},
    h("th", {}, "Device / stream"),
    th("Events", "Device events in the scope"),
    th("Busy", "Union of the events' time"),
    th("Busy %", "Busy ÷ the scope's window"),
    th("Idle", "Window − busy"),
    th("Host wait", "Gaps where the next event's launch call started after the previous event ended: the host was late"),
    th("Kernel wait", "Short gaps that are not host wait: the back-to-back launch overhead"),
    th("Other", "Gaps not attributable (waits on other streams, no launch linked)"),
    th("Gaps", "Idle gaps between consecutive events of the stream"),
  );
  const rows = devices.flatMap((d) => [deviceRow(d), ...d.streams.map((s) => streamRow(s, d.window_ns))]);
  return h("div", { class: "ov-table-scroll ov-fit" }, h("table", { class: "ov-table ov-compact", "data-testid": "ov-devices-table" }, h("thead", {}, head), h("tbody", {}, ...rows)));
}

/** "1.06 µs – 1.14 µs". */
export function binLabel(bin: OverviewHistogramBin): string {
  return `${formatDuration(bin.lo_ns)} – ${formatDuration(bin.hi_ns)}`;
}

export function histogramConfig(bins: readonly OverviewHistogramBin[]): ChartConfiguration<"bar", number[], string> {
  return {
    type: "bar",
    data: { labels: bins.map(binLabel), datasets: [{ data: bins.map((b) => b.count), backgroundColor: HISTOGRAM_COLOR, categoryPercentage: 1, barPercentage: 0.95 }] },
    options: {
      responsive: true,
      maintainAspectRatio: false,
      scales: {
        x: {
          grid: { display: false },
          ticks: { autoSkip: true, maxRotation: 0, autoSkipPadding: 12, callback: (_v, i) => formatDuration(bins[i]?.lo_ns) },
          title: { display: true, text: "launch delay (log-spaced bins)" },
        },
        y: { beginAtZero: true, grid: { color: GRID_COLOR }, ticks: { maxTicksLimit: 5, precision: 0 }, title: { display: true, text: "events" } },
      },
      plugins: {
        tooltip: {
          displayColors: false,
          callbacks: { title: () => "", label: (item: TooltipItem<"bar">) => `${binLabel(bins[item.dataIndex])}: ${formatCount(bins[item.dataIndex].count)} events` },
        },
      },
    },
  };
}

function distributionCards(d: OverviewDistribution | undefined, reason: string): HTMLElement {
  const figure = (value: number | undefined): Cell => (d ? duration(value, reason) : absent(reason));
  return h(
    "div",
    { class: "ov-cards", "data-testid": "ov-launch-delay" },
    card("Launches counted", d ? count(d.count, reason) : absent(reason), "linked to their launch call, less the ones left out below", "launch-count"),
    card("Median delay", figure(d?.median_ns), "device start − end of the launch call", "launch-median"),
    card("p10", figure(d?.p10_ns), "", "launch-p10"),
    card("p90", figure(d?.p90_ns), "", "launch-p90"),
    card("Min", figure(d?.min_ns), "", "launch-min"),
    card("Max", figure(d?.max_ns), "", "launch-max"),
  );
}

/** The notes that change how the device figures read: the window they use, graph captures and launches. */
function deviceNotes(devices: OverviewDevices): HTMLElement[] {
  const notes: HTMLElement[] = [];
  if (devices.window_note) notes.push(h("p", { class: "ov-hint", "data-testid": "ov-device-window" }, devices.window_note));
  if (devices.graph_note && devices.observed) notes.push(h("ul", { class: "ov-warnings", "data-testid": "ov-device-graphs" }, h("li", {}, devices.graph_note)));
  return notes;
}

/** The launches left out of the delay distribution, one line per rule (the rule as tooltip). */
function exclusionList(excluded: readonly OverviewLaunchExclusion[]): HTMLElement {
  return h(
    "ul",
    { class: "ov-hint", "data-testid": "ov-launch-excluded" },
    ...excluded.map((x) => h("li", { title: x.rule, "data-kind": x.kind }, x.text)),
  );
}

/** The device part of a host's section; the returned frames are the charts to destroy with it. */
export function devicesSection(host: OverviewHost): { el: HTMLElement; frames: ChartFrame[] } {
  const devices = host.devices;
  const el = h("section", { class: "ov-devices", "data-testid": "ov-devices" }, h("h3", {}, `Device (${devices.scope})`), ...deviceNotes(devices));
  if (!devices.observed) {
    const reason = devices.reason ?? "device activity not observed";
    el.append(
      h(
        "div",
        { class: "ov-cards" },
        ...["Device busy", "Device idle", "Host wait", "Kernel wait", "Other idle", "Launch delay", "Comm. overlap"].map((label) =>
          card(label, absent(reason), "", label.toLowerCase().replace(/[^a-z]+/g, "-")),
        ),
      ),
      h("p", { class: "ov-hint", "data-testid": "ov-device-reason" }, reason),
    );
    return { el, frames: [] };
  }
  const frames: ChartFrame[] = [];
  el.append(devicesTable(devices.devices), h("h4", {}, "Launch delay"));
  const launchReason = devices.launch_reason ?? "no device event is linked to its launch";
  el.append(distributionCards(devices.launch_delay, launchReason));
  if (devices.launch_excluded?.length) el.append(exclusionList(devices.launch_excluded));
  const bins = devices.launch_delay?.histogram ?? [];
  if (bins.length) {
    const fallback = h("ul", {}, ...bins.map((b) => h("li", {}, `${binLabel(b)}: ${formatCount(b.count)} events`)));
    const frame = chartFrame("Launch delay histogram", histogramConfig(bins), fallback, "ov-launch-chart", 180);
    frames.push(frame);
    el.append(frame.el);
  }
  const overlap = host.overlap;
  const overlapWhy = overlapReason(devices);
  el.append(
    h("h4", {}, "Communication / computation overlap"),
    h(
      "div",
      { class: "ov-cards", "data-testid": "ov-overlap" },
      card("Overlap", overlap ? percent(overlap.fraction, overlapWhy) : absent(overlapWhy), "computing while communicating ÷ communicating", "overlap"),
      card("Communication", overlap ? duration(overlap.communication_ns, overlapWhy) : absent(overlapWhy), "", "communication"),
      card("Overlapped", overlap ? duration(overlap.overlapped_ns, overlapWhy) : absent(overlapWhy), "", "overlapped"),
    ),
  );
  return { el, frames };
}
