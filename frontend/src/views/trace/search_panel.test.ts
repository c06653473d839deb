// @vitest-environment happy-dom
import { describe, expect, it } from "vitest";
import { ApiError } from "../../api/client.ts";
import type { SearchResponse } from "../../api/types.ts";
import { SEARCH_LIMIT, SearchPanel } from "./search_panel.ts";

/** A server holding `total` matches of any query, match i being event 100 + i. */
function panel(total: number) {
  const asked: { query: string; offset: number }[] = [];
  const jumped: number[] = [];
  const search = async (query: string, limit: number, offset: number): Promise<SearchResponse> => {
    asked.push({ query, offset });
    const n = Math.max(0, Math.min(limit, total - offset));
    // Match 1 is the one named exactly as the query; the others only contain it.
    const matches = Array.from({ length: n }, (_, i) => ({ id: 100 + offset + i, name: offset + i === 1 ? query : `${query}.${offset + i}` }));
    return { query, total, offset, matches } as unknown as SearchResponse;
  };
  let left = 0;
  const p = new SearchPanel({ search, jumpTo: async (id) => void jumped.push(id), leave: () => left++ });
  const input = p.el.querySelector("[data-testid=search-input]") as HTMLInputElement;
  const count = () => p.el.querySelector("[data-testid=search-count]")?.textContent;
  return { p, input, count, asked, jumped, left: () => left };
}

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
    key("Escape");
    expect(s.left()).toBe(1);
    expect(s.input.value).toBe("x");
    expect(reachedDocument).toBe(0);
  });
});
