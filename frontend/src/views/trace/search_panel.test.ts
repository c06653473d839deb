// @vitest-environment happy-dom
import { describe, expect, it, vi } from "vitest";
import { ApiError } from "../../api/client.ts";
import type { SearchResponse } from "../../api/types.ts";
import type { SearchQuery } from "./search.ts";
import { COUNT_DELAY_MS, SEARCH_LIMIT, SearchPanel } from "./search_panel.ts";

/** A server holding `total` matches of any query, match i being event 100 + i. */
function panel(total: number) {
  const asked: { query: string; offset: number }[] = [];
  const queries: SearchQuery[] = [];
  const jumped: number[] = [];
  const search = async (q: SearchQuery, limit: number, offset: number): Promise<SearchResponse> => {
    const query = q.text;
    asked.push({ query, offset });
    queries.push(q);
    const n = Math.max(0, Math.min(limit, total - offset));
    // Match 1 is the one named exactly as the query; the others only contain it.
    const matches = Array.from({ length: n }, (_, i) => ({ id: 100 + offset + i, name: offset + i === 1 ? query : `${query}.${offset + i}` }));
    return { query, total, offset, matches: matches.map((m, i) => ({ ...m, track: i % 2, start_ns: 10 * (offset + i), dur_ns: 100 - i })) } as unknown as SearchResponse;
  };
  let left = 0;
  const p = new SearchPanel({ search, trackLabel: (t) => `track ${t}`, jumpTo: async (id) => void jumped.push(id), leave: () => left++ });
  const input = p.el.querySelector("[data-testid=search-input]") as HTMLInputElement;
  const count = () => p.el.querySelector("[data-testid=search-count]")?.textContent;
  return { p, input, count, asked, queries, jumped, left: () => left };
}

const settle = () => new Promise((r) => setTimeout(r, 0));

