"""Make a big Chrome / Kineto trace by repeating a real one along the time axis.

Usage:
    python benchmarks/make_big_json.py OUT.json [--source TRACE.json[.gz]]
        [--min-bytes 1100000000] [--min-events 3000000]

The output keeps the source's own text: its head and tail (top-level keys before and after the
events array) verbatim, and each event's original text with only some numbers rewritten. Each
repetition shifts every `ts` by a whole number of µs past the end of the previous copy (the
decimals are kept as written, so a nanosecond-resolution source stays exact) and renumbers flow
`id`, `correlation` and `External id` so launch → kernel links and flows stay distinct. Metadata
(`M`) events are written once. Repetition goes on until the output holds at least --min-bytes and
--min-events. The default source is the nanosecond-resolution V100 Kineto trace of the corpus, the
copy in tests/data/kineto (same bytes).
"""

from __future__ import annotations

import argparse
import decimal
import gzip
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

DEFAULT_SOURCE = str(
    Path(__file__).resolve().parent.parent / "tests/data/kineto/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"
)
_TS = re.compile(r'"ts"\s*:\s*(-?\d+)(?:\.(\d+))?')
_ID = re.compile(r'"id"\s*:\s*(\d+)')
_ARG_IDS = re.compile(r'"(?:correlation|External id|external id)"\s*:\s*(\d+)')
_WS_COMMA = re.compile(r"[\s,]*")


class _Event:
    """One event's source text with holes for the numbers that change per repetition."""

    def __init__(self, text: str) -> None:
        args_at = text.find('"args"')
        head, tail = (text, "") if args_at < 0 else (text[:args_at], text[args_at:])
        pieces: list[str] = []
        self.ts: tuple[int, str] | None = None
        self.ids: list[int] = []
        cursor = 0
        holes = []
        m = _TS.search(head)
        if m:
            holes.append((m.start(1), m.end(), "ts"))
            self.ts = (int(m.group(1)), m.group(2) or "")
        m = _ID.search(head)
        if m:
            holes.append((m.start(1), m.end(1), "id"))
        offset = len(head)
        for m in _ARG_IDS.finditer(tail):
            holes.append((offset + m.start(1), offset + m.end(1), "id"))
        for start, end, kind in sorted(holes):
            pieces.append(text[cursor:start].replace("%", "%%"))
            if kind == "ts":
                pieces.append("%(ts)s")
            else:
                pieces.append(f"%(id{len(self.ids)})s")
                self.ids.append(int(text[start:end]))
            cursor = end
        pieces.append(text[cursor:].replace("%", "%%"))
        self.template = "".join(pieces)

    def render(self, shift_us: int, id_shift: int) -> str:
        values: dict[str, Any] = {f"id{k}": ident + id_shift for k, ident in enumerate(self.ids)}
        if self.ts is not None:
            whole, frac = self.ts
            values["ts"] = f"{whole + shift_us}.{frac}" if frac else str(whole + shift_us)
        return self.template % values


def _events_span(text: str) -> tuple[int, int, list[tuple[str, dict[str, Any]]]]:
    """(start, end) of the events array's content and each event's (text, parsed value)."""
    decoder = json.JSONDecoder(parse_float=decimal.Decimal)
    stripped = text.lstrip()
    if stripped.startswith("["):
        start = text.index("[") + 1
    else:
        key = re.search(r'"traceEvents"\s*:\s*\[', text)
        if key is None:
            raise SystemExit("the source has no traceEvents array")
        start = key.end()
    events = []
    pos = start
    while True:
        pos = _WS_COMMA.match(text, pos).end()
        if text[pos] == "]":
            return start, pos, events
        value, end = decoder.raw_decode(text, pos)
        events.append((text[pos:end], value))
        pos = end


def make(out: str, source: str, min_bytes: int, min_events: int) -> tuple[int, int, int]:
    """Write the repeated trace; returns (bytes, events, repetitions)."""
    raw = Path(source).read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    text = raw.decode("utf-8")
    start, end, events = _events_span(text)
    meta = [t for t, e in events if e.get("ph") == "M"]
    body = [(t, e) for t, e in events if e.get("ph") != "M"]
    begin = min(decimal.Decimal(e["ts"]) for _, e in body if "ts" in e)
    finish = max(decimal.Decimal(e["ts"]) + decimal.Decimal(e.get("dur", 0)) for _, e in body if "ts" in e)
    period_us = int(finish - begin) + 1000  # whole µs, so the decimals of ts never change
    templates = [_Event(t) for t, _ in body]
    max_id = max((i for t in templates for i in t.ids), default=0)
    separator = ",\n  "
    written = n_events = reps = 0  # characters written: never more than the bytes
    with open(out, "w", encoding="utf-8") as f:
        written += f.write(text[:start] + "\n  ")
        if meta:
            written += f.write(separator.join(meta))
            n_events += len(meta)
        while written < min_bytes or n_events < min_events:
            shift, id_shift = reps * period_us, reps * (max_id + 1)
            lead = separator if n_events else ""
            written += f.write(lead + separator.join(t.render(shift, id_shift) for t in templates))
            n_events += len(templates)
            reps += 1
        written += f.write("\n  " + text[end:])
    return Path(out).stat().st_size, n_events, reps


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("out")
    parser.add_argument("--source", default=DEFAULT_SOURCE)
    parser.add_argument("--min-bytes", type=int, default=1_100_000_000)
    parser.add_argument("--min-events", type=int, default=3_000_000)
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    size, n, reps = make(args.out, args.source, args.min_bytes, args.min_events)
    print(
        f"wrote {args.out}: {size / 1e6:.1f} MB, {n} events, {reps} copies of {args.source} "
        f"in {time.perf_counter() - t0:.1f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
