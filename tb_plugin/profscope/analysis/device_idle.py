"""Device busy and idle time per device and stream, and the idle gaps split by cause (HTA's rules).

Busy time of a device = the union of its streams' activity (kernels, copies, memsets) inside the
scope's windows; idle = window − busy. Per stream, each gap between consecutive device events (the
next event's start minus the latest end before it, gaps > 0 only) belongs to the scope when the
event after it starts inside a scope window, and is one of:
- host wait: the launch call of the next event started after the previous event ended (the host
  had not yet asked for the work: the device waited for the host);
- kernel wait: not host wait and the gap is under `KERNEL_WAIT_PS` (30 µs): the overhead between
  back-to-back launches;
- other: the rest, gaps of 30 µs or more that are not host wait (waits on other streams' events,
  synchronisation, or no launch linked to the event, as on TPU).

The threshold is HTA's default `consecutive_kernel_delay=30`. HTA's docs say ns, but its code
compares the 30 with the trace's own times, µs in every Kineto trace, so HTA's kernel wait is gaps
under 30 µs, the scale of back-to-back launch overheads. Taken as 30 ns it would be shorter than any
gap a whole-µs trace can show (every gap > 0 is ≥ 1 µs): kernel wait always 0, its time in "other".
profscope compares 30 µs with the exact picosecond times.
"""

from __future__ import annotations

import numpy as np

from profscope.analysis import intervals
from profscope.analysis.answers import OverviewDevice, OverviewIdle, OverviewStream
from profscope.analysis.events import DEVICE_ROLES, HostEvents
from profscope.model import arrays

KERNEL_WAIT_PS = 30 * 10**6  # 30 µs (module docstring)


def in_windows(times: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Bool per time: inside one of the sorted, disjoint windows [lo, hi).

    Times mostly come in a few ascending runs (events in order, one run per track): then each
    window is found in each run, [searchsorted(run, lo), searchsorted(run, hi)), and marked by a
    +1 / -1 at its ends and a running sum, instead of searching every time among the windows."""
    times = np.asarray(times)
    n = times.shape[0]
    breaks = (np.flatnonzero(times[1:] < times[:-1]) + 1).tolist()
    if (len(breaks) + 1) * lo.shape[0] > n:
        k = np.searchsorted(lo, times, side="right") - 1
        return (k >= 0) & (times < hi[np.maximum(k, 0)])
    bounds = [0, *breaks, n]
    marks = np.zeros(n + 1, np.int32)
    for first, end in zip(bounds, bounds[1:]):
        run = times[first:end]
        np.add.at(marks, first + np.searchsorted(run, lo, side="left"), 1)
        np.add.at(marks, first + np.searchsorted(run, hi, side="left"), -1)
    return np.cumsum(marks[:-1]) > 0


def devices(events: HostEvents, lo: np.ndarray, hi: np.ndarray, track_base: int) -> list[OverviewDevice]:
    """Per device section with activity: busy/idle in the windows and its streams' idle split.
    `track_base` turns host-local track ids into timeline ids."""
    trace = events.trace
    device_events = events.of_roles(*DEVICE_ROLES)
    if not device_events.shape[0]:
        return []
    window_ns = float((hi - lo).sum()) / 1e3
    start, end = trace.ev_start_ps, events.end_ps
    tracks = trace.ev_track[device_events]
    out = []
    sections: dict[int, list[int]] = {}
    for t in arrays.unique(tracks).tolist():
        sections.setdefault(trace.tracks[t].section, []).append(t)
    names = {s.id: s for s in trace.sections}
    for section, section_tracks in sections.items():
        mine = device_events[np.isin(tracks, section_tracks)]
        busy = float(intervals.covered(intervals.merge(start[mine], end[mine]), lo, hi).sum()) / 1e3
        streams = [
            _stream(events, device_events[tracks == t], lo, hi, t + track_base) for t in section_tracks
        ]
        out.append(
            OverviewDevice(
                name=names[section].name,
                kind=names[section].kind,
                window_ns=window_ns,
                busy_ns=busy,
                idle_ns=max(window_ns - busy, 0.0),
                busy_fraction=busy / window_ns if window_ns > 0 else 0.0,
                streams=streams,
            )
        )
    return out


def _stream(
    events: HostEvents, mine: np.ndarray, lo: np.ndarray, hi: np.ndarray, track: int
) -> OverviewStream:
    trace = events.trace
    start = trace.ev_start_ps[mine]
    end = start + trace.ev_dur_ps[mine]
    busy = float(intervals.covered(intervals.merge(start, end), lo, hi).sum()) / 1e3
    scoped = in_windows(start, lo, hi)
    idle = idle_split(events, mine)
    prev_end, gap, host_wait, kernel_wait = idle
    keep = scoped & (gap > 0)
    keep[0] = False
    g = gap[keep]
    hw, kw = host_wait[keep], kernel_wait[keep]
    return OverviewStream(
        name=trace.tracks[int(trace.ev_track[mine[0]])].name,
        track=track,
        events=int(scoped.sum()),
        busy_ns=busy,
        idle=OverviewIdle(
            gaps=int(keep.sum()),
            host_wait_ns=float(g[hw].sum()) / 1e3,
            kernel_wait_ns=float(g[kw].sum()) / 1e3,
            other_ns=float(g[~hw & ~kw].sum()) / 1e3,
        ),
    )


def idle_split(events: HostEvents, mine: np.ndarray) -> tuple[np.ndarray, ...]:
    """For the events `mine` of one stream (in start order): the latest end before each, the gap
    before it (ps, first one 0), and whether that gap is host wait or kernel wait."""
    trace = events.trace
    start = trace.ev_start_ps[mine]
    end = start + trace.ev_dur_ps[mine]
    prev_end = np.concatenate(([start[0]], np.maximum.accumulate(end)[:-1])) if mine.shape[0] else end
    gap = start - prev_end
    launch = events.launch[mine]
    linked = launch >= 0
    launch_start = np.where(linked, trace.ev_start_ps[np.maximum(launch, 0)], np.iinfo(np.int64).min)
    host_wait = linked & (launch_start > prev_end)
    kernel_wait = ~host_wait & (gap < KERNEL_WAIT_PS)
    return prev_end, gap, host_wait, kernel_wait


def host_wait_idle(events: HostEvents, lo: np.ndarray, hi: np.ndarray) -> float:
    """The time (ps) in the windows when no device event runs and a stream sits in a host-wait gap:
    the device idle because the host had not yet launched its next work (the union of the streams'
    host-wait gaps minus all device activity; `launch_bound`'s cost)."""
    trace = events.trace
    device_events = events.of_roles(*DEVICE_ROLES)
    gaps_lo, gaps_hi = [], []
    for t in arrays.unique(trace.ev_track[device_events]).tolist():
        mine = device_events[trace.ev_track[device_events] == t]
        prev_end, gap, host_wait, _ = idle_split(events, mine)
        keep = host_wait & (gap > 0) & in_windows(trace.ev_start_ps[mine], lo, hi)
        gaps_lo.append(prev_end[keep])
        gaps_hi.append(trace.ev_start_ps[mine][keep])
    if not gaps_lo:
        return 0.0
    gaps = intervals.merge(np.concatenate(gaps_lo), np.concatenate(gaps_hi))
    busy = intervals.merge(trace.ev_start_ps[device_events], events.end_ps[device_events])
    idle = float(intervals.covered(gaps, lo, hi).sum())
    return idle - float(intervals.covered(intervals.intersect(gaps, busy), lo, hi).sum())
