/** The memory answer of tests/data/memory/peak_backward.pt.trace.json.gz (the 16 MiB temporary in
 * the backward of step 3), as the route gives it, with its curve thinned to every 8th point (the peak
 * kept) and three rows per table, for the view's unit tests. */

import type { MemoryAnswer } from "./api.ts";

export function peakAnswer(): MemoryAnswer {
  return {
    "observed": true,
    "devices": [
      {
        "host": "peak",
        "label": "CPU",
        "device_type": 0,
        "device_id": -1,
        "events": 156,
        "start_ns": 440147.0,
        "end_ns": 25267521.0,
        "allocated": {
          "time_ns": [
            440147.0,
            1755856.0,
            2016594.0,
            2585441.0,
            2781793.0,
            2876474.0,
            3072465.0,
            3319713.0,
            3497738.0,
            3598008.0,
            18510503.0,
            18610843.0,
            21170332.0,
            22176330.0,
            22758086.0,
            22944333.0,
            23486079.0,
            23967916.0,
            24542171.0,
            24768908.0,
            25180521.0,
            25267521.0
          ],
          "bytes": [
            16384,
            19464,
            38948,
            22048,
            18432,
            18432,
            54308,
            17440,
            20480,
            19460,
            16815152,
            16815160,
            54308,
            22048,
            18432,
            18432,
            54308,
            17440,
            20480,
            19460,
            70692,
            54816
          ],
          "events": 156
        },
        "reserved_reason": "reserved not observed: every [memory] event reports 0 reserved bytes (the CPU allocator keeps no cache of its own)",
        "peak": {
          "allocated_bytes": 16815160,
          "time_ns": 18610843.0,
          "step": "ProfilerStep#3",
          "step_number": 3,
          "op": "aten::div",
          "op_path": [
            "ProfilerStep#3",
            "autograd::engine::evaluate_function: ScaledBackwardBackward",
            "ScaledBackwardBackward",
            "big_backward_temporary",
            "aten::div"
          ],
          "memory_event_id": 432,
          "op_event_id": 426,
          "trace_start_ns": 18463322.0,
          "trace_end_ns": 18693527.0
        },
        "steps": [
          {
            "name": "ProfilerStep#1",
            "number": 1,
            "start_ns": 221472.0,
            "end_ns": 2491090.0,
            "start_bytes": 0,
            "end_bytes": 54816,
            "peak_bytes": 71204,
            "allocations": 15,
            "never_freed_bytes": 0
          },
          {
            "name": "ProfilerStep#2",
            "number": 2,
            "start_ns": 2532872.0,
            "end_ns": 3262238.0,
            "start_bytes": 54816,
            "end_bytes": 54816,
            "peak_bytes": 71204,
            "allocations": 15,
            "never_freed_bytes": 0
          },
          {
            "name": "ProfilerStep#3",
            "number": 3,
            "start_ns": 3289218.0,
            "end_ns": 22044403.0,
            "start_bytes": 54816,
            "end_bytes": 54816,
            "peak_bytes": 16815160,
            "allocations": 21,
            "never_freed_bytes": 0
          },
          {
            "name": "ProfilerStep#4",
            "number": 4,
            "start_ns": 22108429.0,
            "end_ns": 23857592.0,
            "start_bytes": 54816,
            "end_bytes": 54816,
            "peak_bytes": 71204,
            "allocations": 15,
            "never_freed_bytes": 0
          },
          {
            "name": "ProfilerStep#5",
            "number": 5,
            "start_ns": 23911072.0,
            "end_ns": 25454329.0,
            "start_bytes": 54816,
            "end_bytes": 54816,
            "peak_bytes": 71204,
            "allocations": 15,
            "never_freed_bytes": 54816
          }
        ],
        "live_at_peak": [
          {
            "op": "aten::empty",
            "shape": "[4194304]",
            "bytes": 16777216,
            "count": 1
          },
          {
            "op": "aten::clamp_min",
            "shape": "[32, 128]",
            "bytes": 16384,
            "count": 1
          },
          {
            "op": "aten::mm",
            "shape": "[32, 8], [8, 128]",
            "bytes": 16384,
            "count": 1
          }
        ],
        "live_at_peak_bytes": 16815160,
        "live_at_peak_count": 11,
        "before_capture_bytes": 0,
        "allocations": [
          {
            "addr": "0x7fa94afff040",
            "size_bytes": 16777216,
            "alloc_ns": 4216208.0,
            "free_ns": 18623662.0,
            "lifetime_ns": 14407454.0,
            "alloc_op": "aten::empty",
            "free_op": "big_backward_temporary",
            "shape": "[4194304]",
            "step": "ProfilerStep#3"
          },
          {
            "addr": "0x55f28a8af480",
            "size_bytes": 32768,
            "alloc_ns": 2192706.0,
            "free_ns": 2585441.0,
            "lifetime_ns": 392735.0,
            "alloc_op": "aten::mm",
            "free_op": "Optimizer.zero_grad#SGD.zero_grad",
            "shape": "[128, 32], [32, 64]",
            "step": "ProfilerStep#1"
          },
          {
            "addr": "0x55f28a8c3680",
            "size_bytes": 32768,
            "alloc_ns": 3086807.0,
            "free_ns": 3317871.0,
            "lifetime_ns": 231064.0,
            "alloc_op": "aten::mm",
            "free_op": "Optimizer.zero_grad#SGD.zero_grad",
            "shape": "[128, 32], [32, 64]",
            "step": "ProfilerStep#2"
          }
        ],
        "allocations_count": 81,
        "allocated_bytes": 17328900,
        "never_freed": [
          {
            "addr": "0x55f28a902ac0",
            "size_bytes": 32768,
            "alloc_ns": 25180521.0,
            "alloc_op": "aten::mm",
            "shape": "[128, 32], [32, 64]",
            "step": "ProfilerStep#5"
          },
          {
            "addr": "0x55f28a8fea40",
            "size_bytes": 16384,
            "alloc_ns": 24329735.0,
            "alloc_op": "aten::clamp_min",
            "shape": "[32, 128]",
            "step": "ProfilerStep#5"
          },
          {
            "addr": "0x55f28a8db900",
            "size_bytes": 4096,
            "alloc_ns": 25023157.0,
            "alloc_op": "aten::mm",
            "shape": "[8, 32], [32, 128]",
            "step": "ProfilerStep#5"
          }
        ],
        "never_freed_count": 6,
        "never_freed_bytes": 54816,
        "freed_before_capture_count": 0,
        "freed_before_capture_bytes": 0,
        "ops": [
          {
            "op": "aten::empty",
            "allocated_bytes": 16787456,
            "allocations": 11,
            "freed": 11,
            "peak_bytes": 16777216,
            "never_freed_bytes": 0
          },
          {
            "op": "aten::mm",
            "allocated_bytes": 266240,
            "allocations": 15,
            "freed": 13,
            "peak_bytes": 20480,
            "never_freed_bytes": 36864
          },
          {
            "op": "aten::addmm",
            "allocated_bytes": 87040,
            "allocations": 10,
            "freed": 10,
            "peak_bytes": 0,
            "never_freed_bytes": 0
          }
        ],
        "notes": []
      }
    ],
    "step_source": "ProfilerStep#N markers (PyTorch profiler)",
    "warnings": []
  };
}
