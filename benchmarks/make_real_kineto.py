"""A big Kineto trace made of one real capture repeated in time, for ingest benchmarks.

Usage:
    python benchmarks/make_real_kineto.py SOURCE.pt.trace.json[.gz] OUT.json [--bytes 1900000000]

Synthetic events are easier to read than real ones (short args, few keys, no stacks), so a reader's
speed on them says little. This writes the capture's own text again and again, until the output
holds at least `--bytes`: the head and tail of the file (the top-level keys around `traceEvents`)
once, verbatim, the metadata (`M`) events once, then each copy of the other events with only these
numbers changed, so every copy is what another stretch of the same training job would look like:

- `ts` is shifted by whole µs past the end of the previous copy (its decimals are kept as written,
  so a nanosecond-resolution capture stays exact);
- the ids that link events (flow `id` and `bind_id`, `correlation`, `External id`, Python stack
  `Python id` / `Python parent id`, `Ev Idx`, `Record function id`, autograd `Sequence number`,
  `wait_on_cuda_event_record_corr_id`) get a per-copy offset, so flows, launch → kernel links and
  stacks stay within their copy;
- `ProfilerStep#N` is numbered on, so steps stay distinct.

Shapes, stacks, args, memory events, the window's instants: everything else is kept byte for byte.
Real captures to start from: the Kineto traces of `tests/data/kineto` (copies of the corpus, see its
`PROVENANCE.md`), e.g. `bert_small.pt.trace.json.gz` (H100, Python stacks, about 420 bytes per
event) and `alexnet.pt.trace.json.gz` (A100, about 230 bytes per event).
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import sys
import time
from pathlib import Path
from typing import NamedTuple

import numpy as np

_LINK_KEYS = (
    "id",
    "bind_id",
    "correlation",
    "External id",
    "external id",
    "Python id",
    "Python parent id",
    "Ev Idx",
    "Record function id",
    "Sequence number",
    "wait_on_cuda_event_record_corr_id",
)
# One pattern for every number that changes: its whole part is the hole, anything after it
# (a `ts`'s decimals) stays in the text.
_HOLES = re.compile(
    r'"(?P<key>ts|' + "|".join(re.escape(k) for k in _LINK_KEYS) + r')"\s*:\s*(?P<value>-?\d+)(?![\deE])'
    r'|"name"\s*:\s*"ProfilerStep#(?P<step>\d+)"'
)
_TS, _LINK, _STEP = 0, 1, 2
_SEPARATOR = ",\n  "


class Body(NamedTuple):
    """The repeated events as one `%d` template, with what each hole holds."""

    template: bytes
    kinds: np.ndarray  # _TS, _LINK or _STEP per hole
    values: np.ndarray  # the number in the source per hole
    period_us: int  # how far one copy is shifted from the previous one


def load(source: str) -> str:
    """The source trace's text (gzip or not)."""
    raw = Path(source).read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return raw.decode("utf-8")


def split_events(text: str) -> tuple[int, int, list[tuple[str, dict]]]:
    """(start, end) of the events array's content and each event's (text, value)."""
    key = re.search(r'"traceEvents"\s*:\s*\[', text)
    if key is not None:
        start = key.end()
    elif text.lstrip().startswith("["):
        start = text.index("[") + 1
    else:
        raise SystemExit("the source has no traceEvents array")
    decoder = json.JSONDecoder()
    skip = re.compile(r"[\s,]*")
    events = []
    pos = start
    while True:
        pos = skip.match(text, pos).end()
        if text[pos] == "]":
            return start, pos, events
        value, end = decoder.raw_decode(text, pos)
        events.append((text[pos:end], value))
        pos = end


def body_template(events: list[tuple[str, dict]]) -> Body:
    """The non-metadata events as one template; fails when a `ts` could not be found as a hole."""
    literals: list[str] = []
    kinds: list[int] = []
    values: list[int] = []
    text = _SEPARATOR.join(t for t, e in events if e.get("ph") != "M")
    cursor = 0
    for m in _HOLES.finditer(text):
        group = "step" if m.group("step") is not None else "value"
        value = int(m.group(group))
        kind = _STEP if group == "step" else _TS if m.group("key") == "ts" else _LINK
        if kind == _LINK and value < 0:
            continue  # a "none" marker, not an id
        literals.append(text[cursor : m.start(group)].replace("%", "%%"))
        kinds.append(kind)
        values.append(value)
        cursor = m.end(group)
    literals.append(text[cursor:].replace("%", "%%"))
    timed = [e for t, e in events if e.get("ph") != "M" and "ts" in e]
    if kinds.count(_TS) != len(timed):
        raise SystemExit(f"found {kinds.count(_TS)} ts of {len(timed)} events as plain numbers")
    begin = min(float(e["ts"]) for e in timed)
    end = max(float(e["ts"]) + float(e.get("dur") or 0) for e in timed)
    return Body(
        template="%d".join(literals).encode("utf-8"),
        kinds=np.array(kinds, dtype=np.int8),
        values=np.array(values, dtype=np.int64),
        period_us=int(end - begin) + 1000,
    )


def make(source: str, out: str, min_bytes: int) -> tuple[int, int, int]:
    """Write the repeated trace; returns (bytes, events, copies)."""
    text = load(source)
    start, end, events = split_events(text)
    body = body_template(events)
    meta = [t for t, e in events if e.get("ph") == "M"]
    per_copy = len(events) - len(meta)
    link_step = int(body.values[body.kinds == _LINK].max(initial=0)) + 1
    step_step = int(body.values[body.kinds == _STEP].max(initial=0)) + 1
    shift_per_kind = np.array([body.period_us, link_step, step_step], dtype=np.int64)
    steps = shift_per_kind[body.kinds]
    with open(out, "wb") as f:
        written = f.write((text[:start] + "\n  " + _SEPARATOR.join(meta)).encode("utf-8"))
        copies = 0
        while written < min_bytes:
            lead = _SEPARATOR.encode() if copies or meta else b""
            shifted = body.values + steps * copies
            written += f.write(lead + body.template % tuple(shifted.tolist()))
            copies += 1
        written += f.write(("\n  " + text[end:]).encode("utf-8"))
    return written, len(meta) + copies * per_copy, copies


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("source", help="a real Kineto trace, .json or .json.gz")
    parser.add_argument("out", help="the repeated trace to write (plain JSON)")
    parser.add_argument("--bytes", type=int, default=1_900_000_000, help="at least this many bytes")
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    size, n_events, copies = make(args.source, args.out, args.bytes)
    print(
        f"wrote {args.out}: {size / 1e6:.1f} MB, {n_events} events ({size / max(n_events, 1):.0f} bytes each), "
        f"{copies} copies of {args.source} in {time.perf_counter() - t0:.1f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
