/** The list of search matches beside the timeline: the page of matches the search panel holds
 * (search.ts pages them), one row each with name, track, start and duration, sortable by any
 * column; a click goes to that match, and the match the walk is on is marked and kept in view. */

import type { SearchMatch, SearchResponse } from "../../api/types.ts";
import { clear, h } from "../../dom.ts";
import { formatCount, formatDuration } from "../../shared/units.ts";
import { DURATION_DIGITS, formatInstant } from "./axis.ts";
import { shortName } from "./names.ts";

export interface SearchResultsHost {
  /** "section / track" for a track id. */
  trackLabel(track: number): string;
  /** Go to match `index` (global, in time order). */
  pick(index: number): void;
  /** Up / Down in the list: the previous / next match. */
  step(dir: 1 | -1): void;
}

type Column = "name" | "track" | "start" | "duration";

const COLUMNS: { key: Column; title: string; numeric: boolean }[] = [
  { key: "name", title: "Name", numeric: false },
  { key: "track", title: "Track", numeric: false },
  { key: "start", title: "Start", numeric: true },
  { key: "duration", title: "Duration", numeric: true },
];

/** Row order of `matches` sorted by `key` (ties, and "start", in time order, which is the page's). */
export function sortedOrder(matches: SearchMatch[], key: Column, desc: boolean, trackLabel: (t: number) => string): number[] {
  const order = matches.map((_, i) => i);
  const value = (m: SearchMatch): string | number =>
    key === "name" ? m.name : key === "track" ? trackLabel(m.track) : key === "duration" ? m.dur_ns : m.start_ns;
  const values = matches.map(value);
  order.sort((a, b) => {
    const x = values[a];
    const y = values[b];
    const c = typeof x === "string" ? x.localeCompare(y as string) : (x as number) - (y as number);
    return (desc ? -c : c) || a - b;
  });
  return order;
}

export class SearchResults {
  readonly el = h("div", { class: "tv-results", "data-testid": "search-results", hidden: true, tabindex: "-1" });
  private resp: SearchResponse | null = null;
  private current = -1;
  private sortKey: Column = "start";
  private sortDesc = false;

  constructor(private readonly host: SearchResultsHost) {
    this.el.addEventListener("keydown", (e) => {
      if (e.key !== "ArrowDown" && e.key !== "ArrowUp") return;
      e.preventDefault();
      e.stopPropagation();
      this.host.step(e.key === "ArrowDown" ? 1 : -1);
    });
  }

  get shown(): boolean {
    return !this.el.hidden;
  }

  setShown(shown: boolean): void {
    this.el.hidden = !shown;
    if (shown) this.render();
  }

  /** The page of matches held (null: no search), and the global index of the match the walk is on. */
  show(resp: SearchResponse | null, current: number): void {
    const samePage = resp === this.resp;
    this.resp = resp;
    this.current = current;
    if (this.el.hidden) return;
    if (samePage && this.markCurrent()) return;
    this.render();
  }

  private render(): void {
    clear(this.el);
    const resp = this.resp;
    if (!resp) {
      this.el.append(h("p", { class: "tv-hint" }, "Type in the search box to list matches."));
      return;
    }
    const held = resp.matches.length;
    const more = resp.total > held ? ` · matches ${formatCount(resp.offset + 1)}–${formatCount(resp.offset + held)} listed` : "";
    this.el.append(h("div", { class: "tv-results-head" }, `${formatCount(resp.total)} matches${more}`));
    if (!held) return;
    const head = h("tr", {});
    for (const col of COLUMNS) {
      const arrow = col.key === this.sortKey ? (this.sortDesc ? " ▾" : " ▴") : "";
      const th = h("th", { class: col.numeric ? "num" : "", title: `Sort by ${col.title.toLowerCase()}`, "data-sort": col.key }, col.title + arrow);
      th.addEventListener("click", () => {
        this.sortDesc = this.sortKey === col.key ? !this.sortDesc : col.key === "duration";
        this.sortKey = col.key;
        this.render();
      });
      head.append(th);
    }
    const body = h("tbody", {});
    for (const i of sortedOrder(resp.matches, this.sortKey, this.sortDesc, (t) => this.host.trackLabel(t))) {
      const m = resp.matches[i];
      const index = resp.offset + i;
      const row = h(
        "tr",
        { "data-index": String(index), "data-id": String(m.id) },
        h("td", { class: "tv-name", title: m.name }, shortName(m.name)),
        h("td", { class: "tv-name" }, this.host.trackLabel(m.track)),
        h("td", { class: "num" }, formatInstant(m.start_ns)),
        h("td", { class: "num" }, m.dur_ns === 0 ? "instant" : formatDuration(m.dur_ns, DURATION_DIGITS)),
      );
      row.addEventListener("click", () => this.host.pick(index));
      body.append(row);
    }
    this.el.append(h("table", { class: "tv-summary tv-results-table" }, h("thead", {}, head), body));
    this.markCurrent();
  }

  /** Marks the current match's row and scrolls it into view; false when it is not listed. */
  private markCurrent(): boolean {
    this.el.querySelector("tr.current")?.classList.remove("current");
    const row = this.el.querySelector<HTMLElement>(`tr[data-index="${this.current}"]`);
    if (!row) return this.current < 0;
    row.classList.add("current");
    // Vertically only: scrollIntoView would also scroll the page's boxes around the list.
    const top = row.offsetTop - this.el.clientHeight / 2;
    if (row.offsetTop < this.el.scrollTop + 24 || row.offsetTop > this.el.scrollTop + this.el.clientHeight - 24) this.el.scrollTop = Math.max(0, top);
    return true;
  }
}
