import { describe, expect, it } from "vitest";
import type { EventDetails } from "../../api/types.ts";
import { flowLatencies, parseKernelDetails } from "./kernel_details.ts";

describe("kernel details", () => {
  it("reads XPlane's kernel_details into labelled fields", () => {
    expect(parseKernelDetails("regs:32 static_shared:0 dynamic_shared:49152 grid:108,1,1 block:128,1,1 occ_pct:50")).toEqual([
      ["Registers / thread", "32"],
      ["Static shared memory", "0 B"],
      ["Dynamic shared memory", "48 KiB"],
      ["Grid", "108 × 1 × 1"],
      ["Block", "128 × 1 × 1"],
      ["Occupancy", "50 %"],
    ]);
    expect(parseKernelDetails(" grid:16,1,1 block:512,1,1 private_mem:0 group_mem:0 lanes:64")).toContainEqual(["lanes", "64"]);
  });

  it("says the launch → kernel latency from both ends of a flow", () => {
    const launch = { start_ns: 1000, flows_out: [{ id: 2, name: "gemm", track: 1, start_ns: 6200 }], flows_in: [] } as unknown as EventDetails;
    const kernel = { start_ns: 6200, flows_out: [], flows_in: [{ id: 1, name: "cudaLaunchKernel", track: 0, start_ns: 1000 }] } as unknown as EventDetails;
    expect(flowLatencies(launch)).toEqual([["Latency to gemm", "5.2 µs"]]);
    expect(flowLatencies(kernel)).toEqual([["Latency from cudaLaunchKernel", "5.2 µs"]]);
  });
});
