// @vitest-environment happy-dom
import { afterEach, describe, expect, it } from "vitest";
import { h } from "../dom.ts";
import { type Cell, type Column, csvFileName, csvNumber, csvText, headerCell, nextSort, SortableTable, sortRows } from "./table.ts";

interface Op {
  name: string;
  ns: number | null;
}

const name: Column<Op> = { id: "name", title: "Op", csvTitle: "Op", numeric: false, cell: (r) => ({ kind: "text", text: r.name }) };
const caseless: Column<Op> = { ...name, id: "caseless", cell: (r) => ({ kind: "text", text: r.name, sortText: r.name.toLowerCase() }) };
const self: Column<Op> = {
  id: "self",
  title: "Self",
  csvTitle: "Self (ns)",
  numeric: true,
  help: "exclusive time",
  cell: (r): Cell => (r.ns === null ? { kind: "absent", text: "not observed", reason: "no events" } : { kind: "number", value: r.ns, text: `${r.ns} ns`, csv: csvNumber(r.ns) }),
};
const rank: Column<Op> = { ...self, id: "rank", firstDescending: false };
const ops: Op[] = [
  { name: "b", ns: 2 },
  { name: "gone", ns: null },
  { name: "B", ns: 2 },
  { name: "a", ns: 0.1 + 0.2 },
];
const names = (rows: readonly Op[]) => rows.map((r) => r.name);

describe("sortRows", () => {
  it("puts absent cells last whichever the direction and keeps ties in their order", () => {
    expect(names(sortRows(ops, self, true))).toEqual(["b", "B", "a", "gone"]);
    expect(names(sortRows(ops, self, false))).toEqual(["a", "b", "B", "gone"]);
  });

  it("sorts texts by their text, or by sortText when the column gives one", () => {
    // localeCompare puts "b" before "B"; in lower case they tie and keep their order.
    expect(names(sortRows([ops[2], ops[0]], name, false))).toEqual(["b", "B"]);
    expect(names(sortRows([ops[2], ops[0]], caseless, false))).toEqual(["B", "b"]);
    expect(names(sortRows(ops, name, true))).toEqual(["gone", "B", "b", "a"]);
  });
});

describe("nextSort", () => {
  it("flips the same column; a new one starts from firstDescending, else numbers largest first", () => {
    expect(nextSort({ column: "self", descending: true }, self)).toEqual({ column: "self", descending: false });
    expect(nextSort({ column: "self", descending: true }, name)).toEqual({ column: "name", descending: false });
    expect(nextSort({ column: "name", descending: false }, self)).toEqual({ column: "self", descending: true });
    expect(nextSort({ column: "name", descending: false }, rank)).toEqual({ column: "rank", descending: false });
  });
});

describe("CSV", () => {
  it("writes the cells' CSV numbers and words, quotes per RFC 4180 and disarms formulas", () => {
    const rows: Op[] = [{ name: "=HYPERLINK(1)", ns: 1.5 }, { name: 'say "hi", then', ns: null }, { name: " padded", ns: 0.1 + 0.2 }, { name: "-1", ns: 1e21 }];
    expect(csvText([name, self], rows)).toBe(["Op,Self (ns)", "'=HYPERLINK(1),1.5", '"say ""hi"", then",not observed', '" padded",0.3', "'-1,1e+21", ""].join("\r\n"));
    expect(csvText([name], [])).toBe("Op\r\n");
  });

  it("writes numbers to 12 significant digits", () => {
    expect(csvNumber(0.0238 * 100)).toBe("2.38");
    expect(csvNumber(1 / 3)).toBe("0.333333333333");
    expect(csvNumber(-0)).toBe("0");
  });

  it("joins file-name-safe parts", () => {
    expect(csvFileName("overview", "host_ops", "runs/a b", "__")).toBe("overview_host_ops_runs_a_b_run.csv");
    expect(csvFileName("roofline_ops", ".", "s", "step3")).toBe("roofline_ops_._s_step3.csv");
  });
});

describe("headerCell", () => {
  it("is a plain header without sorting, a sort button with", () => {
    const plain = headerCell(self);
    expect(plain.outerHTML).toBe('<th class="num" title="exclusive time">Self</th>');
    const clicked: string[] = [];
    const th = headerCell(self, { prefix: "xy", sort: { column: "self", descending: false }, onSort: (id) => clicked.push(id) });
    expect(th.getAttribute("aria-sort")).toBe("ascending");
    const button = th.querySelector("button") as HTMLButtonElement;
    expect([button.className, button.textContent]).toEqual(["xy-sort", "Self ▲"]);
    button.click();
    expect(clicked).toEqual(["self"]);
    expect(headerCell(name, { prefix: "xy", sort: { column: "self", descending: true }, onSort: () => {} }).hasAttribute("aria-sort")).toBe(false);
  });
});

