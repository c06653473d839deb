"""XLA's HLO text of one instruction, from the lazily decoded `proto.HloModule`.

`instruction_text` prints as XLA's HloInstruction::ToString with default options, except: no
`sharding=`, `operand_layout_constraints=`, `output_to_operand_aliasing=` or `schedule=`; constants of
over 10 elements print `{...}` (XLA too), complex/f8/sub-byte ones as well; stack_frame_id and
backend_config print as stored (XLA renumbers frames and re-serializes GPU configs on load); async ops
print the sugared opcode (`all-gather-start`) without the wrapped instruction's attributes; layouts
print tiles, element size and memory space only; a backend_config in braces prints raw.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from profscope.formats.hlo.proto import (
    ConvolutionDimensionNumbers,
    DotDimensionNumbers,
    Fields,
    HloComputation,
    HloInstruction,
    HloModule,
    WindowDimension,
    index_note,
)

_DIGITS = {"f64": (15, 17), "f32": (6, 9), "f16": (3, 5), "bf16": (2, 4)}  # digits10, max_digits10
_TO_APPLY = frozenset({"call", "map", "reduce-window", "reduce", "all-reduce", "all-reduce-start", "scatter"})
_TO_APPLY |= {"reduce-scatter", "sort"}
_GATHER_DIMS = ("offset_dims", "collapsed_slice_dims", "start_index_map", "", "operand_batching_dims")
_GATHER_DIMS += ("start_indices_batching_dims",)
_SCATTER_DIMS = ("update_window_dims", "inserted_window_dims", "scatter_dims_to_operand_dims", "")
_SCATTER_DIMS += ("input_batching_dims", "scatter_indices_batching_dims")
_API_VERSIONS = ("UNSPECIFIED", "ORIGINAL", "STATUS_RETURNING", "STATUS_RETURNING_UNIFIED", "TYPED_FFI")
_PRECISIONS = ("default", "high", "highest")
_DEFAULT_COMPARISON = {"f": "FLOAT", "b": "FLOAT", "s": "SIGNED", "u": "UNSIGNED", "p": "UNSIGNED"}
_DIMS = (("dimensions", 14, "ids"),)
_CHANNEL = (("channel_id", 26, "positive"),)
_COLLECTIVE = (*_CHANNEL, ("replica_groups", 0, "groups"), ("use_global_device_ids", 71, "flag"))
# Per opcode, the attributes ExtraAttributesToStringImpl prints from plain fields, in order: (label, field,
# how): "int", "first" (of ints), "ids", "text", "quoted", "flag", "positive", "groups" or enum names.
_PLAIN = {
    "broadcast": _DIMS, "transpose": _DIMS, "reverse": _DIMS, "reduce": _DIMS, "concatenate": _DIMS,
    "sort": (*_DIMS, ("is_stable", 60, "flag")), "iota": (("iota_dimension", 14, "first"),),
    "all-gather": (*_DIMS, *_COLLECTIVE), "all-gather-start": (*_DIMS, *_COLLECTIVE),
    "all-to-all": (*_DIMS, *_COLLECTIVE), "reduce-scatter": (*_DIMS, *_COLLECTIVE),
    "all-reduce": _COLLECTIVE, "all-reduce-start": _COLLECTIVE, "collective-broadcast": _COLLECTIVE,
    "send": _CHANNEL, "recv": _CHANNEL, "collective-permute": _CHANNEL, "collective-permute-start": _CHANNEL,
    "get-tuple-element": (("index", 13, "int"),), "fusion": (("kind", 11, "text"),),
    "dynamic-slice": (("dynamic_slice_sizes", 20, "ids"),),
    "custom-call": (("custom_call_target", 28, "quoted"), ("custom_call_has_side_effect", 65, "flag")),
    "gather": (("slice_sizes", 34, "ids"), ("indices_are_sorted", 67, "flag")),
    "scatter": (("indices_are_sorted", 67, "flag"), ("unique_indices", 69, "flag")),
    "rng-bit-generator": (("algorithm", 70, ("rng_default", "rng_three_fry", "rng_philox")),),
    "fft": (("fft_type", 31, ("FFT", "IFFT", "RFFT", "IRFFT")), ("fft_length", 32, "ids")),
}  # fmt: skip


def _ids(values: tuple[int, ...] | list[int]) -> str:
    return "{" + ",".join(map(str, values)) + "}"


def _escape(text: str) -> str:
    """C-style escaping, as absl::CEscape."""
    table = {"\n": "\\n", "\r": "\\r", "\t": "\\t", '"': '\\"', "'": "\\'", "\\": "\\\\"}
    return "".join(table.get(c, c if " " <= c < "\x7f" or c > "\x7f" else f"\\{ord(c):03o}") for c in text)


def _number(value: float | int | bool, element_type: str) -> str:
    """As XLA's RoundTripFpToString: %g with digits10 digits if that round-trips, else max_digits10."""
    if isinstance(value, (bool, int)):
        return str(value).lower()
    if math.isnan(value) or math.isinf(value):
        return ("-" if math.copysign(1.0, value) < 0 else "") + ("nan" if math.isnan(value) else "inf")
    low, high = _DIGITS.get(element_type, _DIGITS["f64"])
    short = f"{value:.{low}g}"
    return short if _rounded(float(short), element_type) == value else f"{value:.{high}g}"


