// @vitest-environment happy-dom
import { describe, expect, it } from "vitest";
import type { CompareMemoryDevice } from "../../api/answers.gen.ts";
import { memorySection, peakWhere, signedBytes } from "./memory.ts";
import { demoAnswer } from "./test_answers.ts";

/** The `memory` rows of the compare answer of tests/data/memory's leak capture (run) against its peak
 * capture (base), as the route gives them, three ops per side. */
const ROWS: CompareMemoryDevice[] = [
  {
    "device": "CPU",
    "base_peak_bytes": 16815160,
    "run_peak_bytes": 8429604,
    "delta_bytes": -8385556,
    "relative": -0.49869022953097086,
    "base_step": "ProfilerStep#3",
    "run_step": "ProfilerStep#5",
    "base_op": "aten::div",
    "run_op": "aten::threshold_backward",
    "base_before_capture_bytes": 0,
    "run_before_capture_bytes": 0,
    "base_ops": [
      {
        "op": "aten::empty",
        "bytes": 16777216,
        "count": 1
      },
      {
        "op": "aten::mm",
        "bytes": 20480,
        "count": 2
      },
      {
        "op": "aten::clamp_min",
        "bytes": 16384,
        "count": 1
      }
    ],
    "run_ops": [
      {
        "op": "aten::mul",
        "bytes": 5242880,
        "count": 5
      },
      {
        "op": "aten::mm",
        "bytes": 1081344,
        "count": 2
      },
      {
        "op": "aten::clamp_min",
        "bytes": 1048576,
        "count": 1
      }
    ]
  }
];

const withMemory = (rows: CompareMemoryDevice[]) => ({ ...demoAnswer(), memory: rows });

describe("compare memory", () => {
  it("shows each device's peak on both sides, the delta signed, and the ops holding each peak", () => {
    const el = memorySection(withMemory(ROWS));
    const cells = Array.from(el.querySelectorAll("[data-testid=cmp-memory-table] tbody tr[data-device=CPU] > *")).map((c) => c.textContent);
    expect(cells).toEqual(["CPU", "16 MiB", "8.04 MiB", "−8 MiB", "−49.9%", "not observed", "not observed", "not observed"]);
    expect(el.querySelector("tbody td.cmp-less")?.textContent).toBe("−8 MiB");
    const base = el.querySelector("[data-testid=cmp-memory-ops] [data-side=base]");
    expect(base?.querySelector(".cmp-memory-peak")?.textContent).toBe("Base: 16 MiB at its peak (ProfilerStep#3, in aten::div)");
    expect(Array.from(base?.querySelectorAll("li") ?? []).map((li) => li.textContent)).toEqual([
      "aten::empty 16 MiB in 1 block",
      "aten::mm 20 KiB in 2 blocks",
      "aten::clamp_min 16 KiB in 1 block",
    ]);
    expect(el.querySelector("[data-testid=cmp-memory-ops] [data-side=run] li")?.textContent).toBe("aten::mul 5 MiB in 5 blocks");
  });

  it("says not observed for a side without the device, and why when neither side has memory", () => {
    const onlyBase: CompareMemoryDevice = { ...ROWS[0], run_peak_bytes: undefined, delta_bytes: undefined, relative: undefined, run_ops: [], run_step: undefined, run_op: undefined };
    const el = memorySection(withMemory([onlyBase]));
    const run = el.querySelector("tbody tr td:nth-child(3)");
    expect([run?.textContent, run?.getAttribute("title")]).toEqual(["not observed", "the run has no allocator events for this device"]);
    expect(el.querySelector("[data-side=run]")?.textContent).toBe("Run: not observed");
    const none = memorySection({ ...demoAnswer(), memory: [], memory_reason: "memory not observed on either side: …" });
    expect(none.querySelector("[data-testid=cmp-memory-absent]")?.textContent).toBe("not observed — memory not observed on either side: …");
  });

  it("writes signed bytes and where a peak is", () => {
    expect([signedBytes(16 * 1024 * 1024), signedBytes(-1024), signedBytes(0)]).toEqual(["+16 MiB", "−1 KiB", "0 B"]);
    expect(peakWhere(undefined, undefined)).toBe("at its peak (outside every step, in no host op)");
  });
});
