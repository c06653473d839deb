/** Several hosts (ranks) side by side: each rank's steady step time, device busy share and overlap,
 * and for each step number seen on several ranks the slowest rank and how far it is from the median. */

import type { OverviewAnswer, OverviewHost, OverviewLink, OverviewSlowestRank } from "../../api/answers.gen.ts";
import { h } from "../../dom.ts";
import { absent, type Cell, cellElement, count, duration, measured, percent, text } from "./cells.ts";
import { overlapReason } from "./devices.ts";

export interface RankEvents {
  openLink(link: OverviewLink): void;
}

/** The share of the host's device windows its devices were busy (all devices together). */
export function deviceBusy(host: OverviewHost): Cell {
  const d = host.devices;
  if (!d.observed) return absent(d.reason ?? "device activity not observed");
  const window = d.devices.reduce((n, x) => n + x.window_ns, 0);
  const busy = d.devices.reduce((n, x) => n + x.busy_ns, 0);
  return percent(window > 0 ? busy / window : undefined, "no device window in the scope");
}

/** "1.006×", "1.000×" (three decimals: ranks are often within a fraction of a percent). */
export function formatSpread(spread: number): string {
  return `${spread.toFixed(3)}×`;
}

/** The step `row` of the slowest host, for its link. */
export function slowestStepLink(answer: OverviewAnswer, row: OverviewSlowestRank): OverviewLink | undefined {
  const host = answer.per_host.find((p) => p.host === row.slowest_host);
  return host?.steps.rows.find((s) => s.number === row.step)?.link;
}

function ranksTable(hosts: readonly OverviewHost[]): HTMLElement {
  const head = h(
    "tr",
    {},
    h("th", {}, "Rank"),
    h("th", { class: "num" }, "Steady steps"),
    h("th", { class: "num" }, "Median step"),
    h("th", { class: "num" }, "Max step"),
    h("th", { class: "num", title: "Busy ÷ window, over the host's devices" }, "Device busy"),
    h("th", { class: "num", title: "Computing while communicating ÷ communicating" }, "Overlap"),
  );
  const rows = hosts.map((host) => {
    const stats = host.steps.stats;
    const noSteps = host.steps.message ?? "no steady steps";
    return h(
      "tr",
      { "data-host": host.host },
      h("td", {}, host.host),
      cellElement(stats ? count(stats.count, noSteps) : absent(noSteps), true),
      cellElement(duration(stats?.median_ns, noSteps), true),
      cellElement(duration(stats?.max_ns, noSteps), true),
      cellElement(deviceBusy(host), true),
      cellElement(host.overlap ? percent(host.overlap.fraction, "") : absent(overlapReason(host.devices)), true),
    );
  });
  return h("table", { class: "ov-table ov-compact", "data-testid": "ov-ranks-table" }, h("thead", {}, head), h("tbody", {}, ...rows));
}

function slowestTable(answer: OverviewAnswer, events: RankEvents): HTMLElement {
  const head = h(
    "tr",
    {},
    h("th", { class: "num" }, "Step"),
    h("th", { class: "num" }, "Ranks"),
    h("th", {}, "Slowest rank"),
    h("th", { class: "num" }, "Its wall time"),
    h("th", { class: "num" }, "Median rank"),
    h("th", { class: "num", title: "Slowest ÷ median wall time" }, "Spread"),
  );
  const rows = answer.slowest_ranks.map((r) => {
    const link = slowestStepLink(answer, r);
    const host = h("td", {}, r.slowest_host);
    if (link) {
      const button = h("button", { type: "button", class: "ov-link", "data-testid": "ov-open-trace", title: `Show step ${r.step} of ${r.slowest_host} in the Trace tab` }, "events");
      button.addEventListener("click", () => events.openLink(link));
      host.append(" ", button);
    }
    return h(
      "tr",
      { "data-step": r.step },
      cellElement(text(String(r.step)), true),
      cellElement(count(r.hosts, ""), true),
      host,
      cellElement(duration(r.slowest_wall_ns, ""), true),
      cellElement(duration(r.median_wall_ns, ""), true),
      cellElement(measured(r.spread, formatSpread, ""), true),
    );
  });
  return h("table", { class: "ov-table ov-compact", "data-testid": "ov-slowest-table" }, h("thead", {}, head), h("tbody", {}, ...rows));
}

export function ranksSection(answer: OverviewAnswer, events: RankEvents): HTMLElement {
  const el = h("section", { class: "ov-ranks", "data-testid": "ov-ranks" }, h("h2", {}, `Ranks (${answer.hosts.length} hosts)`));
  el.append(h("div", { class: "ov-table-scroll ov-fit" }, ranksTable(answer.per_host)));
  el.append(h("h3", {}, "Slowest rank per step"));
  if (answer.slowest_ranks.length) el.append(h("div", { class: "ov-table-scroll ov-fit" }, slowestTable(answer, events)));
  else el.append(h("p", { class: "ov-hint ov-absent", "data-testid": "ov-no-slowest" }, "not observed: no step number was found on more than one host"));
  return el;
}
