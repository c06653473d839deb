// @vitest-environment happy-dom
import { describe, expect, it } from "vitest";
import type { SummaryResponse, SummaryRow } from "../../api/types.ts";
import { shareText, sortRows, SummaryTable, tableText } from "./summary_table.ts";

const row = (name: string, count: number, total: number): SummaryRow => ({ name, count, total_ns: total, self_ns: total / 2, avg_ns: total / count, min_ns: 1, max_ns: total });
const LONG = "void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl<at::native::AddFunctor<float> > >(int, T)";
const resp = { rows: [row("b", 2, 300), row(LONG, 1, 500), row('say "hi", x', 3, 100)], num_names: 3, num_events: 6, truncated: false } as SummaryResponse;

describe("the summary table", () => {
  it("says each name's share of the selection's span", () => {
    expect(shareText(250, 1000)).toBe("25.0 %");
    expect(shareText(250, 0)).toBe("");
  });

  it("sorts by any column, the share as the total", () => {
    expect(sortRows(resp.rows, "share", true).map((r) => r.total_ns)).toEqual([500, 300, 100]);
    expect(sortRows(resp.rows, "count", false).map((r) => r.count)).toEqual([1, 2, 3]);
  });

  it("copies as TSV and CSV with raw nanoseconds and quoted CSV fields", () => {
    const csv = tableText([resp.rows[2]], 1000, "csv").split("\n");
    expect(csv[0]).toBe("name,count,total_ns,percent_of_range,self_ns,avg_ns,min_ns,max_ns");
    expect(csv[1]).toBe('"say ""hi"", x",3,100,10.000,50,33.333333333333336,1,100');
    const tsv = tableText([row("a\tb", 1, 5)], 10, "tsv").split("\n");
    expect(tsv[1].split("\t")).toEqual(["a b", "1", "5", "50.000", "2.5", "5", "1", "5"]);
  });

  it("shortens template names, keeps the full one on hover, and picks a clicked row", () => {
    const picked: string[] = [];
    const steps: number[] = [];
    const table = new SummaryTable({ pickName: (n) => picked.push(n), stepPicked: (d) => steps.push(d) });
    let el = table.render(resp, 1000, null, () => {});
    const nameCell = el.querySelector(`tr[data-name="${CSS.escape(LONG)}"] td`) as HTMLElement;
    expect(nameCell.textContent).toBe("void at::native::elementwise_kernel<…>(int, T)");
    expect(nameCell.title).toBe(LONG);
    nameCell.click();
    expect(picked).toEqual([LONG]);
    el = table.render(resp, 1000, { name: LONG, index: 0, total: 4, more: false }, () => {});
    expect(el.querySelector("tr.picked")?.getAttribute("data-name")).toBe(LONG);
    expect(el.querySelector("[data-testid=picked]")?.textContent).toContain("1 / 4");
    (el.querySelector("[data-testid=picked-next]") as HTMLElement).click();
    expect(steps).toEqual([1]);
  });
});
