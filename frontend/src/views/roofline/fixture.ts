/** A small roofline answer for the unit tests: a device with known compute, HBM and VMEM-read peaks,
 * a CMEM peak without traffic and a level with traffic but no peak; ops measured, estimated from
 * shapes, without FLOPs, not observed and above a roof. Ridge points: HBM 1000, VMEM read 100 FLOP/B.
 * `mixedPrecision` makes it a GPU whose ops run at a bf16 and an fp32 roof, and one not known. */

import type { RooflineAnswer, RooflineFigures, RooflineOpRow } from "./api.ts";

function figures(partial: Partial<RooflineFigures>): RooflineFigures {
  return { bandwidth: {}, intensity: {}, bandwidth_utilization: {}, ...partial };
}

function op(rank: number, partial: Partial<RooflineOpRow>): RooflineOpRow {
  return {
    rank,
    name: `op${rank}`,
    category: "fusion",
    program: "7",
    occurrences: 10,
    total_time_ns: 1e6,
    avg_time_ns: 1e5,
    self_time_ns: 1e6,
    avg_self_time_ns: 1e5,
    time_fraction: 0.1,
    cumulative_time_fraction: 0.1 * rank,
    bytes_by_level: {},
    figures: figures({}),
    source: "profile",
    search: `op${rank}`,
    in_program: true,
    transfer: false,
    ...partial,
  };
}

export function rooflineAnswer(overrides: Partial<RooflineAnswer> = {}): RooflineAnswer {
  return {
    subject: "run 'job' session 's1'",
    observed: true,
    device: {
      name: "TPU test",
      kind: "tpu",
      devices: 2,
      device_planes: 4,
      flops: { peak: { value: 1e15, unit: "FLOP/s", source: "from the profile" } },
      roof_precision: "peak",
      roofs: ["peak"],
      bandwidth: {
        hbm: { value: 1e12, unit: "B/s", source: "from the profile" },
        vmem_read: { value: 1e13, unit: "B/s", source: "user override" },
        cmem_read: { value: 5e12, unit: "B/s", source: "from the profile" },
      },
      ridge_points: { hbm: 1000, vmem_read: 100, cmem_read: 200 },
      levels: { hbm: "HBM", vmem_read: "VMEM read", cmem_read: "CMEM read", sram_read: "SRAM read" },
      attributes: { megacore: "no" },
    },
    include_infeed: true,
    steps: [1, 2],
    step_source: "the devices' Steps lines",
    program: [
      {
        step: "Total",
        device_time_ns: 4e6,
        time_per_device_ns: 2e6,
        wall_time_ns: 2.5e6,
        devices: 2,
        flops: 4e9,
        model_flops: 4e9,
        flops_by_roof: { peak: 4e9 },
        bytes_by_level: { hbm: 2e9 },
        coverage: 0.8,
        figures: figures({
          flop_rate: 1e12,
          bandwidth: { hbm: 5e11 },
          intensity: { hbm: 2 },
          flop_utilization: 0.001,
          roof: "peak",
          bandwidth_utilization: { hbm: 0.5 },
          bound_by: "hbm",
          roofline_efficiency: 0.5,
        }),
        source: "profile",
      },
    ],
    ops: [
      op(1, {
        name: "fusion.1",
        flops: 1e9,
        bytes_by_level: { hbm: 1e9, vmem_read: 1e8, sram_read: 1e7 },
        figures: figures({
          flop_rate: 1.23e13,
          bandwidth: { hbm: 1.52e12, vmem_read: 1e11, sram_read: 1e10 },
          intensity: { hbm: 0.125, vmem_read: 10, sram_read: 100 },
          flop_utilization: 0.0123,
          roof: "peak",
          bandwidth_utilization: { hbm: 0.76, vmem_read: 0.01 },
          bound_by: "hbm",
          roofline_efficiency: 0.76,
        }),
      }),
      op(2, {
        name: "copy-done",
        category: "copy-done",
        flops: 0,
        bytes_by_level: { hbm: 1e9 },
        figures: figures({ flop_rate: 0, bandwidth: { hbm: 2e10 }, intensity: { hbm: 0 }, flop_utilization: 0, roof: "peak", bandwidth_utilization: { hbm: 0.02 }, bound_by: "hbm", roofline_efficiency: 0.02 }),
      }),
      op(3, {
        name: "aten::mm",
        category: "matmul",
        flops: 2e9,
        bytes_by_level: { hbm: 1e7 },
        figures: figures({ flop_rate: 5e14, bandwidth: { hbm: 2.5e12 }, intensity: { hbm: 200 }, flop_utilization: 0.5, roof: "peak", bandwidth_utilization: { hbm: 2.5 }, bound_by: "hbm", anomaly: "measured HBM bandwidth is 2.5× the roof" }),
        source: "estimated from shapes",
      }),
      op(4, { name: "custom-call", category: "custom-call", source: "no cost stats and no HloProto in this profile" }),
      op(5, {
        name: "copy-start",
        category: "copy-start",
        flops: 0,
        figures: figures({ flop_rate: 0, flop_utilization: 0, roof: "peak" }),
        note: "the profile gives bytes_accessed without a memory-space breakdown",
      }),
    ],
    ops_total: 12,
    warnings: ["no step marker observed"],
    ...overrides,
  };
}

/** The fixture on a GPU with bf16 (1e15) and fp32 (6.7e13) peaks: fusion.1 runs at fp32 (12.3 TFLOP/s:
 * 18.4 % of it), aten::mm at bf16, copy-done at int64_vector (no peak), the Total at bf16 + fp32. */
export function mixedPrecision(): RooflineAnswer {
  const base = rooflineAnswer();
  const device = base.device!;
  const peak = (value: number) => ({ value, unit: "FLOP/s", source: "from the parts table" });
  const roofs: Record<string, string> = { "fusion.1": "fp32", "aten::mm": "bf16", "copy-done": "int64_vector", "copy-start": "bf16" };
  return {
    ...base,
    device: { ...device, kind: "gpu", flops: { bf16: peak(1e15), fp32: peak(6.7e13) }, roof_precision: "bf16", roofs: ["bf16", "fp32", "int64_vector"] },
    program: base.program.map((p) => ({ ...p, flops_by_roof: { bf16: 3e9, fp32: 1e9 }, figures: { ...p.figures, roof: "bf16 + fp32" } })),
    ops: base.ops.map((o) => {
      if (!roofs[o.name]) return o;
      const utilization = o.name === "fusion.1" ? { flop_utilization: 1.23e13 / 6.7e13 } : {};
      return { ...o, figures: { ...o.figures, roof: roofs[o.name], ...utilization } };
    }),
  };
}