describe("SearchPanel", () => {
  it("goes first to the event named exactly as a linked query, then walks on", async () => {
    const s = panel(3);
    await s.p.searchFor("fusion");
    expect(s.input.value).toBe("fusion");
    expect(s.count()).toBe("2 / 3");
    await s.p.step(1);
    expect(s.jumped).toEqual([101, 102]);
    expect(s.asked).toEqual([{ query: "fusion", offset: 0 }]);
  });

  it("walks the matches of a query, wrapping at both ends", async () => {
    const s = panel(3);
    s.input.value = "kernel";
    await s.p.step(1);
    await s.p.step(1);
    expect(s.count()).toBe("2 / 3");
    await s.p.step(-1);
    await s.p.step(-1);
    expect(s.count()).toBe("3 / 3");
    expect(s.jumped).toEqual([100, 101, 100, 102]);
    expect(s.asked).toEqual([{ query: "kernel", offset: 0 }]);
  });

  it("fetches the page that holds a match past the first page", async () => {
    const s = panel(SEARCH_LIMIT + 500);
    s.input.value = "op";
    await s.p.step(-1);
    expect(s.asked.map((a) => a.offset)).toEqual([0, SEARCH_LIMIT]);
    expect(s.jumped).toEqual([100 + SEARCH_LIMIT + 499]);
    expect(s.count()).toBe("1,500 / 1,500");
  });

  it("starts over for a new query and says when nothing matches", async () => {
    const s = panel(0);
    s.input.value = "nothing";
    await s.p.step(1);
    expect(s.count()).toBe("no matches");
    s.input.value = "  ";
    await s.p.step(1);
    expect(s.count()).toBe("");
    expect(s.asked).toHaveLength(1);
  });

  it("leaves a search the server superseded (409) to the newer one, and shows other failures", async () => {
    const answers: Error[] = [new ApiError("trace/search: superseded (HTTP 409)", 409, "trace/search"), new Error("the server is busy searching; try again")];
    const p = new SearchPanel({
      search: async () => {
        throw answers.shift();
      },
      trackLabel: () => "",
      jumpTo: async () => {},
      leave: () => {},
    });
    const input = p.el.querySelector("[data-testid=search-input]") as HTMLInputElement;
    const count = () => p.el.querySelector("[data-testid=search-count]")?.textContent;
    input.value = "conv";
    await p.step(1);
    expect(count()).toBe("searching…");
    await p.step(1);
    expect(count()).toBe("the server is busy searching; try again");
  });

  it("steps on Enter, back on Shift+Enter, and leaves on Esc keeping the query", async () => {
    const s = panel(5);
    s.input.value = "x";
    const key = (k: string, shiftKey = false) => s.input.dispatchEvent(new KeyboardEvent("keydown", { key: k, shiftKey, bubbles: true }));
    let reachedDocument = 0;
    document.addEventListener("keydown", () => reachedDocument++);
    key("Enter");
    await new Promise((r) => setTimeout(r, 0));
    key("Enter", true);
    await new Promise((r) => setTimeout(r, 0));
    expect(s.jumped).toEqual([100, 104]);
    // Enter hands the keys back to the timeline.
    expect(s.left()).toBe(2);
    key("Escape");
    expect(s.left()).toBe(3);
    expect(s.input.value).toBe("x");
    expect(reachedDocument).toBe(0);
  });

  it("counts the matches once typing pauses, asking once for several keystrokes", async () => {
    vi.useFakeTimers();
    try {
      const s = panel(42);
      for (const text of ["g", "ge", "gemm"]) {
        s.input.value = text;
        s.input.dispatchEvent(new Event("input"));
        vi.advanceTimersByTime(COUNT_DELAY_MS / 2);
      }
      expect(s.asked).toEqual([]);
      await vi.advanceTimersByTimeAsync(COUNT_DELAY_MS);
      expect(s.asked).toEqual([{ query: "gemm", offset: 0 }]);
      expect(s.count()).toBe("42 matches");
      // Enter walks the page already held.
      await s.p.step(1);
      expect(s.asked).toHaveLength(1);
      expect(s.count()).toBe("1 / 42");
    } finally {
      vi.useRealTimers();
    }
  });

  it("sends argument filters and the regex toggle to the server", async () => {
    const s = panel(3);
    s.input.value = "gemm stream:7";
    (s.p.el.querySelector("[data-testid=search-regex]") as HTMLButtonElement).click();
    await s.p.step(1);
    expect(s.queries.at(-1)).toEqual({ text: "gemm", regex: true, arg: "stream:7" });
  });

  it("lists the matches, sorts them and goes to a clicked one; arrows step through them", async () => {
    const s = panel(4);
    (s.p.el.querySelector("[data-testid=search-list-toggle]") as HTMLButtonElement).click();
    s.input.value = "op";
    await s.p.step(1);
    const rows = () => [...s.p.results.el.querySelectorAll("tbody tr")].map((r) => (r as HTMLElement).dataset.index);
    expect(rows()).toEqual(["0", "1", "2", "3"]);
    expect(s.p.results.el.querySelector("tr.current")?.getAttribute("data-index")).toBe("0");
    (s.p.results.el.querySelector("th[data-sort=duration]") as HTMLElement).click();
    // Longest first: durations fall with the index.
    expect(rows()).toEqual(["0", "1", "2", "3"]);
    (s.p.results.el.querySelector("th[data-sort=track]") as HTMLElement).click();
    expect(rows()).toEqual(["0", "2", "1", "3"]);
    (s.p.results.el.querySelector('tr[data-index="2"]') as HTMLElement).click();
    await settle();
    expect(s.jumped).toEqual([100, 102]);
    s.input.dispatchEvent(new KeyboardEvent("keydown", { key: "ArrowDown" }));
    await settle();
    s.p.results.el.dispatchEvent(new KeyboardEvent("keydown", { key: "ArrowUp" }));
    await settle();
    expect(s.jumped).toEqual([100, 102, 103, 102]);
    expect(s.count()).toBe("3 / 4");
    expect(s.left()).toBe(0);
  });

  it("takes a linked name literally, colons included", async () => {
    const s = panel(2);
    await s.p.searchFor("nccl:all_reduce");
    expect(s.queries).toEqual([{ text: "nccl:all_reduce", regex: false, arg: "" }]);
  });
});
