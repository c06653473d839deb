/** The device the roofs are drawn for: each peak with its unit and where it comes from, which
 * compute roofs the ops run at, and which peaks nobody knows (they get no roof). */

import { h } from "../../dom.ts";
import { formatByteRate, formatFlopRate } from "../../shared/units.ts";
import type { RooflineDevice, RooflinePeak } from "./api.ts";
import { formatIntensity, levelLabel, type RooflineContext } from "./cells.ts";

/** A peak in its own unit ("918 TFLOP/s", "1.64 TB/s"); another unit is written as it comes. */
export function formatPeak(peak: RooflinePeak): string {
  if (peak.unit === "FLOP/s") return formatFlopRate(peak.value);
  if (peak.unit === "B/s") return formatByteRate(peak.value);
  return `${peak.value.toLocaleString("en-US", { maximumSignificantDigits: 4 })} ${peak.unit}`;
}

function peakRow(name: string, peak: RooflinePeak, extra: string, testid: string): HTMLTableRowElement {
  return h(
    "tr",
    { "data-testid": testid },
    h("th", {}, name),
    h("td", { class: "num" }, formatPeak(peak)),
    h("td", { class: "rf-hint" }, extra),
    h("td", { class: "rf-source" }, peak.source),
  );
}

function unknownRow(name: string, why: string, testid: string): HTMLTableRowElement {
  return h("tr", { "data-testid": testid, class: "rf-unknown" }, h("th", {}, name), h("td", { class: "num rf-absent" }, "unknown"), h("td", { class: "rf-hint" }, "no roof drawn"), h("td", { class: "rf-source" }, why));
}

export function devicePanel(device: RooflineDevice, ctx: RooflineContext): HTMLElement {
  const attributes = Object.entries(device.attributes).map(([k, v]) => `${k}: ${v}`);
  const planes = device.device_planes !== device.devices ? ` (of ${device.device_planes} in the profile)` : "";
  const rows: HTMLTableRowElement[] = [];
  const flops = Object.entries(device.flops);
  if (!flops.length) rows.push(unknownRow("Compute", "the profile gives no compute peak and the parts table does not know this device", "rf-peak-compute"));
  const used = new Set(ctx.roofs.map((r) => r.precision));
  for (const [precision, peak] of flops) {
    const roof = precision === device.roof_precision ? "the compute roof" : used.has(precision) ? "a compute roof: ops run at it" : "";
    rows.push(peakRow(precision === "peak" ? "Compute" : `Compute, ${precision}`, peak, roof, `rf-peak-flops-${precision}`));
  }
  for (const roof of ctx.roofs.filter((r) => r.peak === null)) {
    rows.push(unknownRow(`Compute, ${roof.precision}`, "ops run at it, but neither the profile nor the parts table gives its peak: not known", `rf-peak-flops-${roof.precision}`));
  }
  if (flops.length && ctx.computePeak === null) rows.push(unknownRow("Compute roof", "the answer names no precision to draw the compute roof for", "rf-peak-compute"));
  for (const [level, peak] of Object.entries(device.bandwidth)) {
    const ridge = device.ridge_points[level];
    const used = ctx.levels.includes(level);
    const extra = [ridge === undefined ? "" : `ridge point ${formatIntensity(ridge)}`, used ? "" : "no traffic: no roof"].filter(Boolean).join(" · ");
    rows.push(peakRow(`${levelLabel(ctx, level)} bandwidth`, peak, extra, `rf-peak-bw-${level}`));
  }
  for (const level of ctx.levels.filter((l) => !device.bandwidth[l])) {
    rows.push(unknownRow(`${levelLabel(ctx, level)} bandwidth`, "no peak in the profile, the parts table or roofline.json", `rf-peak-bw-${level}`));
  }
  return h(
    "section",
    { class: "rf-device", "data-testid": "rf-device" },
    h("h2", {}, "Device"),
    h(
      "p",
      { class: "rf-device-name" },
      h("strong", {}, device.name),
      ` · ${device.kind.toUpperCase()} · ${device.devices} device${device.devices === 1 ? "" : "s"} with activity${planes}`,
      attributes.length ? ` · ${attributes.join(", ")}` : "",
    ),
    h("table", { class: "rf-peaks" }, h("thead", {}, h("tr", {}, h("th", {}, "Peak"), h("th", { class: "num" }, "Value"), h("th", {}, ""), h("th", {}, "Source"))), h("tbody", {}, ...rows)),
  );
}