describe("SortableTable", () => {
  const create = URL.createObjectURL;
  const revoke = URL.revokeObjectURL;
  afterEach(() => {
    URL.createObjectURL = create;
    URL.revokeObjectURL = revoke;
  });

  function table(rendered: string[] = []): SortableTable<Op> {
    return new SortableTable<Op>({
      prefix: "xy",
      testId: "xy-ops",
      csvTestId: "xy-ops-csv",
      sort: { column: "self", descending: true },
      row: (op, columns) => h("tr", { "data-name": op.name }, ...columns.map((c) => h("td", {}, c.cell(op).text))),
      rendered: () => rendered.push("drawn"),
    });
  }
  const shown = (t: SortableTable<Op>) => Array.from(t.scroller.querySelectorAll("tbody tr")).map((tr) => tr.getAttribute("data-name"));

  it("draws the rows in the sort, re-sorts on a header click and says what it shows", () => {
    const rendered: string[] = [];
    const t = table(rendered);
    const el = t.section("Ops", [h("select", { "data-testid": "control" })]);
    t.setRows([name, self], ops, "4 ops", "ops.csv", "No ops.");
    expect(el.className).toBe("xy-table-section");
    expect(Array.from(el.querySelector(".xy-table-head")?.children ?? []).map((c) => c.tagName + (c.getAttribute("data-testid") ?? c.className))).toEqual([
      "H3",
      "SELECTcontrol",
      "SPANxy-listing",
      "SPANxy-spacer",
      "Axy-ops-csv",
    ]);
    expect(t.listing.textContent).toBe("4 ops");
    expect(t.scroller.querySelector("table")?.getAttribute("data-testid")).toBe("xy-ops-table");
    expect(shown(t)).toEqual(["b", "B", "a", "gone"]);
    t.scroller.querySelector<HTMLButtonElement>("button[data-sort=self]")?.click();
    expect(shown(t)).toEqual(["a", "b", "B", "gone"]);
    t.scroller.querySelector<HTMLButtonElement>("button[data-sort=name]")?.click();
    expect(names(t.shownRows)).toEqual(["a", "b", "B", "gone"]);
    expect(t.scroller.querySelector("th[aria-sort]")?.textContent).toBe("Op ▲");
    expect(rendered.length).toBe(3);
  });

  it("keeps the sort while its column is shown, goes back to the first sort when it is not", () => {
    const t = table();
    t.setRows([name, self], ops, "", "ops.csv", null);
    t.scroller.querySelector<HTMLButtonElement>("button[data-sort=name]")?.click();
    t.setRows([name, self], ops.slice(0, 2), "", "ops.csv", null);
    expect(shown(t)).toEqual(["b", "gone"]);
    t.setRows([self], ops, "", "ops.csv", null);
    expect(shown(t)).toEqual(["b", "B", "a", "gone"]);
    t.setRows([name], ops, "", "ops.csv", null);
    expect(shown(t)).toEqual(names(ops));
  });

  it("shows the empty row only when asked to", () => {
    const t = table();
    t.setRows([name, self], [], "0 ops", "ops.csv", "No ops.");
    const empty = t.scroller.querySelector("[data-testid=xy-ops-empty]");
    expect([empty?.textContent, empty?.getAttribute("colspan"), empty?.className]).toEqual(["No ops.", "2", "xy-hint"]);
    t.setRows([name, self], [], "0 ops", "ops.csv", null);
    expect(t.scroller.querySelectorAll("tbody tr").length).toBe(0);
  });

  it("links the CSV of the rows as shown, and lets the last link go", async () => {
    const blobs: Blob[] = [];
    const revoked: string[] = [];
    URL.createObjectURL = (blob: Blob) => `blob:${blobs.push(blob)}`;
    URL.revokeObjectURL = (url: string) => void revoked.push(url);
    const t = table();
    t.setRows([name, self], ops, "", "ops.csv", null);
    t.scroller.querySelector<HTMLButtonElement>("button[data-sort=self]")?.click();
    expect([t.csvLink.getAttribute("download"), t.csvLink.getAttribute("href")]).toEqual(["ops.csv", "blob:2"]);
    expect(await blobs[1].text()).toBe(csvText([name, self], t.shownRows));
    expect((await blobs[1].text()).split("\r\n")[1]).toBe("a,0.3");
    expect(revoked).toEqual(["blob:1"]);
    t.destroy();
    expect(revoked).toEqual(["blob:1", "blob:2"]);
  });
});
