"""Steps of a host whose profile marks none, inferred from what repeats (the `inferred` source of
`steps`). The first rule that finds at least `MIN_REPEATS` repetitions gives the steps:

1. The same XLA program executed again and again. Executions are the jitted calls on host threads
   (`PjitFunction(<f>)`, nested duplicates merged by time), the events of the XPlane `XLA Modules`
   lines (one execution per module and `run_id`, across cores), and the events whose args name an
   `hlo_module` with a `run_id` (the ops of one run: its first start to its last end). The program
   executed most often wins; on a tie, jitted host calls (where the host starts the step's work),
   then the most total time. Step k runs from execution k's start to execution k+1's start (what
   the loop does between two executions is part of the step), the last one to its end.
2. The main thread's top-level call pattern (PyTorch eager loops, or a label wrapping each
   iteration that carries no number): the host thread with the most time in outermost
   non-Python slices; its outermost slices in time order are a sequence of names. For each name
   seen at least `MIN_REPEATS` times, the stretches from one occurrence to the next are its
   periods. A name counts when its commonest period (by its sequence of names) covers at least
   `MIN_PATTERN_COVERAGE` of the calls' time (a sub-pattern such as three `aten::linear` in a row
   covers little); of those, the one whose commonest period covers the most calls wins, then the
   name seen first, so that the fewest calls fall before the first step. Step k runs from
   occurrence k to occurrence k+1, the last one to the end of its period's calls.

Inferred steps are never presented as marked: the source says "inferred from …".
"""

from __future__ import annotations

import collections
import dataclasses
import re

import msgspec
import numpy as np

from profscope.analysis import events as ev
from profscope.analysis.events import HostEvents

MIN_REPEATS = 3
MIN_PATTERN_COVERAGE = 0.5
ARG_SAMPLES = 3
JITTED_CALL = re.compile(r"^PjitFunction\((.+)\)$")
MODULES_LINE = "XLA Modules"
MODULE_ID = re.compile(r"\(\d+\)$")


class _RunArgs(msgspec.Struct):
    hlo_module: str | None = None
    run_id: int | None = None


_decode_run_args = msgspec.json.Decoder(_RunArgs).decode


@dataclasses.dataclass(frozen=True)
class Inferred:
    """Step windows found from repetition (host-local ps, in time order), what repeats (`name`),
    the sentence that says so, and whether the windows start at host calls (not at the device's
    execution, which starts after its launch)."""

    name: str
    source: str
    start_ps: np.ndarray
    end_ps: np.ndarray
    from_host: bool


@dataclasses.dataclass(frozen=True)
class _Program:
    label: str
    host_call: bool
    start_ps: np.ndarray  # one per execution, in time order
    end_ps: np.ndarray


def infer(events: HostEvents) -> Inferred | None:
    """Steps from repeated program executions, else from the repeated host call pattern."""
    programs = [p for p in _programs(events) if p.start_ps.shape[0] >= MIN_REPEATS]
    if programs:
        best = max(
            programs,
            key=lambda p: (p.start_ps.shape[0], p.host_call, int((p.end_ps - p.start_ps).sum()), p.label),
        )
        n = best.start_ps.shape[0]
        what = "jitted calls" if best.host_call else "executions"
        source = f"inferred from {n} {what} of `{best.label}` (no step markers)"
        end = np.concatenate((best.start_ps[1:], best.end_ps[-1:]))
        return Inferred(best.label, source, best.start_ps, np.maximum(end, best.start_ps), best.host_call)
    return _call_pattern(events)


def _programs(events: HostEvents) -> list[_Program]:
    return [*_jitted_calls(events), *_module_runs(events)]


def _jitted_calls(events: HostEvents) -> list[_Program]:
    """`PjitFunction(<f>)` host slices per function, nested duplicates merged by time."""
    trace = events.trace
    is_call = ev.string_table(trace.strings, JITTED_CALL.match)
    if not trace.num_events or not is_call.any():
        return []
    hits = np.flatnonzero(is_call[trace.ev_name] & events.host_track[trace.ev_track] & (trace.ev_dur_ps > 0))
    out = []
    for name_id in np.unique(trace.ev_name[hits]).tolist():
        mine = hits[trace.ev_name[hits] == name_id]
        start, end = _outermost(trace.ev_start_ps[mine], events.end_ps[mine])
        out.append(_Program(trace.strings[name_id], True, start, end))
    return out


