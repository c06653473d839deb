// @vitest-environment happy-dom
import { describe, expect, it } from "vitest";
import type { OverviewOpRow } from "../../api/answers.gen.ts";
import { hostOpColumns, kernelColumns } from "./op_columns.ts";
import { csvFileName, csvText, DataTable, listingText, nextSort, sortRows } from "./table.ts";
import { cpuAnswer, gpuAnswer } from "./test_answers.ts";

const ops = cpuAnswer().tables.host_ops;
const column = (id: string, byShapes = false) => hostOpColumns(byShapes).find((c) => c.id === id) ?? hostOpColumns(byShapes)[0];

describe("csvText", () => {
  it("writes the units in the header, plain numbers, escapes quotes and formulas", () => {
    const csv = csvText(hostOpColumns(false), ops);
    const lines = csv.split("\r\n");
    expect(csv.endsWith("\r\n")).toBe(true);
    expect(lines[0]).toBe("Host op,Calls,Total (ns),Self (ns),Average (ns),Min (ns),Max (ns),Total % (%),Self % (%)");
    expect(lines[1]).toBe("aten::conv2d,4,1200000,100000,300000,250000,350000,28.57,2.38");
    // A name starting with "=" is not a formula; quotes and commas are quoted (RFC 4180).
    expect(lines[3]).toBe(`"'=cmd, ""quoted""",1,5000,5000,5000,5000,5000,0.12,0.12`);
  });

  it("writes an absent figure as its words, never 0", () => {
    const csv = csvText(hostOpColumns(true), ops.slice(0, 1));
    expect(csv.split("\r\n")[1]).toBe("aten::conv2d,not observed,4,1200000,100000,300000,250000,350000,28.57,2.38");
    const kernels = csvText(kernelColumns(), gpuAnswer().tables.kernels).split("\r\n");
    expect(kernels[0]).toContain("Launched by,Host ops,Grid,Block,Registers per thread,Shared memory (bytes),Est. achieved occupancy (%)");
    expect(kernels[1]).toContain(",nccl:all_reduce,1,16×1×1,640×1×1,96,41744,5");
    expect(kernels[2]).toContain(",not observed,0,not observed,not observed,not observed,not observed,not observed");
  });
});

describe("sortRows", () => {
  it("sorts numbers either way and text A to Z, stably", () => {
    expect(sortRows(ops, column("self"), true).map((r) => r.name)).toEqual(["batch_read", "aten::conv2d", '=cmd, "quoted"']);
    expect(sortRows(ops, column("self"), false).map((r) => r.name)).toEqual(['=cmd, "quoted"', "aten::conv2d", "batch_read"]);
    expect(sortRows(ops, column("name"), false).map((r) => r.name)).toEqual(['=cmd, "quoted"', "aten::conv2d", "batch_read"]);
    const tied: OverviewOpRow[] = [{ ...ops[0], name: "a" }, { ...ops[0], name: "b" }];
    expect(sortRows(tied, column("calls"), true).map((r) => r.name)).toEqual(["a", "b"]);
  });

  it("puts absent figures last whichever the direction", () => {
    const rows = [{ ...ops[0], name: "no shapes" }, { ...ops[1], shapes: "[[2, 3]]" }];
    for (const descending of [true, false]) expect(sortRows(rows, column("shapes", true), descending)[1].name).toBe("no shapes");
  });

  it("a click on a new column starts from its natural end, again flips it", () => {
    expect(nextSort({ column: "total", descending: true }, column("name"))).toEqual({ column: "name", descending: false });
    expect(nextSort({ column: "total", descending: true }, column("calls"))).toEqual({ column: "calls", descending: true });
    expect(nextSort({ column: "calls", descending: true }, column("calls"))).toEqual({ column: "calls", descending: false });
  });
});

describe("listing and file names", () => {
  it("says how many of how many rows are shown", () => {
    expect(listingText(200, 1_532, "host ops")).toBe("showing 200 of 1,532 host ops (the 200 with the most total time)");
    expect(listingText(12, 12, "kernels")).toBe("12 kernels");
  });

  it("keeps file names to safe characters", () => {
    expect(csvFileName("host_ops", "runs/a b", "2026:11")).toBe("overview_host_ops_runs_a_b_2026_11.csv");
  });
});

describe("DataTable", () => {
  function table(): { t: DataTable<OverviewOpRow>; opened: string[] } {
    const opened: string[] = [];
    const t = new DataTable<OverviewOpRow>({ title: "Host ops", what: "host ops", testId: "t", sort: { column: "total", descending: true }, openTrace: (r) => opened.push(r.search), linkTitle: (r) => r.search });
    t.setRows(hostOpColumns(false), ops, 75, "overview_host_ops.csv");
    return { t, opened };
  }
  const names = (el: HTMLElement) => Array.from(el.querySelectorAll("tbody tr")).map((tr) => tr.querySelector(".ov-name")?.textContent);

  it("shows 'showing N of M', sorts on a header click and links each row to its events", () => {
    const { t, opened } = table();
    expect(t.el.querySelector("[data-testid=ov-listing]")?.textContent).toBe("showing 3 of 75 host ops (the 3 with the most total time)");
    expect(names(t.el)).toEqual(["aten::conv2d", "batch_read", '=cmd, "quoted"']);
    t.el.querySelector<HTMLButtonElement>("[data-sort=self]")?.click();
    expect(names(t.el)).toEqual(["batch_read", "aten::conv2d", '=cmd, "quoted"']);
    expect(t.el.querySelector("th[aria-sort]")?.getAttribute("aria-sort")).toBe("descending");
    t.el.querySelector<HTMLButtonElement>("[data-sort=self]")?.click();
    expect(names(t.el)[0]).toBe('=cmd, "quoted"');
    t.el.querySelector<HTMLButtonElement>("tbody tr [data-testid=ov-open-trace]")?.click();
    expect(opened).toEqual(["=cmd"]);
  });

  it("says when there is no row", () => {
    const t = new DataTable<OverviewOpRow>({ title: "Host ops", what: "host ops", testId: "t", sort: { column: "total", descending: true }, openTrace: () => {}, linkTitle: () => "" });
    t.setRows(hostOpColumns(false), [], 0, "x.csv");
    expect(t.el.querySelector("[data-testid=t-empty]")?.textContent).toBe("No host ops in the scope.");
    expect(t.el.querySelector("[data-testid=ov-listing]")?.textContent).toBe("0 host ops");
  });

  it("offers the shown rows, in the shown order, as a CSV download", async () => {
    const blobs: Blob[] = [];
    const create = URL.createObjectURL;
    URL.createObjectURL = (blob: Blob) => {
      blobs.push(blob);
      return `blob:csv-${blobs.length}`;
    };
    try {
      const { t } = table();
      t.el.querySelector<HTMLButtonElement>("[data-sort=name]")?.click();
      const link = t.el.querySelector<HTMLAnchorElement>("[data-testid=t-csv]");
      expect(link?.getAttribute("download")).toBe("overview_host_ops.csv");
      expect(link?.getAttribute("href")).toBe(`blob:csv-${blobs.length}`);
      const text = await blobs[blobs.length - 1].text();
      expect(text.split("\r\n").slice(1, 4).map((line) => line.split(",")[0])).toEqual(['"\'=cmd', "aten::conv2d", "batch_read"]);
      expect(text).toBe(csvText(hostOpColumns(false), t.shownRows));
      t.destroy();
    } finally {
      URL.createObjectURL = create;
    }
  });
});
