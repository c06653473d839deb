"""Print what a job's capture really holds: per thread/line, the events at nesting depth 0-2 (digits
collapsed to N), their count, the args they carry and the parent they sit under.

Kineto files are read with gzip+json only; XPlanes with profscope's reader, so run it with the
profscope venv: `.venv/bin/python tests/data/jobs/capture/inspect_job.py tests/data/jobs/JOB [...]`.
"""

import collections
import glob
import gzip
import json
import os
import re
import sys

MAX_DEPTH = 2


def norm(name: str) -> str:
    return re.sub(r"\d+", "N", name)


def report(rows, out):
    """rows: (track, depth, name, parent, start, dur, args dict). Prints a per-track summary."""
    by_track = collections.defaultdict(list)
    for r in rows:
        by_track[r[0]].append(r)
    for track, evs in sorted(by_track.items(), key=lambda kv: -len(kv[1])):
        tops = [e for e in evs if e[1] == 0]
        out.append(f"  track {track!r}: {len(evs)} events, {len(tops)} at depth 0")
        stats = collections.OrderedDict()
        for _, depth, name, parent, _start, dur, args in sorted(evs, key=lambda e: e[4]):
            if depth > MAX_DEPTH:
                continue
            key = (depth, norm(name), norm(parent or ""))
            s = stats.setdefault(
                key, {"n": 0, "dur": 0.0, "args": collections.Counter(), "ex": name, "argex": None}
            )
            s["n"] += 1
            s["dur"] += dur
            for k in args:
                s["args"][k] += 1
            if s["argex"] is None and args:
                s["argex"] = {k: args[k] for k in list(args)[:6]}
        shown = sorted(stats.items(), key=lambda kv: (kv[0][0], -kv[1]["n"]))
        for (depth, name, parent), s in shown[:60]:
            if depth == 2 and s["n"] < 2:
                continue
            args = f" args={dict(s['args'])} e.g. {s['argex']}" if s["args"] else ""
            out.append(
                f"    d{depth} {s['ex']!r} ~ {name!r} x{s['n']} under {parent!r} "
                f"total {s['dur'] / 1e3:.2f} ms{args}"
            )
        if len(shown) > 60:
            out.append(f"    ... {len(shown) - 60} more names")


def nest(events):
    """events: list of (track, name, start_us, dur_us, args). Returns rows with depth and parent."""
    rows = []
    by_track = collections.defaultdict(list)
    for e in events:
        by_track[e[0]].append(e)
    for track, evs in by_track.items():
        evs.sort(key=lambda e: (e[2], -e[3]))
        stack = []
        for _track, name, start, dur, args in evs:
            while stack and start >= stack[-1][1] + stack[-1][2]:
                stack.pop()
            parent = stack[-1][0] if stack else None
            rows.append((track, len(stack), name, parent, start, dur, args))
            stack.append((name, start, dur))
    return rows


def kineto(path, out):
    with gzip.open(path, "rt") as f:
        doc = json.load(f)
    threads = {}
    for e in doc["traceEvents"]:
        if e.get("ph") == "M" and e.get("name") == "thread_name":
            threads[(e["pid"], e["tid"])] = e["args"]["name"]
    cats = collections.Counter(e.get("cat") for e in doc["traceEvents"] if e.get("ph") == "X")
    out.append(f"  categories: {dict(cats)}")
    events = []
    for e in doc["traceEvents"]:
        if e.get("ph") != "X":
            continue
        key = (e["pid"], e["tid"])
        track = f"{threads.get(key, '')} pid={e['pid']} tid={e['tid']}"
        args = {
            k: v
            for k, v in (e.get("args") or {}).items()
            if k
            not in (
                "External id",
                "Record function id",
                "Ev Idx",
                "Sequence number",
                "Fwd thread id",
                "Python id",
                "Python parent id",
                "Python thread",
            )
        }
        events.append((track, f"[{e.get('cat')}] {e['name']}", float(e["ts"]), float(e.get("dur", 0)), args))
    report(nest(events), out)


def xplane(path, out):
    import fsspec

    from profscope.formats.xplane import reader

    t = reader.read(path, fsspec.filesystem("file"))
    sections = {s.id: s.name for s in t.sections}
    tracks = {tr.id: f"{sections.get(tr.section)} / {tr.name}" for tr in t.tracks}
    rows = []
    for i in range(t.num_events):
        raw = t.args_json(i)
        args = json.loads(raw) if raw else {}
        rows.append(
            (
                tracks[int(t.ev_track[i])],
                int(t.ev_depth[i]),
                t.strings[int(t.ev_name[i])],
                None,
                int(t.ev_start_ps[i]) / 1e6,
                int(t.ev_dur_ps[i]) / 1e6,
                args,
            )
        )
    # parent: recompute from nesting within the track
    events = [(r[0], r[2], r[4], r[5], r[6]) for r in rows]
    out.append(f"  sections: {[s.name for s in t.sections]}")
    report(nest(events), out)


def main(dirs):
    for d in dirs:
        out = [f"== {d}"]
        files = sorted(
            glob.glob(os.path.join(d, "**", "*.pt.trace.json.gz"), recursive=True)
            + glob.glob(os.path.join(d, "**", "*.xplane.pb"), recursive=True)
        )
        for p in files:
            out.append(f" file {os.path.relpath(p, d)} ({os.path.getsize(p)} bytes)")
            (kineto if p.endswith(".gz") else xplane)(p, out)
        print("\n".join(out))


if __name__ == "__main__":
    main(sys.argv[1:])