def _outermost(start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Spans that start inside an earlier one joined to it."""
    order = np.argsort(start, kind="stable")
    start, end = start[order], end[order]
    reach = np.maximum.accumulate(end)
    first = np.concatenate(([True], start[1:] >= reach[:-1]))
    groups = np.cumsum(first) - 1
    last_end = np.zeros(int(first.sum()), np.int64)
    np.maximum.at(last_end, groups, end)
    return start[first], last_end


def _module_runs(events: HostEvents) -> list[_Program]:
    """Executions per XLA module: `XLA Modules` line events, and events naming an `hlo_module`,
    grouped by `run_id`."""
    trace = events.trace
    if not trace.num_events:
        return []
    on_modules_line = np.array([t.name == MODULES_LINE for t in trace.tracks], dtype=bool)
    line_events = np.flatnonzero(on_modules_line[trace.ev_track] & (trace.ev_dur_ps > 0))
    sampled = _names_with_module_arg(events)
    arg_events = (
        np.flatnonzero(sampled[trace.ev_name] & (trace.ev_dur_ps > 0)) if sampled.any() else line_events[:0]
    )
    runs: dict[tuple[str, int], list[int]] = collections.defaultdict(lambda: [np.iinfo(np.int64).max, 0])
    for indices, from_line in ((line_events, True), (arg_events, False)):
        for i, raw in zip(indices.tolist(), ev.args_of(trace, indices)):
            args = _decoded(bytes(raw))
            module = MODULE_ID.sub("", trace.strings[trace.ev_name[i]]) if from_line else args.hlo_module
            if module is None or args.run_id is None:
                continue
            span = runs[(module, args.run_id)]
            span[0] = min(span[0], int(trace.ev_start_ps[i]))
            span[1] = max(span[1], int(trace.ev_start_ps[i] + trace.ev_dur_ps[i]))
    per_module: dict[str, list[tuple[int, int]]] = collections.defaultdict(list)
    for (module, _), (lo, hi) in runs.items():
        per_module[module].append((lo, hi))
    out = []
    for module, spans in per_module.items():
        spans.sort()
        out.append(
            _Program(
                module,
                False,
                np.array([s for s, _ in spans], np.int64),
                np.array([e for _, e in spans], np.int64),
            )
        )
    return out


def _names_with_module_arg(events: HostEvents) -> np.ndarray:
    """A bool per string id: some of the first events of that name name an `hlo_module`."""
    trace = events.trace
    out = np.zeros(len(trace.strings), dtype=bool)
    names, first = np.unique(trace.ev_name, return_index=True)
    order = np.argsort(trace.ev_name, kind="stable")
    starts = np.searchsorted(trace.ev_name[order], names)
    for name_id, lo in zip(names.tolist(), starts.tolist()):
        sample = order[lo : lo + ARG_SAMPLES]
        sample = sample[trace.ev_name[sample] == name_id]
        out[name_id] = any(b'"hlo_module"' in bytes(raw) for raw in ev.args_of(trace, sample))
    return out


def _decoded(raw: bytes) -> _RunArgs:
    try:
        return _decode_run_args(raw) if raw else _RunArgs()
    except (msgspec.DecodeError, msgspec.ValidationError):
        return _RunArgs()


def _call_pattern(events: HostEvents) -> Inferred | None:
    """Steps from the main thread's repeating top-level call pattern (module docstring)."""
    trace = events.trace
    calls = events.of_roles(*ev.HOST_ROLES)
    if not calls.shape[0]:
        return None
    calls = calls[ev.enclosing_of_role(events, calls, ev.HOST_ROLES) < 0]
    busy = np.bincount(trace.ev_track[calls], weights=trace.ev_dur_ps[calls].astype(np.float64))
    main = int(np.argmax(busy))
    calls = calls[trace.ev_track[calls] == main]
    calls = calls[np.argsort(trace.ev_start_ps[calls], kind="stable")]
    names = trace.ev_name[calls].astype(np.int64)
    best = _best_anchor(names, trace.ev_dur_ps[calls])
    if best is None:
        return None
    anchor, period = best
    where = np.flatnonzero(names == anchor)
    start = trace.ev_start_ps[calls[where]]
    last_call = calls[min(int(where[-1]) + period, calls.shape[0]) - 1]
    end = np.concatenate((start[1:], [trace.ev_start_ps[last_call] + trace.ev_dur_ps[last_call]]))
    label = trace.strings[anchor]
    thread = trace.tracks[main].name
    calls_text = "1 top-level call" if period == 1 else f"{period} top-level calls"
    source = (
        f"inferred from {where.shape[0]} repetitions of the host call pattern starting with `{label}` "
        f"({calls_text} on {thread}; no step markers)"
    )
    return Inferred(label, source, start, np.maximum(end, start), True)


def _best_anchor(names: np.ndarray, durations: np.ndarray) -> tuple[int, int] | None:
    """(name id, period length) of the name whose commonest period covers the most calls, among
    those whose commonest period covers enough of the calls' time."""
    n = names.shape[0]
    # A stretch's key: its length and the wrapping sums of random words drawn per name and per pair
    # of neighbours (order-sensitive through the pairs), so every key is two subtractions.
    rng = np.random.default_rng(0)
    words = rng.integers(0, 2**63, size=(2, int(names.max()) + 1), dtype=np.uint64)
    pairs = words[1][names[1:]] * (words[0][names[:-1]] | np.uint64(1))
    with np.errstate(over="ignore"):
        singles = np.concatenate(([np.uint64(0)], np.cumsum(words[0][names], dtype=np.uint64)))
        doubles = np.concatenate(([np.uint64(0)] * 2, np.cumsum(pairs, dtype=np.uint64)))
    busy = np.concatenate(([0.0], np.cumsum(durations.astype(np.float64))))
    ids, first_seen, counts = np.unique(names, return_index=True, return_counts=True)
    repeated = counts >= MIN_REPEATS
    best: tuple[float, int, int, int] | None = None
    for name_id, first in zip(ids[repeated].tolist(), first_seen[repeated].tolist()):
        where = np.flatnonzero(names == name_id)
        lo, hi = where[:-1], where[1:]
        with np.errstate(over="ignore"):
            key = np.stack(
                ((hi - lo).astype(np.uint64), singles[hi] - singles[lo], doubles[hi] - doubles[lo + 1])
            )
        keys, inverse, key_counts = np.unique(key, axis=1, return_inverse=True, return_counts=True)
        top = int(np.argmax(key_counts))
        common = inverse.reshape(-1) == top
        time_share = float((busy[hi[common]] - busy[lo[common]]).sum()) / busy[-1] if busy[-1] > 0 else 0.0
        if time_share < MIN_PATTERN_COVERAGE:
            continue
        period = int(keys[0, top])
        calls_share = float(key_counts[top] * period) / n
        if best is None or (calls_share, -first) > best[:2]:
            best = (calls_share, -first, name_id, period)
    return None if best is None else (best[2], best[3])
