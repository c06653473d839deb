"""Collectives across the ranks of a merged session: which instance is which on every rank, who
waited for whom, and each instance's bandwidth.

Records read per host (`read_calls`), host-local ps:
- PyTorch: the outermost of `c10d::*` ops, `record_param_comms` and `nccl:*`/`gloo:*`/`mpi:*`/`ucc:*`
  annotations on a host thread is the rank's call; the others nested in it give its args
  (`record_param_comms`: `Collective name`, `In msg nelems`, `Out msg nelems`, `dtype`, `Group size`,
  `Process Group Name`, `seq`; else `Input Dims` × `Input type`). A worker annotation not nested in
  a call (gloo runs the work on its own threads, with no link to the call) is the k-th of its kind
  on the rank's worker threads, by start, for the k-th call of that kind (gloo runs a reduce-scatter
  as `gloo:all_reduce`), paired only when both counts agree. The NCCL kernels launched inside a
  call (launch links) and the paired worker event end the call; else the call's own end does.
- XLA: collective ops (`all-reduce`, `all-gather`, … with `-start`/`-done`) carrying a `run_id`
  stat, one call per (`program_id`, `run_id`, op) from the first start to the last end.
- Neither: NCCL/RCCL kernels on the device streams, in start order.

Matching one instance across the hosts (`match`), the first rule that applies: the process group
and sequence number (`record_param_comms` `seq`); XLA `(program_id, run_id, op)`; else the order of
the calls per group (c10d has every rank of a group issue its collectives in the same order): the
k-th call of a group on one rank ↔ the k-th on every other. Order matching is refused for a whole
group when the ranks' counts differ or the k-th calls differ in kind or size (a trace that dropped
events): those instances are reported as unmatched, never paired wrongly.

Per instance, with each rank's arrival a_r (start of its call, session clock) and end e_r (its
call done):
- last arrival L = max_r a_r, the last arriver the rank that has it;
- wait_r = min(L − a_r, e_r − a_r) (0 for the last arriver);
- transfer = max_r e_r − L (the time the instance runs once every rank is in it);
- size S = max(input, output) elements × element size (nccl-tests' buffer size: an all-gather's
  gathered output, a reduce-scatter's full input); algorithm bandwidth algbw = S / transfer;
- bus bandwidth busbw = algbw × f(n), n ranks in the group (`Group size`, else the matched
  ranks): all-reduce 2(n−1)/n; all-gather, reduce-scatter, all-to-all (n−1)/n; broadcast, reduce,
  send/recv 1 (the nccl-tests conventions).

Per step number seen on two or more hosts (each instance goes to the step that holds most of its
ranks' arrivals): wait_r = Σ over the step's instances; the waited-for time of a rank = Σ of the
others' waits in the instances it arrived last in; the straggler is the rank with the most waited-
for time. What it was doing: in its instance with the most waited-for time, over the window from
the first other rank's arrival to its own, the phase (`analysis.phases`) covering most of it, else
its innermost host op at the window's middle on the call's thread.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import re
from collections.abc import Sequence
from typing import Literal

import numpy as np

from profscope.analysis.events import HOST_ROLES, ROLE_COMM, HostEvents, args_of, role_table, string_table
from profscope.analysis.rank_answers import OverviewRankCollective, OverviewRanks, OverviewRankStep
from profscope.analysis.results import HostResult
from profscope.model.columns import Trace
from profscope.units import format_bytes

COLLECTIVE_LIMIT = 500
"""Instances listed in the answer (the first by arrival); the steps count all of them."""

CALL_NAMES = re.compile(r"^(?:c10d::\w+|record_param_comms)$")
WORKER_NAMES = re.compile(r"^(?:nccl|gloo|mpi|ucc):\w+")
XLA_NAMES = re.compile(
    r"^(all-reduce|all-gather|reduce-scatter|all-to-all|collective-permute|collective-broadcast)"
    r"(?:-start|-done)?(?:\.\d+)*$"
)
KERNEL_NAMES = re.compile(r"nccl|rccl", re.IGNORECASE)
KINDS = (
    ("all_reduce", re.compile(r"allreduce")),
    ("all_gather", re.compile(r"allgather")),
    ("reduce_scatter", re.compile(r"reducescatter")),
    ("all_to_all", re.compile(r"alltoall")),
    ("broadcast", re.compile(r"broadcast")),
    ("barrier", re.compile(r"barrier")),
    ("send_recv", re.compile(r"sendrecv|send|recv|collectivepermute")),
    ("reduce", re.compile(r"reduce")),
    ("gather", re.compile(r"gather")),
    ("scatter", re.compile(r"scatter")),
)
WORKER_KIND = {"reduce_scatter": "all_reduce"}
"""The worker annotation a call's kind runs as, where it differs (gloo: a reduce-scatter)."""
DTYPE_BYTES = {
    "double": 8, "float64": 8, "long": 8, "long int": 8, "int64": 8, "unsigned long": 8,
    "float": 4, "float32": 4, "int": 4, "int32": 4, "unsigned int": 4,
    "c10::half": 2, "half": 2, "float16": 2, "c10::bfloat16": 2, "bfloat16": 2, "short": 2,
    "short int": 2, "int16": 2, "unsigned char": 1, "signed char": 1, "char": 1, "byte": 1, "bool": 1,
    "int8": 1, "uint8": 1, "c10::float8_e4m3fn": 1, "c10::float8_e5m2": 1,
    "c10::complex<float>": 8, "c10::complex<double>": 16,
}  # fmt: skip
NOT_TENSORS = frozenset({"", "Scalar", "ScalarList", "GenericList"})  # `Input type`s that hold no tensor


