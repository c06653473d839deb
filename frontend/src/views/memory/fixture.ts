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
        "reserved_reason": "reserved not observed: every allocator event reports 0 reserved bytes (a CPU allocator keeps no cache of its own)",
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
    "warnings": [],
    "programs": []
  };
}

/** The memory answer of tests/data/memory/jax_cpu_train_step.xplane.pb (no allocator records; its
 * XLA programs), as the route gives it with the programs list cut to its three largest: the compiler's
 * view of `jit_train_step`, whose peak holds three 2 MiB activations (its allocation timeline: four
 * boxes, the fourth reusing the third's bytes after the peak). */
export function programAnswer(): MemoryAnswer {
  return {
    "observed": false,
    "reason": "allocator memory not observed: this profile has no allocator records; the compiler's plan of each XLA program is shown instead",
    "devices": [],
    "warnings": [],
    "programs": [
      {
        "host": "host",
        "host_index": 0,
        "program_id": "13",
        "name": "jit_train_step",
        "peak_bytes": 9003108
      },
      {
        "host": "host",
        "host_index": 0,
        "program_id": "4",
        "name": "jit__normal",
        "peak_bytes": 4194424
      },
      {
        "host": "host",
        "host_index": 0,
        "program_id": "14",
        "name": "jit__normal",
        "peak_bytes": 2097272
      }
    ],
    "program": {
      "host": "host",
      "host_index": 0,
      "program_id": "13",
      "name": "jit_train_step",
      "memory_space": 0,
      "memory_spaces": [
        0
      ],
      "peak_bytes": 9003108,
      "peak_position": 3,
      "peak_instruction": "ynn_fusion.2",
      "whole_program_bytes": 2711652,
      "temporary_peak_bytes": 6291456,
      "padding_bytes": 0,
      "temporary_padding_bytes": 0,
      "bytes_by_kind": {
        "output": 1085504,
        "parameter": 1626144,
        "constant": 4,
        "temporary": 6291456
      },
      "allocations": 19,
      "allocation_bytes": 9003132,
      "heap": {
        "position": [
          0,
          1,
          2,
          3,
          4,
          5,
          6,
          7,
          8
        ],
        "bytes": [
          2711652,
          4808804,
          6905956,
          9003108,
          6905956,
          4808804,
          6905956,
          4808804,
          2711652
        ],
        "instruction": [
          "",
          "ynn_fusion.4",
          "broadcast_maximum_fusion",
          "ynn_fusion.2",
          "broadcast_maximum_fusion",
          "ynn_fusion.2",
          "compare_select_fusion",
          "ynn_fusion.4",
          "compare_select_fusion"
        ],
        "events": 8
      },
      "timeline": {
        "events": 8,
        "bands": [{ "allocation": 18, "base_bytes": 0, "size_bytes": 6291456 }],
        "height_bytes": 6291456,
        "boxes": 4,
        "left_out_bytes": 0,
        "buffer_id": [74, 75, 80, 81],
        "band": [0, 0, 0, 0],
        "offset_bytes": [0, 2097152, 4194304, 4194304],
        "size_bytes": [2097152, 2097152, 2097152, 2097152],
        "unpadded_bytes": [2097152, 2097152, 2097152, 2097152],
        "start": [0, 1, 2, 5],
        "end": [6, 3, 4, 7],
        "at_peak": [true, true, true, false],
        "instruction": ["ynn_fusion.4", "broadcast_maximum_fusion", "ynn_fusion.2", "compare_select_fusion"],
        "shape": ["f32[512,1024]{1,0}", "f32[512,1024]{1,0}", "f32[512,1024]{1,0}", "f32[512,1024]{1,0}"],
        "dtype": ["f32", "f32", "f32", "f32"],
        "op_name": [
          "jit(train_step)/jvp()/dot_general",
          "jit(train_step)/jvp()/jit(relu)/max",
          "jit(train_step)/transpose(jvp())/dot_general",
          "jit(train_step)/transpose(jvp())/select_n"
        ]
      },
      "live_at_peak": [
        {
          "buffer_id": 74,
          "size_bytes": 2097152,
          "unpadded_bytes": 2097152,
          "kind": "temporary",
          "instruction": "ynn_fusion.4",
          "opcode": "fusion",
          "shape": "f32[512,1024]{1,0}",
          "dtype": "f32",
          "op_name": "jit(train_step)/jvp()/dot_general",
          "allocation": 18,
          "offset_bytes": 0,
          "timeline_box": 0
        },
        {
          "buffer_id": 75,
          "size_bytes": 2097152,
          "unpadded_bytes": 2097152,
          "kind": "temporary",
          "instruction": "broadcast_maximum_fusion",
          "opcode": "fusion",
          "shape": "f32[512,1024]{1,0}",
          "dtype": "f32",
          "op_name": "jit(train_step)/jvp()/jit(relu)/max",
          "allocation": 18,
          "offset_bytes": 2097152,
          "timeline_box": 1
        },
        {
          "buffer_id": 80,
          "size_bytes": 2097152,
          "unpadded_bytes": 2097152,
          "kind": "temporary",
          "instruction": "ynn_fusion.2",
          "opcode": "fusion",
          "shape": "f32[512,1024]{1,0}",
          "dtype": "f32",
          "op_name": "jit(train_step)/transpose(jvp())/dot_general",
          "allocation": 18,
          "offset_bytes": 4194304,
          "timeline_box": 2
        },
        {
          "buffer_id": 87,
          "size_bytes": 1048576,
          "unpadded_bytes": 1048576,
          "kind": "output",
          "instruction": "dot",
          "opcode": "dot",
          "shape": "f32[256,1024]{1,0}",
          "dtype": "f32",
          "op_name": "jit(train_step)/transpose(jvp())/transpose",
          "allocation": 0,
          "offset_bytes": 0
        },
        {
          "buffer_id": 73,
          "size_bytes": 1048576,
          "unpadded_bytes": 1048576,
          "kind": "parameter",
          "instruction": "params__w1__.1",
          "opcode": "parameter",
          "shape": "f32[256,1024]{1,0}",
          "dtype": "f32",
          "op_name": "params['w1']",
          "allocation": 1,
          "offset_bytes": 0
        },
        {
          "buffer_id": 72,
          "size_bytes": 524288,
          "unpadded_bytes": 524288,
          "kind": "parameter",
          "instruction": "x.1",
          "opcode": "parameter",
          "shape": "f32[512,256]{1,0}",
          "dtype": "f32",
          "op_name": "x",
          "allocation": 2,
          "offset_bytes": 0
        },
        {
          "buffer_id": 89,
          "size_bytes": 32768,
          "unpadded_bytes": 32768,
          "kind": "output",
          "instruction": "dot.1",
          "opcode": "dot",
          "shape": "f32[1024,8]{1,0}",
          "dtype": "f32",
          "op_name": "jit(train_step)/transpose(jvp())/transpose",
          "allocation": 3,
          "offset_bytes": 0
        },
        {
          "buffer_id": 76,
          "size_bytes": 32768,
          "unpadded_bytes": 32768,
          "kind": "parameter",
          "instruction": "params__w2__.1",
          "opcode": "parameter",
          "shape": "f32[1024,8]{1,0}",
          "dtype": "f32",
          "op_name": "params['w2']",
          "allocation": 4,
          "offset_bytes": 0
        },
        {
          "buffer_id": 71,
          "size_bytes": 16384,
          "unpadded_bytes": 16384,
          "kind": "parameter",
          "instruction": "y.1",
          "opcode": "parameter",
          "shape": "f32[512,8]{1,0}",
          "dtype": "f32",
          "op_name": "y",
          "allocation": 5,
          "offset_bytes": 0
        },
        {
          "buffer_id": 83,
          "size_bytes": 4096,
          "unpadded_bytes": 4096,
          "kind": "output",
          "instruction": "ynn_fusion.1",
          "opcode": "fusion",
          "shape": "f32[1024]{0}",
          "dtype": "f32",
          "op_name": "jit(train_step)/transpose(jvp())/reduce_sum",
          "allocation": 6,
          "offset_bytes": 0
        },
        {
          "buffer_id": 70,
          "size_bytes": 4096,
          "unpadded_bytes": 4096,
          "kind": "parameter",
          "instruction": "params__b1__.1",
          "opcode": "parameter",
          "shape": "f32[1024]{0}",
          "dtype": "f32",
          "op_name": "params['b1']",
          "allocation": 7,
          "offset_bytes": 0
        },
        {
          "buffer_id": 85,
          "size_bytes": 32,
          "unpadded_bytes": 32,
          "kind": "output",
          "instruction": "ynn_fusion",
          "opcode": "fusion",
          "shape": "f32[8]{0}",
          "dtype": "f32",
          "op_name": "jit(train_step)/transpose(jvp())/reduce_sum",
          "allocation": 8,
          "offset_bytes": 0
        },
        {
          "buffer_id": 91,
          "size_bytes": 32,
          "unpadded_bytes": 32,
          "kind": "output",
          "instruction": "tuple.1",
          "opcode": "tuple",
          "shape": "(f32[1024]{0}, f32[8]{0}, f32[256,1024]{1,0}, f32[1024,8]{1,0})",
          "dtype": "tuple",
          "allocation": 9,
          "offset_bytes": 0
        },
        {
          "buffer_id": 78,
          "size_bytes": 32,
          "unpadded_bytes": 32,
          "kind": "parameter",
          "instruction": "params__b2__.1",
          "opcode": "parameter",
          "shape": "f32[8]{0}",
          "dtype": "f32",
          "op_name": "params['b2']",
          "allocation": 10,
          "offset_bytes": 0
        },
        {
          "buffer_id": 82,
          "size_bytes": 4,
          "unpadded_bytes": 4,
          "kind": "constant",
          "instruction": "constant.16",
          "opcode": "constant",
          "shape": "f32[]",
          "dtype": "f32",
          "allocation": 11,
          "offset_bytes": 0
        }
      ],
      "live_at_peak_count": 15,
      "live_at_peak_bytes": 9003108,
      "instruction_events": {
        "ynn_fusion.2": [448, 501, 865],
        "ynn_fusion.1": [454, 507, 879],
        "dot": [474, 523, 550],
        "ynn_fusion.4": [632, 854, 889],
        "broadcast_maximum_fusion": [635, 857, 892],
        "ynn_fusion": [644, 868, 901],
        "dot.1": [646, 870, 903]
      }
    }
  };
}