def _rounded(value: float, element_type: str) -> float:
    """`value` rounded to the float type (bf16: the upper half of the f32, to nearest even)."""
    if element_type != "bf16":
        return float({"f32": np.float32, "f16": np.float16}.get(element_type, np.float64)(value))
    bits = int(np.array(value, dtype=np.float32).view(np.uint32))
    bits = (((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16) & 0xFFFFFFFF
    return float(np.array(bits, dtype=np.uint32).view(np.float32))


def _literal_text(ins: HloInstruction) -> str:
    decoded = ins.literal
    if decoded is None or not decoded[1]:
        return "{...}"
    shape, values = decoded
    dims = shape.dimensions

    def nest(level: int, flat: list[str]) -> str:
        if level == len(dims) - 1:
            return "{" + ", ".join(flat) + "}"
        step = math.prod(dims[level + 1 :])
        inner = [nest(level + 1, flat[i * step : (i + 1) * step]) for i in range(dims[level])]
        return "{ " + ", ".join(inner) + " }"

    items = [_number(v, shape.element_type) for v in values]
    return nest(0, items) if dims else items[0]


def _plain(f: Fields, label: str, number: int, how: str | tuple[str, ...]) -> list[str]:
    if how == "groups":
        return _replica_groups(f)
    if isinstance(how, tuple) or how in ("int", "positive", "first"):
        value = (f.ints(number) or (0,))[0] if how == "first" else f.int(number)
        text = how[value] if isinstance(how, tuple) and 0 <= value < len(how) else str(value)
        return [] if how == "positive" and value <= 0 else [f"{label}={text}"]
    if how == "flag":
        return [f"{label}=true"] * bool(f.int(number))
    if how == "ids":
        return [f"{label}={_ids(f.ints(number))}"]
    return [f'{label}="{_escape(f.text(number))}"' if how == "quoted" else f"{label}={f.text(number)}"]


def _replica_groups(f: Fields) -> list[str]:
    devices = f.message(87)
    iota = devices.message(2)
    if iota:
        perm = ",".join(map(str, iota.ints(4)))
        text = f"[{iota.int(1)},{iota.int(2)}]<=[{','.join(map(str, iota.ints(3)))}]"
        return [f"replica_groups={text}" + (f"T({perm})" if perm else "")]
    groups = devices.messages(1) or f.messages(49)
    return ["replica_groups={" + ",".join(_ids(g.ints(1)) for g in groups) + "}"] if groups else []


def _window_text(window: tuple[WindowDimension, ...]) -> str:
    columns = [("size", [d.size for d in window], None), ("stride", [d.stride for d in window], 1)]
    columns.append(("pad", [f"{d.padding_low}_{d.padding_high}" for d in window], "0_0"))
    columns.append(("lhs_dilate", [d.base_dilation for d in window], 1))
    columns.append(("rhs_dilate", [d.window_dilation for d in window], 1))
    columns.append(("rhs_reversal", [int(d.window_reversal) for d in window], 0))
    shown = [f"{label}={'x'.join(map(str, v))}" for label, v, skip in columns if any(x != skip for x in v)]
    return "window={" + " ".join(shown) + "}"


def _dim_labels(c: ConvolutionDimensionNumbers) -> str:
    rank = len(c.input_spatial) + 2

    def labels(named: dict[int, str], spatial: tuple[int, ...]) -> str:
        out = ["?"] * rank
        for dim, label in [*named.items(), *((d, str(i)) for i, d in enumerate(spatial))]:
            if 0 <= dim < rank:
                out[dim] = label
        return "".join(out)

    lhs = labels({c.input_batch: "b", c.input_feature: "f"}, c.input_spatial)
    rhs = labels({c.kernel_input_feature: "i", c.kernel_output_feature: "o"}, c.kernel_spatial)
    return f"dim_labels={lhs}_{rhs}->{labels({c.output_batch: 'b', c.output_feature: 'f'}, c.output_spatial)}"


def _structured(ins: HloInstruction) -> list[str]:
    """The attributes XLA prints from sub-messages (before the plain ones)."""
    op, f, out = ins.opcode, ins.fields, []
    if op.startswith("collective-permute"):
        pairs = ",".join(f"{{{p.int(1)},{p.int(2)}}}" for p in f.messages(52))
        out.append("source_target_pairs={" + pairs + "}")
    if op == "slice":
        strided = any(s != 1 for _, _, s in ins.slice_dimensions)  # XLA shows all strides or none
        dims = [f"[{a}:{b}" + f":{s}" * strided + "]" for a, b, s in ins.slice_dimensions]
        out.append("slice={" + ", ".join(dims) + "}")
    if op == "pad":
        config = ins.padding_config
        interior = any(d[2] for d in config)
        out.append("padding=" + "x".join(f"{lo}_{hi}" + f"_{i}" * interior for lo, hi, i in config))
    if op == "compare":
        kind, operand = ins.comparison_type, ins.operands[0].shape.element_type if ins.operand_ids else ""
        out.append(f"direction={ins.comparison_direction}")
        out += [f"type={kind}"] * bool(kind and kind != _DEFAULT_COMPARISON.get(operand[:1], kind))
    if op in ("convolution", "custom-call", "reduce-window", "select-and-scatter") and f.message(15):
        out.append(_window_text(ins.window))
    conv = ins.convolution_dimension_numbers if op in ("convolution", "custom-call") else None
    if conv is not None:
        out.append(_dim_labels(conv))
        out += [f"feature_group_count={ins.feature_group_count}"] * (ins.feature_group_count != 1)
        out += [f"batch_group_count={ins.batch_group_count}"] * (ins.batch_group_count != 1)
    if op == "dot":
        d = ins.dot_dimension_numbers or DotDimensionNumbers()
        out += [f"lhs_batch_dims={_ids(d.lhs_batch)}"] * bool(d.lhs_batch)
        out.append(f"lhs_contracting_dims={_ids(d.lhs_contracting)}")
        out += [f"rhs_batch_dims={_ids(d.rhs_batch)}"] * bool(d.rhs_batch)
        out.append(f"rhs_contracting_dims={_ids(d.rhs_contracting)}")
    precision = f.message(51).ints(1) if op in ("dot", "convolution") else ()
    if any(precision):
        out.append("operand_precision={" + ",".join(_PRECISIONS[p % 3] for p in precision) + "}")
    if op in ("gather", "scatter"):
        d = f.message(33 if op == "gather" else 48)
        names = _GATHER_DIMS if op == "gather" else _SCATTER_DIMS
        shown = [(name, d.ints(n + 1)) for n, name in enumerate(names) if name]
        out += [f"{name}={_ids(dims)}" for n, (name, dims) in enumerate(shown) if n < 3 or dims]
        out.append(f"index_vector_dim={d.int(4)}")
    return out


def _called(ins: HloInstruction) -> list[str]:
    """Called computations by name, as XLA prints them (kNameOnly)."""
    names, op = [f"%{c.name}" for c in ins.called_computations], ins.opcode
    if not names or op.startswith("async-"):
        return []
    if op in ("while", "select-and-scatter") and len(names) == 2:  # while calls (body, condition)
        labels = ("body", "condition") if op == "while" else ("select", "scatter")
        return [f"{labels[i]}={names[i]}" for i in ((1, 0) if op == "while" else (0, 1))]
    if op == "conditional":
        if ins.operand_ids and ins.operands[0].shape.element_type == "pred" and len(names) == 2:
            return [f"true_computation={names[0]}", f"false_computation={names[1]}"]
        return ["branch_computations={" + ", ".join(names) + "}"]
    if op in _TO_APPLY:
        return [f"to_apply={names[0]}"]
    joined = ", ".join(names)
    return ["called_computations={" + joined + "}" if op == "custom-call" else "calls=" + joined]


def instruction_text(module: HloModule, instruction: HloInstruction) -> str:
    """The instruction as XLA's HLO text prints it (`%name = shape opcode(operands), attrs…`)."""
    ins, op, f = instruction, instruction.opcode, instruction.fields
    wrapped = module.computations.get(ins.called_computation_ids[0]) if ins.called_computation_ids else None
    if op.startswith("async-") and wrapped is not None and wrapped.root is not None:
        op = f"{wrapped.root.opcode}-{op[len('async-') :]}"
    by_id = ins.computation.by_id
    if ins.opcode in ("parameter", "constant"):
        args = str(ins.parameter_number) if ins.opcode == "parameter" else _literal_text(ins)
    else:
        operands = enumerate(by_id.get(i) for i in ins.operand_ids)
        args = ", ".join(
            index_note(n) + (f"{o.shape.text()} %{o.name}" if o else "null") for n, o in operands
        )
    parts = [f"%{ins.name} = {ins.shape.text()} {op}({args})", *_structured(ins)]
    for label, number, how in _PLAIN.get(ins.opcode, ()):
        parts += _plain(f, label, number, how)
    version = f.int(77, 1) if ins.opcode == "custom-call" else 1
    parts += [f"api_version=API_VERSION_{_API_VERSIONS[version % 5]}"] if version != 1 else []
    parts += _called(ins)
    pairs = sorted(f'{e.text(1)}="{_escape(e.text(2))}"' for e in f.message(68).messages(1))
    parts += ["frontend_attributes={" + ",".join(pairs) + "}"] if pairs else []
    if ins.control_predecessor_ids:
        names = [f"%{by_id[i].name}" if i in by_id else "null" for i in ins.control_predecessor_ids]
        parts.append("control-predecessors={" + ", ".join(names) + "}")
    meta, config = ins.metadata, ins.backend_config
    if meta.op_type or meta.op_name or meta.source_file:  # fields in XLA's OpMetadataToString order
        items = [(m.name, getattr(meta, m.name)) for m in dataclasses.fields(meta)]
        shown = [f'{k}="{_escape(v)}"' if isinstance(v, str) else f"{k}={v}" for k, v in items if v]
        parts.append("metadata={" + " ".join(shown) + "}")
    if config:
        raw = config[:1] + config[-1:] == "{}"
        parts.append("backend_config=" + (config if raw else f'"{_escape(config)}"'))
    return ", ".join(parts)


def computation_lines(module: HloModule, computation: HloComputation, limit: int | None = None) -> list[str]:
    """The computation's instructions (the first `limit`) as `instruction_text` prints them, the
    root's after `ROOT `."""
    chosen = computation.instructions[:limit]
    return [("ROOT " if ins.is_root else "") + instruction_text(module, ins) for ins in chosen]


def computation_header(computation: HloComputation) -> str:
    """`%name (param: shape, …) -> shape {` as XLA heads a computation (shapes without layouts),
    after `ENTRY ` for the entry computation."""
    params = ", ".join(f"{p.name}: {p.shape.text(layout=False)}" for p in computation.parameters)
    root = computation.root
    result = root.shape.text(layout=False) if root is not None else "()"
    entry = "ENTRY " if computation.id == computation.module.entry_computation_id else ""
    return f"{entry}%{computation.name} ({params}) -> {result} {{"


def module_text(module: HloModule, max_instructions: int) -> tuple[str, int, int]:
    """The module laid out as XLA's HloModule::ToString does (`HloModule name`, then each computation,
    the called ones before the entry), with at most `max_instructions` instruction lines: (text,
    instruction lines shown, instructions in all). The first line leaves out the entry layout."""
    module.load_all()
    entry = module.entry
    computations = [c for c in module.computations.values() if c is not entry] + ([entry] if entry else [])
    total = sum(len(c.instructions) for c in computations)
    out, shown = [f"HloModule {module.name}", ""], 0
    for comp in computations:
        if shown >= max_instructions:
            break
        lines = computation_lines(module, comp, max_instructions - shown)
        shown += len(lines)
        thread = comp.execution_thread
        closing = "}" + (f', execution_thread="{thread}"' if thread and thread != "main" else "")
        out += [computation_header(comp), *(f"  {line}" for line in lines), closing, ""]
    return "\n".join(out), shown, total
