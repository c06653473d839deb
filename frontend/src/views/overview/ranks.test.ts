// @vitest-environment happy-dom
import { describe, expect, it } from "vitest";
import type { CriticalPathHost, OverviewLink, OverviewRanks, TraceCriticalPath } from "../../api/answers.gen.ts";
import { csvText, sortRows } from "../../shared/table.ts";
import { collectiveColumns, criticalPathTable, heatColour, MAX_RANK_COLUMNS, pathStep, ranksSection, stragglerLine } from "./ranks.ts";
import { gpuAnswer } from "./test_answers.ts";

function ranksOf(): OverviewRanks {
  const ranks = gpuAnswer().ranks;
  if (!ranks) throw new Error("the two-rank answer has ranks");
  return ranks;
}

function section(answer = gpuAnswer()) {
  const opened: OverviewLink[] = [];
  const el = ranksSection(answer, { openLink: (link) => opened.push(link) }, "overview_collectives_job_s1.csv");
  return { el, opened };
}

describe("ranks section", () => {
  it("names the straggler with the others' wait per steady step and what it was doing", () => {
    expect(stragglerLine(ranksOf())).toBe("rank-1 is the rank the others wait for most in 1 of 1 steady steps (their wait for it: 30 ms per step; meanwhile it is in load_batch).");
    const none = { ...ranksOf(), steps: ranksOf().steps.map((s) => ({ ...s, collectives: 0 })) };
    expect(stragglerLine(none)).toContain("no rank to name");
  });

  it("draws a rank × step heatmap of the waits, marking the straggler, each cell opening its step", () => {
    const { el, opened } = section();
    const cells = [...el.querySelectorAll("[data-testid=ov-rank-heatmap] tbody tr")].map((tr) => [...tr.querySelectorAll("td")]);
    expect(cells.map((row) => row.map((td) => td.textContent?.replace(" events", "")))).toEqual([["30 ms"], ["1 ms ◆"]]);
    expect(cells[1][0].getAttribute("data-straggler")).toBe("1");
    expect(cells[0][0].getAttribute("style")).toBe(heatColour(30e6, 30e6));
    cells[0][0].querySelector<HTMLButtonElement>("[data-testid=ov-open-trace]")?.click();
    expect(opened).toEqual([{ start_ns: 50_000_000, end_ns: 680_000_000 }]);
  });

  it("lists the collectives sorted by the longest wait, with bandwidth and a CSV of what it shows", () => {
    const { el, opened } = section();
    const rows = [...el.querySelectorAll("[data-testid=ov-collectives-row]")];
    expect(rows.length).toBe(2);
    const first = [...rows[0].querySelectorAll("td")].map((td) => td.textContent);
    expect(first).toEqual(["c10d::allreduce_ events", "5", "all_reduce", "3.81 MiB", "rank-1", "30 ms", "30 ms", "0 ns", "2 ms", "2 GB/s", "2 GB/s", "order 1 in group default"]);
    const second = [...rows[1].querySelectorAll("td")].map((td) => td.textContent);
    expect(second[3]).toBe("not observed"); // no size recorded: never 0
    rows[1].querySelector<HTMLButtonElement>("[data-testid=ov-open-trace]")?.click();
    expect(opened).toEqual([{ start_ns: 399_000_000, end_ns: 401_000_000 }]);
    expect(el.querySelector("[data-testid=ov-collectives-csv]")?.getAttribute("download")).toBe("overview_collectives_job_s1.csv");
    const columns = collectiveColumns(ranksOf().hosts);
    const csv = csvText(columns, sortRows(ranksOf().collectives, columns[5], true)).split("\r\n");
    expect(csv[0]).toBe("Collective,Step,Kind,Size (B),Last arriver,Max wait (ns),Wait rank-0 (ns),Wait rank-1 (ns),Transfer (ns),Algorithm bandwidth (B/s),Bus bandwidth (B/s),Matched by");
    expect(csv[1]).toBe("c10d::allreduce_,5,all_reduce,4000000,rank-1,30000000,30000000,0,2000000,2000000000,2000000000,order 1 in group default");
  });

  it("says what could not be matched, and leaves out per-rank columns past the limit", () => {
    const answer = gpuAnswer();
    if (!answer.ranks) throw new Error("ranks");
    answer.ranks.unmatched = "group default: the ranks hold different numbers of collective calls";
    answer.ranks.collectives = [];
    const { el } = section(answer);
    expect(el.querySelector("[data-testid=ov-rank-unmatched]")?.textContent).toContain("different numbers");
    expect(el.querySelector("[data-testid=ov-collectives-empty]")?.textContent).toBe("No collective was matched across the ranks.");
    const many = Array.from({ length: MAX_RANK_COLUMNS + 1 }, (_, i) => `rank-${i}`);
    expect(collectiveColumns(many).some((c) => c.id.startsWith("wait_"))).toBe(false);
  });

  it("shows each rank's critical path of the step waited longest in, by cause, and the ranks it runs through", async () => {
    const base = 2 ** 32;
    const path = (host: string, ids: number[], causes: Record<string, number>): CriticalPathHost => ({
      host,
      step: 5,
      start_ns: 0,
      end_ns: 100_000_000,
      events: ids.map((id) => ({ id, track: 1, depth: 0, start_ns: 0, dur_ns: 1 })),
      edges: [],
      total_ns: 90_000_000,
      by_cause_ns: { cpu: 0, launch: 0, compute: 0, communication: 10_000_000, kernel_gap: 0, rank_wait: 0, data_loading: 0, idle: 10_000_000, ...causes },
    });
    const answer: TraceCriticalPath = {
      hosts: [path("rank-0", [base + 3, 1], { rank_wait: 30_000_000, cpu: 50_000_000 }), path("rank-1", [base + 3, base + 4], { data_loading: 80_000_000 })],
    };
    expect(pathStep(ranksOf())?.step).toBe(5);
    expect(pathStep({ ...ranksOf(), steps: ranksOf().steps.map((s) => ({ ...s, steady: false })) })).toBeUndefined();
    const asked: number[] = [];
    const el = ranksSection(gpuAnswer(), { openLink: () => {}, loadCriticalPath: async (step) => (asked.push(step), answer) }, "c.csv");
    await Promise.resolve();
    await Promise.resolve();
    expect(asked).toEqual([5]);
    const table = el.querySelector("[data-testid=ov-rank-path]");
    expect([...(table?.querySelectorAll("th") ?? [])].map((th) => th.textContent)).toEqual(["Rank", "Step time", "CPU", "Communication", "Waiting for another rank", "Data loading", "Idle", "Path through"]);
    const rows = [...el.querySelectorAll("[data-testid=ov-rank-path-row]")].map((tr) => [...tr.querySelectorAll("td")].map((td) => td.textContent));
    expect(rows[0]).toEqual(["rank-0", "100 ms", "50 ms (50%)", "10 ms (10%)", "30 ms (30%)", "0 ns (0%)", "10 ms (10%)", "rank-1 → rank-0"]);
    expect(rows[1][7]).toBe("rank-1");
    const single = criticalPathTable({ hosts: [{ ...answer.hosts[0], by_cause_ns: { cpu: 90_000_000, idle: 10_000_000 } }, answer.hosts[1]] });
    expect(single.querySelector("tbody tr td[title]")?.getAttribute("title")).toContain("no collective joins it");
    expect(section().el.querySelector("[data-testid=ov-rank-path]")).toBeNull(); // no loader: not shown
  });
});
