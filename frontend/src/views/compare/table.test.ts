import { describe, expect, it } from "vitest";
import { type Column, csvFileName, csvText, nextSort, sortRows } from "./table.ts";

interface Row {
  name: string;
  ns: number | null;
}

const columns: Column<Row>[] = [
  { id: "name", title: "Op", csvTitle: "Op", numeric: false, cell: (r) => ({ value: r.name, text: r.name }) },
  { id: "ns", title: "Self", csvTitle: "Self (ns)", numeric: true, cell: (r) => (r.ns === null ? { value: null, text: "not observed", title: "why" } : { value: r.ns, text: `${r.ns} ns` }) },
];
const rows: Row[] = [
  { name: "b", ns: 2 },
  { name: "=cmd()", ns: null },
  { name: "a, with comma", ns: 0.1 + 0.2 },
];

describe("sorting", () => {
  it("sorts numbers and texts, absent cells last either way", () => {
    expect(sortRows(rows, columns[1], true).map((r) => r.name)).toEqual(["b", "a, with comma", "=cmd()"]);
    expect(sortRows(rows, columns[1], false).map((r) => r.name)).toEqual(["a, with comma", "b", "=cmd()"]);
    expect(sortRows(rows, columns[0], false).map((r) => r.name)).toEqual(["=cmd()", "a, with comma", "b"]);
  });

  it("reverses the same column, starts numbers largest first and texts A to Z", () => {
    expect(nextSort({ column: "ns", descending: true }, columns[1])).toEqual({ column: "ns", descending: false });
    expect(nextSort({ column: "ns", descending: true }, columns[0])).toEqual({ column: "name", descending: false });
    expect(nextSort({ column: "name", descending: false }, columns[1])).toEqual({ column: "ns", descending: true });
  });
});

describe("CSV", () => {
  it("writes units in the header, plain numbers, quoted text and no formulas", () => {
    expect(csvText(columns, rows)).toBe('Op,Self (ns)\r\nb,2\r\n\'=cmd(),not observed\r\n"a, with comma",0.3\r\n');
  });

  it("names the file after the table and both runs", () => {
    expect(csvFileName("host_ops", "runs/slow input", "fixed#2")).toBe("compare_host_ops_runs_slow_input_vs_fixed_2.csv");
  });
});
