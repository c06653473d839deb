/** The findings, on top of the Overview: one row each, Observation | Hypothesis | Next check, most
 * costly first (the answer's order). The observation carries its cost, its evidence numbers and the
 * rule that fired; a link opens the events behind it in the Trace tab. */

import type { OverviewFinding, OverviewLink } from "../../api/answers.gen.ts";
import { h } from "../../dom.ts";
import { formatDuration } from "../../shared/units.ts";

export interface FindingEvents {
  openLink(link: OverviewLink): void;
}

/** The text of a finding's link: a time range shows the events there, a search finds them. */
export function linkText(link: OverviewLink): string {
  if (link.start_ns !== undefined && link.end_ns !== undefined) return "Show the events in the Trace tab";
  if (link.search) return `Find “${link.search}” in the Trace tab`;
  return "";
}

/** What a finding costs: "costs ≈ 14 ms per step (81 %)"; "" for a note (no cost). */
export function costText(f: OverviewFinding): string {
  if (f.cost_ns === undefined || f.cost_share === undefined) return "";
  return `costs ≈ ${formatDuration(f.cost_ns)} per step (${Math.round(f.cost_share * 100)} %)`;
}

function findingRow(f: OverviewFinding, multiHost: boolean, traced: boolean, events: FindingEvents): HTMLTableRowElement {
  const evidence = h("ul", { class: "ov-evidence", "data-testid": "ov-evidence" }, ...f.evidence.map((e) => h("li", { title: String(e.value) }, `${e.label}: `, h("strong", {}, e.text))));
  const label = traced ? linkText(f.link) : "";
  const link = label ? h("button", { type: "button", class: "ov-link", "data-testid": "ov-finding-link" }, label) : null;
  link?.addEventListener("click", () => events.openLink(f.link));
  const cost = costText(f);
  return h(
    "tr",
    { "data-testid": `ov-finding-${f.kind}`, "data-kind": f.kind },
    h(
      "td",
      {},
      h("div", { class: "ov-finding-title" }, f.title, multiHost ? h("span", { class: "ov-host-tag" }, f.host) : null),
      cost ? h("div", { class: "ov-finding-cost", "data-testid": "ov-finding-cost" }, cost) : null,
      h("div", {}, f.observation),
      f.evidence.length ? evidence : null,
      h("div", { class: "ov-rule" }, `Rule: ${f.rule}`),
      link,
    ),
    h("td", {}, f.hypothesis),
    h("td", {}, f.next_check),
  );
}

/** The findings table; a finding of a host without a trace (`traced` false: logs only) has no link. */
export function findingsSection(findings: readonly OverviewFinding[], multiHost: boolean, traced: (host: string) => boolean, events: FindingEvents): HTMLElement {
  const el = h("section", { class: "ov-findings", "data-testid": "ov-findings" }, h("h2", {}, "Findings"));
  if (!findings.length) {
    el.append(h("p", { class: "ov-hint", "data-testid": "ov-no-findings" }, "No finding: none of the rules fired on this profile (docs/OVERVIEW.md lists them)."));
    return el;
  }
  const head = h("tr", {}, h("th", {}, "Observation"), h("th", {}, "Hypothesis"), h("th", {}, "Next check"));
  el.append(h("table", { class: "ov-table ov-findings-table", "data-testid": "ov-findings-table" }, h("thead", {}, head), h("tbody", {}, ...findings.map((f) => findingRow(f, multiHost, traced(f.host), events)))));
  return el;
}
