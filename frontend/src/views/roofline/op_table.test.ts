// @vitest-environment happy-dom
import { describe, expect, it } from "vitest";
import type { RooflineOpRow } from "./api.ts";
import { type Column, opColumns, rooflineContext } from "./cells.ts";
import { rooflineAnswer } from "./fixture.ts";
import { ANY, csvFileName, csvText, filterOps, listingText, NOT_BOUND, OpTable, sortRows } from "./op_table.ts";

const answer = rooflineAnswer();
const ctx = rooflineContext(answer);
const columns = opColumns(ctx);
const column = (id: string) => columns.find((c) => c.id === id) as Column<RooflineOpRow>;
const names = (rows: RooflineOpRow[]) => rows.map((r) => r.name);
const all = { category: ANY, bound: ANY, name: "" };

describe("op table filter", () => {
  it("filters by category, bound resource and part of the name", () => {
    expect(names(filterOps(answer.ops, { ...all, category: "copy-done" }))).toEqual(["copy-done"]);
    expect(names(filterOps(answer.ops, { ...all, bound: "hbm" }))).toEqual(["fusion.1", "copy-done", "aten::mm"]);
    expect(names(filterOps(answer.ops, { ...all, bound: NOT_BOUND }))).toEqual(["custom-call", "copy-start"]);
    expect(names(filterOps(answer.ops, { ...all, name: "  COPY " }))).toEqual(["copy-done", "copy-start"]);
    expect(names(filterOps(answer.ops, { category: "copy-done", bound: "hbm", name: "start" }))).toEqual([]);
  });
});

describe("op table sort", () => {
  it("sorts by any column, numbers by value and text by letters, stably", () => {
    expect(names(sortRows(answer.ops, column("flop_rate"), true))).toEqual(["aten::mm", "fusion.1", "copy-done", "copy-start", "custom-call"]);
    expect(names(sortRows(answer.ops, column("name"), false))).toEqual(["aten::mm", "copy-done", "copy-start", "custom-call", "fusion.1"]);
    expect(names(sortRows(answer.ops, column("rank"), true))).toEqual(["copy-start", "custom-call", "aten::mm", "copy-done", "fusion.1"]);
    // equal keys keep the answer's order (rank)
    expect(names(sortRows(answer.ops, column("occurrences"), true))).toEqual(names(answer.ops));
  });

  it("puts figures that were not observed last, whichever the direction", () => {
    const up = names(sortRows(answer.ops, column("bw:hbm"), false));
    const down = names(sortRows(answer.ops, column("bw:hbm"), true));
    expect(up).toEqual(["copy-done", "fusion.1", "aten::mm", "custom-call", "copy-start"]);
    expect(down).toEqual(["aten::mm", "fusion.1", "copy-done", "custom-call", "copy-start"]);
  });
});

describe("op table CSV", () => {
  it("holds exactly the rows and columns shown, numbers plain in the unit the header names", () => {
    const rows = sortRows(filterOps(answer.ops, { ...all, bound: "hbm" }), column("flop_rate"), true);
    const shown = [column("rank"), column("name"), column("total_time"), column("time_share"), column("flop_rate"), column("oi:hbm"), column("bound"), column("efficiency"), column("source")];
    const lines = csvText(shown, rows).split("\r\n");
    expect(lines[0]).toBe("#,Op,Total time (ns),% of time,FLOP rate (FLOP/s),HBM operational intensity (FLOP/B),Bound by,Roofline efficiency (%),Costs");
    expect(lines.slice(1)).toEqual([
      "3,aten::mm,1000000,10,500000000000000,200,HBM,above the roof,estimated from shapes",
      "1,fusion.1,1000000,10,12300000000000,0.125,HBM,76,profile",
      "2,copy-done,1000000,10,0,0,HBM,2,profile",
      "",
    ]);
  });

  it("says not observed rather than 0, and quotes what a spreadsheet would misread", () => {
    const odd = { ...answer.ops[3], name: '=cmd|"calc"!A1', source: "no costs, sorry" } as RooflineOpRow;
    const text = csvText([column("name"), column("flop_rate"), column("source")], [odd]);
    expect(text).toBe('Op,FLOP rate (FLOP/s),Costs\r\n"\'=cmd|""calc""!A1",not observed,"no costs, sorry"\r\n');
    expect(csvText(columns, answer.ops).split("\r\n")[0]).toContain("% of peak VMEM read bandwidth,");
  });

  it("names the file after the run, session and step", () => {
    expect(csvFileName("job/run 1", "2026_11_30", null)).toBe("roofline_ops_job_run_1_2026_11_30.csv");
    expect(csvFileName(".", "s", 3)).toBe("roofline_ops_._s_step3.csv");
  });
});

