/** The memory answer of allocator GPU_0_bfc of tests/data/xplane/mi300_jax_conv.xplane.pb (a real
 * JAX capture on 8 MI300 GPUs: 20 BFC allocator events, their fragmentation between 0 and 32 %) as
 * `tools.memory.analysis.device` gives it, three rows per table, for the unit tests of `allocator.ts`. */

import type { MemoryAnswer } from "./api.ts";

export function allocatorAnswer(): MemoryAnswer {
  return {
  "observed": true,
  "devices": [
    {
      "host": "mi300",
      "label": "GPU_0_bfc",
      "device_type": -1,
      "device_id": -1,
      "events": 20,
      "start_ns": 1922933.0,
      "end_ns": 139606005.0,
      "allocated": {
        "time_ns": [
          1922933.0,
          45224580.0,
          45518060.0,
          49584106.0,
          62259533.0,
          62263083.0,
          62770283.0,
          63775215.0,
          88405777.0,
          88410147.0,
          89046048.0,
          91275661.0,
          92569643.0,
          92573073.0,
          92976243.0,
          93619144.0,
          138149493.0,
          138154563.0,
          139075844.0,
          139606005.0
        ],
        "bytes": [
          1151099648,
          1730171904,
          1151099648,
          579072768,
          1151099648,
          1730171904,
          1151099648,
          579072768,
          1151099648,
          1730171904,
          1151099648,
          579072768,
          1151099648,
          1730171904,
          1151099648,
          579072768,
          1151099648,
          1730171904,
          1151099648,
          579072768
        ],
        "events": 20
      },
      "reserved_reason": "reserved not observed: every allocator event reports 0 bytes_reserved (the figure XProf shows as stack reserved bytes)",
      "peak": {
        "allocated_bytes": 1730171904,
        "time_ns": 45224580.0,
        "step": "PjitFunction(forward_3d_conv)",
        "step_number": 1,
        "op": "Build buffer allocations",
        "op_path": [
          "PjRtStreamExecutorLoadedExecutable::ExecuteHelper",
          "PjRtStreamExecutorLoadedExecutable::EnqueueExecution",
          "Build buffer allocations"
        ],
        "memory_event_id": 778,
        "op_event_id": 775,
        "trace_start_ns": 0.0,
        "trace_end_ns": 88546597.0
      },
      "steps": [
        {
          "name": "PjitFunction(forward_3d_conv)",
          "number": 1,
          "start_ns": 896711.0,
          "end_ns": 60837501.0,
          "start_bytes": 579072768,
          "end_bytes": 579072768,
          "peak_bytes": 1730171904,
          "allocations": 2,
          "never_freed_bytes": 0
        },
        {
          "name": "PjitFunction(forward_3d_conv)",
          "number": 2,
          "start_ns": 60837501.0,
          "end_ns": 87610196.0,
          "start_bytes": 579072768,
          "end_bytes": 579072768,
          "peak_bytes": 1730171904,
          "allocations": 2,
          "never_freed_bytes": 0
        },
        {
          "name": "PjitFunction(forward_3d_conv)",
          "number": 3,
          "start_ns": 87610196.0,
          "end_ns": 91424271.0,
          "start_bytes": 579072768,
          "end_bytes": 579072768,
          "peak_bytes": 1730171904,
          "allocations": 2,
          "never_freed_bytes": 0
        }
      ],
      "live_at_peak": [
        {
          "op": "Build buffer allocations",
          "bytes": 1151099136,
          "count": 2
        }
      ],
      "live_at_peak_bytes": 1151099136,
      "live_at_peak_count": 2,
      "before_capture_bytes": 579072768,
      "allocations": [
        {
          "addr": "0x7f2e38600000",
          "size_bytes": 579072256,
          "alloc_ns": 45224580.0,
          "free_ns": 45518060.0,
          "lifetime_ns": 293480.0,
          "alloc_op": "Build buffer allocations",
          "free_op": "PjRtStreamExecutorLoadedExecutable::EnqueueExecution",
          "step": "PjitFunction(forward_3d_conv)"
        },
        {
          "addr": "0x7f2e38600000",
          "size_bytes": 579072256,
          "alloc_ns": 62263083.0,
          "free_ns": 62770283.0,
          "lifetime_ns": 507200.0,
          "alloc_op": "Build buffer allocations",
          "free_op": "PjRtStreamExecutorLoadedExecutable::EnqueueExecution",
          "step": "PjitFunction(forward_3d_conv)"
        },
        {
          "addr": "0x7f2e38600000",
          "size_bytes": 579072256,
          "alloc_ns": 88410147.0,
          "free_ns": 89046048.0,
          "lifetime_ns": 635901.0,
          "alloc_op": "Build buffer allocations",
          "free_op": "PjRtStreamExecutorLoadedExecutable::EnqueueExecution",
          "step": "PjitFunction(forward_3d_conv)"
        }
      ],
      "allocations_count": 10,
      "allocated_bytes": 5755495680,
      "never_freed": [
        {
          "addr": "0x7f357ac00000",
          "size_bytes": 572026880,
          "alloc_ns": 138149493.0,
          "alloc_op": "Build buffer allocations",
          "step": "PjitFunction(forward_3d_conv)"
        }
      ],
      "never_freed_count": 1,
      "never_freed_bytes": 572026880,
      "freed_before_capture_count": 1,
      "freed_before_capture_bytes": 572026880,
      "ops": [
        {
          "op": "Build buffer allocations",
          "allocated_bytes": 5755495680,
          "allocations": 10,
          "freed": 9,
          "peak_bytes": 1151099136,
          "never_freed_bytes": 572026880
        }
      ],
      "notes": [
        "1 frees (546 MiB) release blocks allocated before the capture started"
      ],
      "allocator_stats": {
        "capacity_bytes": 154606239744,
        "free_at_peak_bytes": 152876067840,
        "fragmentation_at_peak": 0.419346,
        "peak_fragmentation": 0.557062,
        "peak_fragmentation_ns": 1922933.0,
        "lifetime_peak_bytes": 1730171904,
        "peak_in_use_bytes": 1730171904,
        "peak_in_use_ns": 45224580.0,
        "fragmentation": {
          "time_ns": [
            1922933.0,
            45224580.0,
            45518060.0,
            49584106.0,
            62259533.0,
            62263083.0,
            62770283.0,
            63775215.0,
            88405777.0,
            88410147.0,
            89046048.0,
            91275661.0,
            92569643.0,
            92573073.0,
            92976243.0,
            93619144.0,
            138149493.0,
            138154563.0,
            139075844.0,
            139606005.0
          ],
          "fraction": [
            0.557062,
            0.419346,
            0.345316,
            0.442532,
            0.345316,
            0.419346,
            0.345316,
            0.442532,
            0.345316,
            0.419346,
            0.345316,
            0.442532,
            0.345316,
            0.419346,
            0.345316,
            0.442532,
            0.345316,
            0.419346,
            0.345316,
            0.442532
          ],
          "events": 20
        }
      },
      "peak_step_reason": "no event of this allocator names its step (group_id): XProf then groups the events itself from the host's TraceMe tree, which profscope does not reproduce"
    }
  ],
  "step_source": "inferred from 5 jitted calls of `PjitFunction(forward_3d_conv)` (no step markers)",
  "warnings": [],
  "programs": []
};
}
