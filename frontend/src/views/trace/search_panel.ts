/** The "Find events…" box: while typing, the number of matches (asked once typing pauses); Enter /
 * Shift+Enter, ↓ / ↑ (or ◀ ▶) walk through every match of the query in time order, a page of
 * matches fetched whenever the walk leaves the page held (search.ts), each match selected and zoomed
 * to on the timeline; ☰ lists the page's matches (search_results.ts), `.*` makes the text a regular
 * expression over names, and `key:value` words filter by argument. A newer search cancels the one
 * in flight: the fetch is aborted, and the server, which knows the viewer's searches by their
 * `client=` id, stops it (answering 409, which nobody waits for). */

import { ApiError } from "../../api/client.ts";
import type { SearchResponse } from "../../api/types.ts";
import { h, isAbort, messageOf } from "../../dom.ts";
import { formatCount } from "../../shared/units.ts";
import { inPage, isEmptyQuery, literalQuery, pageOffset, parseQuery, type SearchQuery, sameQuery, stepIndex } from "./search.ts";
import { SearchResults } from "./search_results.ts";

/** Matches per page asked of the server. */
export const SEARCH_LIMIT = 1000;
/** Typing pauses this long before the count is asked: each keystroke would cancel the last search. */
export const COUNT_DELAY_MS = 250;

export interface SearchHost {
  /** One page of matches; the host names the viewer to the server (`client=`) and retries busy answers. */
  search(query: SearchQuery, limit: number, offset: number, signal: AbortSignal): Promise<SearchResponse>;
  /** "section / track" for a track id (the list of matches). */
  trackLabel(track: number): string;
  /** Select and zoom to the event with this global id. */
  jumpTo(id: number): Promise<void>;
  /** Esc in the box: back to the timeline. */
  leave(): void;
}

export class SearchPanel {
  readonly el: HTMLElement;
  private readonly input = h("input", {
    type: "search",
    class: "tv-search",
    placeholder: "Find events…",
    "aria-label": "Find events",
    "data-testid": "search-input",
  });
  private readonly count = h("span", { class: "tv-search-count", "data-testid": "search-count" });
  private readonly regexToggle = h(
    "button",
    { type: "button", class: "ps-button tv-search-opt", title: "Regular expression over names", "aria-pressed": "false", "data-testid": "search-regex" },
    ".*",
  );
  private readonly listToggle = h(
    "button",
    { type: "button", class: "ps-button tv-search-opt", title: "List the matches", "aria-pressed": "false", "data-testid": "search-list-toggle" },
    "☰",
  );
  /** The list of matches, placed by the viewer beside the timeline. */
  readonly results: SearchResults;
  /** The matches walked: the query asked for the text `box` held, the page held, the match shown. */
  private walk: { query: SearchQuery; box: string; resp: SearchResponse; index: number } | null = null;
  private abort: AbortController | null = null;
  private countTimer: ReturnType<typeof setTimeout> | null = null;

  constructor(private readonly host: SearchHost) {
    this.results = new SearchResults({
      trackLabel: (t) => host.trackLabel(t),
      pick: (index) => void this.goTo(index),
      step: (dir) => void this.step(dir),
    });
    const prev = h("button", { type: "button", class: "ps-button", title: "Previous match (Shift+Enter or ↑)", "data-testid": "search-prev" }, "◀");
    const next = h("button", { type: "button", class: "ps-button", title: "Next match (Enter or ↓)", "data-testid": "search-next" }, "▶");
    prev.addEventListener("click", () => void this.step(-1));
    next.addEventListener("click", () => void this.step(1));
    this.regexToggle.addEventListener("click", () => {
      this.regexToggle.setAttribute("aria-pressed", String(!this.regex));
      this.countSoon(0);
    });
    this.listToggle.addEventListener("click", () => {
      const shown = !this.results.shown;
      this.listToggle.setAttribute("aria-pressed", String(shown));
      this.results.setShown(shown);
    });
    this.input.addEventListener("input", () => this.countSoon(COUNT_DELAY_MS));
    this.input.title = 'Names and argument values; key:value words filter by argument (stream:7, grid:*1024*); "…" keeps a word as text';
    this.input.addEventListener("keydown", (e) => {
      if (e.key === "Enter") {
        e.preventDefault();
        void this.step(e.shiftKey ? -1 : 1).then(() => this.host.leave());
      } else if (e.key === "ArrowDown" || e.key === "ArrowUp") {
        // Through the matches without leaving the box (Enter leaves it for the timeline's keys).
        e.preventDefault();
        void this.step(e.key === "ArrowUp" ? -1 : 1);
      } else if (e.key === "Escape") {
        // Back to the timeline keeping the query (a search field's default clears it), so Enter
        // later goes on from the current match; the field's × clears it.
        e.preventDefault();
        this.input.blur();
        this.host.leave();
      }
      // Keys typed here are text, not the timeline's shortcuts.
      e.stopPropagation();
    });
    this.el = h("div", { class: "tv-searchbox" }, this.input, this.regexToggle, this.count, prev, next, this.listToggle);
  }