describe("op table", () => {
  it("says how many of how many ops it shows", () => {
    expect(listingText(5, 5, 12)).toBe("showing 5 of 12 ops; the 5 with the most self time are listed");
    expect(listingText(2, 5, 12)).toBe("showing 2 of 12 ops; the 5 with the most self time are listed; 3 hidden by the filter");
    expect(listingText(5, 5, 5)).toBe("5 ops");
    expect(listingText(1_000, 1_000, 1_532)).toBe("showing 1,000 of 1,532 ops; the 1,000 with the most self time are listed");
  });

  it("sorts on a header click, filters on input, and offers the shown rows as a CSV link", () => {
    const filtered: string[][] = [];
    const selected: number[] = [];
    const opened: string[] = [];
    const table = new OpTable({ select: (r) => selected.push(r), openTrace: (op) => opened.push(op.search), filtered: (rows) => filtered.push(names(rows)) });
    document.body.append(table.el);
    table.setAnswer(answer, ctx, "ops.csv");
    const rowNames = () => Array.from(table.el.querySelectorAll("tbody tr")).map((tr) => tr.querySelector(".rf-name")?.textContent);
    expect(rowNames()).toEqual(names(answer.ops));
    expect(table.el.querySelector("[data-testid=rf-listing]")?.textContent).toBe("showing 5 of 12 ops; the 5 with the most self time are listed");
    (table.el.querySelector("button[data-sort=flop_rate]") as HTMLButtonElement).click();
    expect(rowNames()).toEqual(["aten::mm", "fusion.1", "copy-done", "copy-start", "custom-call"]);
    expect(table.el.querySelector("th[aria-sort]")?.getAttribute("aria-sort")).toBe("descending");
    const input = table.el.querySelector("[data-testid=rf-filter-name]") as HTMLInputElement;
    input.value = "copy";
    input.dispatchEvent(new Event("input"));
    expect(rowNames()).toEqual(["copy-done", "copy-start"]);
    expect(filtered.at(-1)).toEqual(["copy-done", "copy-start"]);
    const link = table.el.querySelector("[data-testid=rf-csv]") as HTMLAnchorElement;
    expect(link.getAttribute("download")).toBe("ops.csv");
    expect(link.getAttribute("href")).toMatch(/^blob:/);
    (table.el.querySelector("tbody tr") as HTMLElement).click();
    (table.el.querySelector("[data-testid=rf-open-trace]") as HTMLButtonElement).click();
    expect(selected).toEqual([2]);
    expect(opened).toEqual(["op2"]);
    table.highlight(5);
    expect(table.el.querySelector("tr.rf-selected")?.getAttribute("data-rank")).toBe("5");
    table.destroy();
  });

  it("offers a graph link on the rows of XLA ops (those of a program), which opens their events", () => {
    const opened: string[] = [];
    const table = new OpTable({ select: () => {}, openTrace: (op) => opened.push(op.search), filtered: () => {} });
    const kernelOnly = { ...answer, ops: answer.ops.map((op) => (op.name === "aten::mm" ? { ...op, program: "" } : op)) };
    table.setAnswer(kernelOnly, ctx, "ops.csv");
    const withGraph = Array.from(table.el.querySelectorAll("tbody tr"))
      .filter((tr) => tr.querySelector("[data-testid=rf-open-graph]"))
      .map((tr) => tr.querySelector(".rf-name")?.textContent);
    expect(withGraph).toEqual(names(answer.ops).filter((name) => name !== "aten::mm"));
    const first = kernelOnly.ops.find((op) => op.program) as RooflineOpRow;
    (table.el.querySelector("[data-testid=rf-open-graph]") as HTMLButtonElement).click();
    expect(opened).toEqual([first.search]);
    table.destroy();
  });
});