@dataclasses.dataclass
class Call:
    """One rank's part of one collective instance (host-local ps)."""

    kind: str
    name: str
    group: str
    start_ps: int
    end_ps: int
    track: int
    bytes: int | None = None
    seq: int | None = None
    group_size: int | None = None
    run_key: tuple[int, int, str] | None = None
    event: int = -1  # the event the call starts with (its arrival)
    end_event: int = -1  # the event whose end is the call's end (worker annotation, kernel, the call)


@dataclasses.dataclass(frozen=True)
class HostCalls:
    """A host's collective calls in start order and what they were read from."""

    calls: list[Call]
    records: str


@dataclasses.dataclass(frozen=True)
class Instance:
    """One collective instance: its calls by host index, and how they were paired."""

    kind: str
    name: str
    group: str
    matched_by: str
    calls: dict[int, Call]


def kind_of(name: str) -> str:
    """`all_reduce`, `all_gather`, … from a collective's name (`c10d::_allgather_base_`, `nccl:all_reduce`,
    `all-reduce-start.1`, `ncclDevKernel_AllReduce_Sum_f32`, a `Collective name` arg)."""
    flat = re.sub(r"[^a-z]", "", name.lower().split("::")[-1].split(":")[-1])
    return next((kind for kind, pattern in KINDS if pattern.search(flat)), "other")


def bus_factor(kind: str, ranks: int) -> float:
    """nccl-tests' bus bandwidth factor (module docstring)."""
    if ranks < 1:
        return 1.0
    if kind == "all_reduce":
        return 2 * (ranks - 1) / ranks
    if kind in ("all_gather", "reduce_scatter", "all_to_all"):
        return (ranks - 1) / ranks
    return 1.0


def _elements(dims: object) -> int:
    """Elements of one `Input Dims` entry: a shape, or a list of shapes (a TensorList)."""
    if not isinstance(dims, list) or not dims:
        return 0
    if all(isinstance(d, int) for d in dims):
        return int(np.prod(dims, dtype=np.int64))
    return sum(_elements(d) for d in dims)


def message_bytes(records: Sequence[dict]) -> int | None:
    """The message size of a call from its records' args (the most specific first), or None."""
    for args in records:
        dtype = DTYPE_BYTES.get(str(args.get("dtype", "")).lower())
        counts = [args.get(k) for k in ("In msg nelems", "Out msg nelems")]
        counts = [c for c in counts if isinstance(c, int)]
        if dtype and counts and max(counts) > 0:
            return max(counts) * dtype
    types = [t for args in records for t in args.get("Input type", []) if isinstance(t, str)]
    element = next((DTYPE_BYTES[t.lower()] for t in types if t.lower() in DTYPE_BYTES), None)
    for args in records:
        pairs = zip(args.get("Input Dims", []), args.get("Input type", []))
        elements = [_elements(d) for d, t in pairs if t not in NOT_TENSORS]
        if element and elements and max(elements) > 0:
            return max(elements) * element
    return None


def _parse(view: memoryview) -> dict:
    try:
        args = json.loads(bytes(view))
    except ValueError:
        return {}
    return args if isinstance(args, dict) else {}