  /** The text in the box. */
  get query(): string {
    return this.input.value.trim();
  }

  private get regex(): boolean {
    return this.regexToggle.getAttribute("aria-pressed") === "true";
  }

  /** What the box asks the server. */
  private parsed(): SearchQuery {
    return parseQuery(this.input.value, this.regex);
  }

  /** Puts `query` in the box without searching (the link also names a selection to keep). */
  fill(query: string): void {
    this.input.value = query;
    this.walk = null;
    this.results.show(null, -1);
  }

  /** Puts `query` in the box (from a deep link: another tab naming an op) and goes to the first event
   * named exactly so on the first page of matches, else to the first match; Enter walks on from there.
   * The name is taken literally (op names hold colons); only when nothing is named so is it read as
   * the box reads it, filters included (a link the box itself wrote). */
  async searchFor(query: string): Promise<void> {
    this.fill(query);
    let asked = literalQuery(query);
    let resp = await this.page(asked, 0);
    const parsed = parseQuery(query, false);
    if (resp && resp.total === 0 && parsed.arg) {
      asked = parsed;
      resp = await this.page(asked, 0);
    }
    if (!resp) return;
    const exact = resp.matches.findIndex((m) => m.name === query);
    this.walk = { query: asked, box: this.query, resp, index: (exact >= 0 ? resp.offset + exact : 0) - 1 };
    await this.step(1);
  }

  /** Goes to match `index` (a row of the list). */
  async goTo(index: number): Promise<void> {
    const walk = this.walk;
    if (!walk) return;
    walk.index = index - 1;
    await this.step(1);
  }

  /** Shows the number of matches of the box's query once typing has paused `delayMs`. */
  private countSoon(delayMs: number): void {
    if (this.countTimer) clearTimeout(this.countTimer);
    this.countTimer = setTimeout(() => void this.countMatches(), delayMs);
  }

  private async countMatches(): Promise<void> {
    this.countTimer = null;
    const query = this.parsed();
    if (isEmptyQuery(query)) {
      this.reset();
      return;
    }
    if (this.walk && sameQuery(this.walk.query, query)) return;
    const resp = await this.page(query, 0);
    if (!resp || !sameQuery(query, this.parsed())) return;
    this.walk = { query, box: this.query, resp, index: -1 };
    this.count.textContent = resp.total ? `${formatCount(resp.total)} match${resp.total === 1 ? "" : "es"}` : "no matches";
    this.results.show(resp, -1);
  }

  private reset(): void {
    this.abort?.abort();
    this.walk = null;
    this.count.textContent = "";
    this.results.show(null, -1);
  }

  /** "/" on the timeline: type a new query. */
  focus(): void {
    this.input.focus();
    this.input.select();
  }

  /** Goes to the next (1) or previous (-1) match of the query in the box. */
  async step(dir: 1 | -1): Promise<void> {
    // A walk asks for its own page: a count still waiting would cancel it.
    if (this.countTimer) clearTimeout(this.countTimer);
    // The walk goes on with its own query while the box holds its text (a link's name is literal).
    const query = this.walk && this.walk.box === this.query && this.walk.query.regex === this.regex ? this.walk.query : this.parsed();
    if (isEmptyQuery(query)) {
      this.reset();
      return;
    }
    if (!this.walk || !sameQuery(this.walk.query, query)) {
      const resp = await this.page(query, 0);
      if (!resp) return;
      this.walk = { query, box: this.query, resp, index: -1 };
    }
    const walk = this.walk;
    const index = stepIndex(walk.index, dir, walk.resp.total);
    if (index < 0) {
      this.count.textContent = "no matches";
      return;
    }
    if (!inPage(index, walk.resp.offset, walk.resp.matches.length)) {
      const resp = await this.page(query, pageOffset(index, SEARCH_LIMIT));
      if (!resp || this.walk !== walk) return;
      walk.resp = resp;
    }
    const match = walk.resp.matches[index - walk.resp.offset];
    if (!match) {
      // The trace changed under the search (a re-ingest): start over with the new matches.
      this.walk = null;
      this.count.textContent = "matches changed, press Enter again";
      return;
    }
    walk.index = index;
    this.count.textContent = `${formatCount(index + 1)} / ${formatCount(walk.resp.total)}`;
    this.results.show(walk.resp, index);
    await this.host.jumpTo(match.id);
  }

  stop(): void {
    this.abort?.abort();
    if (this.countTimer) clearTimeout(this.countTimer);
  }

  /** One page of matches; null when it was superseded by a newer request or failed (the count says why). */
  private async page(query: SearchQuery, offset: number): Promise<SearchResponse | null> {
    this.abort?.abort();
    const abort = (this.abort = new AbortController());
    this.count.textContent = "searching…";
    try {
      const resp = await this.host.search(query, SEARCH_LIMIT, offset, abort.signal);
      return abort.signal.aborted ? null : resp;
    } catch (e) {
      // 409: a newer search of this viewer superseded it on the server; that one says what it found.
      const superseded = e instanceof ApiError && e.status === 409;
      if (!isAbort(e) && !superseded) this.count.textContent = messageOf(e);
      return null;
    }
  }
}
