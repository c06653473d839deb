/** The "Find events…" box: Enter / Shift+Enter (or ◀ ▶) walk through every match of the query in
 * time order, a page of matches fetched whenever the walk leaves the page held (search.ts), each
 * match selected and zoomed to on the timeline. A newer search cancels the one in flight: the fetch
 * is aborted, and the server, which knows the viewer's searches by their `client=` id, stops it
 * (answering 409, which nobody waits for). */

import { ApiError } from "../../api/client.ts";
import type { SearchResponse } from "../../api/types.ts";
import { h, isAbort, messageOf } from "../../dom.ts";
import { formatCount } from "../../shared/units.ts";
import { inPage, pageOffset, stepIndex } from "./search.ts";

/** Matches per page asked of the server. */
export const SEARCH_LIMIT = 1000;

export interface SearchHost {
  /** One page of matches; the host names the viewer to the server (`client=`) and retries busy answers. */
  search(query: string, limit: number, offset: number, signal: AbortSignal): Promise<SearchResponse>;
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
  private walk: { query: string; resp: SearchResponse; index: number } | null = null;
  private abort: AbortController | null = null;

  constructor(private readonly host: SearchHost) {
    const prev = h("button", { type: "button", class: "ps-button", title: "Previous match (Shift+Enter)", "data-testid": "search-prev" }, "◀");
    const next = h("button", { type: "button", class: "ps-button", title: "Next match (Enter)", "data-testid": "search-next" }, "▶");
    prev.addEventListener("click", () => void this.step(-1));
    next.addEventListener("click", () => void this.step(1));
    this.input.addEventListener("keydown", (e) => {
      if (e.key === "Enter") {
        e.preventDefault();
        void this.step(e.shiftKey ? -1 : 1);
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
    this.el = h("div", { class: "tv-searchbox" }, this.input, this.count, prev, next);
  }

  /** The query in the box. */
  get query(): string {
    return this.input.value.trim();
  }

  /** Puts `query` in the box without searching (the link also names a selection to keep). */
  fill(query: string): void {
    this.input.value = query;
    this.walk = null;
  }

  /** Puts `query` in the box (from a deep link: another tab naming an op) and goes to the first event
   * named exactly so on the first page of matches, else to the first match; Enter walks on from there. */
  async searchFor(query: string): Promise<void> {
    this.fill(query);
    const resp = await this.page(query, 0);
    if (!resp) return;
    const exact = resp.matches.findIndex((m) => m.name === query);
    this.walk = { query, resp, index: (exact >= 0 ? resp.offset + exact : 0) - 1 };
    await this.step(1);
  }

  /** "/" on the timeline: type a new query. */
  focus(): void {
    this.input.focus();
    this.input.select();
  }

  /** Goes to the next (1) or previous (-1) match of the query in the box. */
  async step(dir: 1 | -1): Promise<void> {
    const query = this.input.value.trim();
    if (!query) {
      this.abort?.abort();
      this.walk = null;
      this.count.textContent = "";
      return;
    }
    if (!this.walk || this.walk.query !== query) {
      const resp = await this.page(query, 0);
      if (!resp) return;
      this.walk = { query, resp, index: -1 };
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
    await this.host.jumpTo(match.id);
  }

  stop(): void {
    this.abort?.abort();
  }

  /** One page of matches; null when it was superseded by a newer request or failed (the count says why). */
  private async page(query: string, offset: number): Promise<SearchResponse | null> {
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