def _int(value: object) -> int | None:
    try:
        return int(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None


def read_calls(events: HostEvents) -> HostCalls:
    """A host's collective calls (module docstring): PyTorch calls, else XLA ops, else kernels."""
    calls = _torch_calls(events) + _xla_calls(events)
    if calls:
        calls.sort(key=lambda c: (c.start_ps, c.track))
        torch = any(c.run_key is None for c in calls)
        return HostCalls(calls, "PyTorch collective ops" if torch else "XLA collective ops with run_id")
    return HostCalls(_kernel_calls(events), "NCCL/RCCL kernels")


def _torch_calls(events: HostEvents) -> list[Call]:
    trace = events.trace
    on_host = (
        events.host_track[trace.ev_track] & (trace.ev_dur_ps > 0) if trace.num_events else np.zeros(0, bool)
    )
    is_call = string_table(trace.strings, CALL_NAMES.search)
    is_worker = string_table(trace.strings, WORKER_NAMES.search)
    found = np.flatnonzero(on_host & (is_call | is_worker)[trace.ev_name])
    if not found.shape[0]:
        return []
    member = set(found.tolist())
    top: dict[int, int] = {}  # every found event → its outermost found ancestor (itself at the top)
    for i in found.tolist():
        outer, up = i, int(events.parent[i])
        while up >= 0:
            if up in member:
                outer = up
            up = int(events.parent[up])
        top[i] = outer
    args = dict(zip(found.tolist(), (_parse(v) for v in args_of(trace, found))))
    nested: dict[int, list[int]] = collections.defaultdict(list)
    for i, outer in top.items():
        if i != outer:
            nested[outer].append(i)
    starts, ends = trace.ev_start_ps, events.end_ps
    heads = [i for i in found.tolist() if top[i] == i]
    issued = [i for i in heads if is_call[trace.ev_name[i]]] or heads
    workers = sorted(set(heads) - set(issued))
    worker_of = _pair_workers(trace, issued, workers, nested, is_worker)
    ends_of = _kernel_ends(events, top)
    calls = []
    for i in issued:
        name = trace.strings[trace.ev_name[i]]
        inner = sorted(nested[i], key=lambda j: trace.strings[trace.ev_name[j]] != "record_param_comms")
        records = [args[i]] + [args[j] for j in inner] + ([args[worker_of[i]]] if i in worker_of else [])
        comm = next((a for a in records if "Collective name" in a), {})
        kind = kind_of(str(comm.get("Collective name") or name))
        if kind == "other" and inner:
            kind = kind_of(trace.strings[trace.ev_name[inner[-1]]])
        end_event = worker_of.get(i, i)
        kernel_end, kernel = ends_of.get(i, (-1, -1))
        if kernel_end > int(ends[end_event]):
            end_event = kernel
        calls.append(
            Call(
                kind=kind,
                name=name,
                group=str(comm.get("Process Group Name") or "default"),
                start_ps=int(starts[i]),
                end_ps=int(ends[end_event]),
                track=int(trace.ev_track[i]),
                bytes=message_bytes(records),
                seq=_int(comm.get("seq")) if "Process Group Name" in comm else None,
                group_size=_int(comm.get("Group size")),
                event=i,
                end_event=end_event,
            )
        )
    return calls


def _pair_workers(
    trace: Trace, issued: list[int], workers: list[int], nested: dict[int, list[int]], is_worker: np.ndarray
) -> dict[int, int]:
    """Call → its worker annotation (module docstring), for calls with no annotation nested
    (`is_worker`: a bool per string id)."""
    calls_by_kind: dict[str, list[int]] = collections.defaultdict(list)
    for i in issued:
        if not any(is_worker[trace.ev_name[j]] for j in nested[i]):
            kind = kind_of(trace.strings[trace.ev_name[i]])
            calls_by_kind[WORKER_KIND.get(kind, kind)].append(i)
    workers_by_kind: dict[str, list[int]] = collections.defaultdict(list)
    for w in sorted(workers, key=lambda w: int(trace.ev_start_ps[w])):
        workers_by_kind[kind_of(trace.strings[trace.ev_name[w]])].append(w)
    pairs = {}
    for kind, calls in calls_by_kind.items():
        found = workers_by_kind.get(kind, [])
        if len(found) == len(calls):
            pairs.update(zip(calls, found))
    return pairs


def _kernel_ends(events: HostEvents, top: dict[int, int]) -> dict[int, tuple[int, int]]:
    """Call → the last end of the NCCL/RCCL kernels launched inside it, and that kernel."""
    out: dict[int, tuple[int, int]] = {}
    ends = events.end_ps
    comm = np.flatnonzero(events.role == ROLE_COMM)
    for k in comm[events.launch[comm] >= 0].tolist():
        up = int(events.launch[k])
        while up >= 0 and up not in top:
            up = int(events.parent[up])
        if up >= 0:
            call = top[up]
            out[call] = max(out.get(call, (0, -1)), (int(ends[k]), k))
    return out


def _xla_calls(events: HostEvents) -> list[Call]:
    trace = events.trace
    if not trace.num_events:
        return []
    is_xla = string_table(trace.strings, XLA_NAMES.search)
    found = np.flatnonzero(is_xla[trace.ev_name] & (trace.ev_dur_ps > 0))
    merged: dict[tuple[int, int, str], Call] = {}
    ends = events.end_ps
    for i, view in zip(found.tolist(), args_of(trace, found)):
        args = _parse(view)
        run, program = _int(args.get("run_id")), _int(args.get("program_id"))
        if run is None:
            continue
        name = XLA_NAMES.match(trace.strings[trace.ev_name[i]]).group(1)  # type: ignore[union-attr]
        key = (program if program is not None else -1, run, name)
        start, end = int(trace.ev_start_ps[i]), int(ends[i])
        if key in merged:
            call = merged[key]
            if start < call.start_ps:
                call.start_ps, call.event = start, i
            if end > call.end_ps:
                call.end_ps, call.end_event = end, i
            continue
        group = str(args.get("hlo_module") or "default")
        merged[key] = Call(
            kind_of(name), name, group, start, end, int(trace.ev_track[i]), run_key=key, event=i, end_event=i
        )
    return list(merged.values())


def _kernel_calls(events: HostEvents) -> list[Call]:
    trace = events.trace
    ends = events.end_ps
    comm = events.of_roles(ROLE_COMM)
    comm = comm[
        np.isin(trace.ev_name[comm], np.flatnonzero(string_table(trace.strings, KERNEL_NAMES.search)))
    ]
    comm = comm[np.argsort(trace.ev_start_ps[comm], kind="stable")]
    return [
        Call(
            kind_of(trace.strings[trace.ev_name[k]]),
            trace.strings[trace.ev_name[k]],
            "default",
            int(trace.ev_start_ps[k]),
            int(ends[k]),
            int(trace.ev_track[k]),
            event=k,
            end_event=k,
        )
        for k in comm.tolist()
    ]


def match(hosts: Sequence[HostCalls], names: Sequence[str]) -> tuple[list[Instance], list[str]]:
    """The instances seen on every rank of their group, and what could not be paired (module
    docstring), as sentences."""
    instances: list[Instance] = []
    notes: list[str] = []
    keyed: dict[str, dict[tuple, dict[int, Call]]] = collections.defaultdict(
        lambda: collections.defaultdict(dict)
    )
    ordered: dict[str, dict[int, list[Call]]] = collections.defaultdict(lambda: collections.defaultdict(list))
    for h, host in enumerate(hosts):
        for call in host.calls:
            if call.run_key is not None:
                keyed[f"XLA {call.group}"][("run_id", *call.run_key)][h] = call
            elif call.seq is not None:
                keyed[call.group][("seq", call.seq)][h] = call
            else:
                ordered[call.group][h].append(call)
    for group, by_key in keyed.items():
        present = {h for calls in by_key.values() for h in calls}
        if len(present) < 2:
            continue
        missing = 0
        for key, calls in by_key.items():
            if set(calls) != present:
                missing += 1
                continue
            first = next(iter(calls.values()))
            how = f"run_id {key[2]}" if key[0] == "run_id" else f"seq {key[1]}"
            instances.append(Instance(first.kind, first.name, group, how, dict(sorted(calls.items()))))
        if missing:
            notes.append(
                f"{missing} instance(s) of group {group} are not on all {len(present)} ranks that use it"
            )
    for group, by_host in ordered.items():
        if len(by_host) < 2:
            continue
        refused = _order_refused(group, by_host, names)
        if refused:
            notes.append(refused)
            continue
        first = next(iter(by_host.values()))
        for k, call in enumerate(first):
            calls = {h: by_host[h][k] for h in sorted(by_host)}
            instances.append(Instance(call.kind, call.name, group, f"order {k + 1} in group {group}", calls))
    instances.sort(key=lambda inst: min(c.start_ps for c in inst.calls.values()))
    return instances, notes


def _order_refused(group: str, by_host: dict[int, list[Call]], names: Sequence[str]) -> str | None:
    """Why the calls of `group` cannot be paired by order, or None when they can."""
    counts = {h: len(calls) for h, calls in by_host.items()}
    listed = ", ".join(f"{names[h]} {n}" for h, n in sorted(counts.items()))
    if len(set(counts.values())) > 1:
        return (
            f"group {group}: the ranks hold different numbers of collective calls ({listed}), so order "
            "cannot pair them (events dropped from the trace, or different collectives per rank); none is paired"
        )
    hosts = sorted(by_host)
    for k in range(counts[hosts[0]]):
        seen = [(by_host[h][k].kind, by_host[h][k].bytes) for h in hosts]
        if len(set(seen)) > 1:
            differ = "; ".join(f"{names[h]}: {_call_words(by_host[h][k])}" for h in hosts)
            return (
                f"group {group}: the {_ordinal(k + 1)} collective call differs across the ranks ({differ}) although "
                f"they hold {counts[hosts[0]]} each: the traces dropped events or the ranks ran different "
                "collectives, so order cannot pair them; none is paired"
            )
    return None


def _call_words(call: Call) -> str:
    size = format_bytes(call.bytes) if call.bytes is not None else "size not recorded"
    return f"{call.name} ({size})"


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


@dataclasses.dataclass(frozen=True)
class Measured:
    """One instance's figures on the session clock (ns), per host index."""

    instance: Instance
    arrival: dict[int, float]
    end: dict[int, float]
    wait: dict[int, float]
    last: int
    transfer_ns: float
    step: int | None


def measure(instance: Instance, results: Sequence[HostResult]) -> Measured:
    """Arrivals, waits, last arriver and transfer time (module docstring)."""
    arrival = {h: results[h].ns(c.start_ps) for h, c in instance.calls.items()}
    end = {h: results[h].ns(c.end_ps) for h, c in instance.calls.items()}
    last = max(arrival, key=lambda h: (arrival[h], -h))
    wait = {h: max(0.0, min(arrival[last] - arrival[h], end[h] - arrival[h])) for h in arrival}
    steps = [_step_at(results[h], c.start_ps) for h, c in instance.calls.items()]
    numbers = collections.Counter(s for s in steps if s is not None)
    step = numbers.most_common(1)[0][0] if numbers else None
    return Measured(instance, arrival, end, wait, last, max(0.0, max(end.values()) - arrival[last]), step)


def _step_at(result: HostResult, ps: int) -> int | None:
    steps = result.steps
    k = int(np.searchsorted(steps.start_ps, ps, side="right")) - 1
    return int(steps.numbers[k]) if 0 <= k < len(steps) and ps < int(steps.end_ps[k]) else None


def ranks(results: Sequence[HostResult]) -> OverviewRanks:
    """The ranks of a merged session compared through their collectives (module docstring)."""
    names = [r.events.name for r in results]
    hosts = [read_calls(r.events) for r in results]
    instances, notes = match(hosts, names)
    measured = [measure(inst, results) for inst in instances]
    records = _records_words(hosts, names, results)
    return OverviewRanks(
        hosts=names,
        records=records,
        steps=_step_rows(measured, results),
        collectives=[_collective_row(k, m, names) for k, m in enumerate(measured[:COLLECTIVE_LIMIT])],
        collectives_total=len(measured),
        **({"unmatched": "; ".join(notes)} if notes else {}),
    )


def _records_words(hosts: Sequence[HostCalls], names: Sequence[str], results: Sequence[HostResult]) -> str:
    kinds = sorted({h.records for h in hosts if h.calls})
    counts = ", ".join(f"{n} {len(h.calls)}" for n, h in zip(names, hosts))
    words = f"{' and '.join(kinds) or 'no collective records'} (calls per rank: {counts})"
    infos = [r.events.trace.metadata.get("distributedInfo") for r in results]
    sizes = [_int(info.get("world_size")) for info in infos if isinstance(info, dict)]
    world = max((s for s in sizes if s), default=0)
    if world > len(results):
        words += f"; the session holds {len(results)} of the job's {world} ranks: waits are among those only"
    return words


def _collective_row(index: int, m: Measured, names: Sequence[str]) -> OverviewRankCollective:
    inst = m.instance
    size = next((c.bytes for c in inst.calls.values() if c.bytes is not None), None)
    group_size = next((c.group_size for c in inst.calls.values() if c.group_size), None) or len(inst.calls)
    row = OverviewRankCollective(
        index=index,
        name=inst.name,
        kind=inst.kind,
        group=inst.group,
        matched_by=inst.matched_by,
        ranks=len(inst.calls),
        arrival_ns=[m.arrival.get(h) for h in range(len(names))],
        wait_ns=[m.wait.get(h) for h in range(len(names))],
        last=names[m.last],
        transfer_ns=m.transfer_ns,
        start_ns=min(m.arrival.values()),
        end_ns=max(m.end.values()),
    )
    if m.step is not None:
        row.step = m.step
    if size is not None:
        row.bytes = float(size)
        if m.transfer_ns > 0:
            row.algbw = size / (m.transfer_ns / 1e9)
            row.busbw = row.algbw * bus_factor(inst.kind, group_size)
    return row


def _step_rows(measured: Sequence[Measured], results: Sequence[HostResult]) -> list[OverviewRankStep]:
    by_step: dict[int, list[Measured]] = collections.defaultdict(list)
    for m in measured:
        if m.step is not None:
            by_step[m.step].append(m)
    windows: dict[int, dict[int, int]] = collections.defaultdict(dict)  # step number → host → step index
    for h, r in enumerate(results):
        for k, number in enumerate(r.steps.numbers.tolist()):
            windows[number][h] = k
    rows = []
    for number, on in sorted(windows.items()):
        if len(on) < 2:
            continue
        inside = by_step.get(number, [])
        wait = [sum(m.wait.get(h, 0.0) for m in inside) if h in on else None for h in range(len(results))]
        waited_for: dict[int, float] = collections.defaultdict(float)
        for m in inside:
            waited_for[m.last] += sum(w for h, w in m.wait.items() if h != m.last)
        row = OverviewRankStep(
            step=number,
            steady=all(bool(results[h].steady[k]) for h, k in on.items()),
            collectives=len(inside),
            wait_ns=wait,
            waited_for_ns=0.0,
            start_ns=min(results[h].ns(results[h].steps.start_ps[k]) for h, k in on.items()),
            end_ns=max(results[h].ns(results[h].steps.end_ps[k]) for h, k in on.items()),
        )
        straggler = max(waited_for, key=lambda h: (waited_for[h], -h), default=None)
        if straggler is not None and waited_for[straggler] > 0:
            row.straggler = results[straggler].events.name
            row.waited_for_ns = waited_for[straggler]
            worst = max((m for m in inside if m.last == straggler), key=lambda m: sum(m.wait.values()))
            doing = _doing(results[straggler], worst, on.get(straggler))
            if doing:
                row.doing_source, row.doing = doing
        rows.append(row)
    return rows


def _doing(
    result: HostResult, m: Measured, step_index: int | None
) -> tuple[Literal["phase", "op"], str] | None:
    """What the straggler ran while the others waited for it in instance `m` (module docstring)."""
    others = [a for h, a in m.arrival.items() if h != m.last and m.wait[h] > 0]
    if not others:
        return None
    offset = result.offset_ps
    lo, hi = int(min(others) * 1e3) - offset, int(m.arrival[m.last] * 1e3) - offset
    trace, phases, ends = result.events.trace, result.phases, result.events.end_ps
    if step_index is not None and len(phases) and step_index < len(phases.slice_ids):
        overlap = {}
        for name, ids in zip(phases.names, phases.slice_ids[step_index]):
            overlap[name] = int(
                np.clip(np.minimum(ends[ids], hi) - np.maximum(trace.ev_start_ps[ids], lo), 0, None).sum()
            )
        best = max(overlap, key=overlap.get, default=None)
        if best is not None and overlap[best] > 0:
            return "phase", best
    call = m.instance.calls[m.last]
    middle = (lo + hi) // 2
    on_track = np.flatnonzero(
        (trace.ev_track == call.track) & role_table(HOST_ROLES)[result.events.role]
        & (trace.ev_start_ps <= middle) & (ends > middle)
    )  # fmt: skip
    if not on_track.shape[0]:
        return None
    innermost = on_track[int(np.argmax(trace.ev_depth[on_track]))]
    return "op", trace.strings[trace.ev_name[innermost]]
