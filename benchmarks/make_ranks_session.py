"""Build a many-rank PyTorch session from the 4-rank DDP capture: its ranks replicated with shifted clocks.

Usage:
    .venv/bin/python benchmarks/make_ranks_session.py [OUT_DIR] [--ranks 64] [--shift-us 37]

Copy c (0, 1, …) of rank r of `tests/data/multirank/ddp4_slow_rank` becomes rank 4c + r: its
`baseTimeNanoseconds` moved by c × `--shift-us` µs (so the copies' clocks differ, and the last
arriver of every all-reduce is the last copy of rank 2), its `distributedInfo` rank and world size
set, written as `OUT_DIR/run/rank<4c+r>.<stamp>.pt.trace.json.gz` with one stamp per file within a
second, so the logdir's PyTorch grouping (`logdir.group_pytorch_sessions`) makes them one session.
OUT_DIR defaults to `ranks<N>` in the temporary directory (`tempfile.gettempdir()`); the run folder
is replaced.
"""

from __future__ import annotations

import argparse
import gzip
import json
import pathlib
import shutil
import tempfile

REPO = pathlib.Path(__file__).resolve().parent.parent
SOURCE = REPO / "tests/data/multirank/ddp4_slow_rank"
STAMP = 1796613515584857678  # the capture's first stamp; each file's stamp adds its rank (ns)


def source_ranks() -> list[dict]:
    """The capture's rank files, in rank order, as JSON."""
    files = sorted(SOURCE.glob("rank*.pt.trace.json.gz"), key=lambda p: int(p.name.split(".")[0][4:]))
    out = []
    for path in files:
        with gzip.open(path, "rt", encoding="utf-8") as f:
            out.append(json.load(f))
    return out


def build(out: pathlib.Path, ranks: int, shift_us: float) -> pathlib.Path:
    """Write the session; returns its run folder."""
    sources = source_ranks()
    run = out / "run"
    if run.exists():
        shutil.rmtree(run)
    run.mkdir(parents=True)
    for rank in range(ranks):
        copy, original = divmod(rank, len(sources))
        trace = dict(sources[original])
        trace["baseTimeNanoseconds"] = sources[original]["baseTimeNanoseconds"] + round(
            copy * shift_us * 1000
        )
        info = dict(trace.get("distributedInfo") or {})
        info.update(rank=rank, world_size=ranks)
        trace["distributedInfo"] = info
        with gzip.open(run / f"rank{rank}.{STAMP + rank}.pt.trace.json.gz", "wt", encoding="utf-8") as f:
            json.dump(trace, f)
    return run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", type=pathlib.Path, help="output folder (default: in the temp dir)")
    parser.add_argument("--ranks", type=int, default=64)
    parser.add_argument("--shift-us", type=float, default=37.0, help="clock shift between copies (µs)")
    args = parser.parse_args(argv)
    out = args.out or pathlib.Path(tempfile.gettempdir(), f"ranks{args.ranks}")
    run = build(out, args.ranks, args.shift_us)
    print(f"{args.ranks} ranks in {run}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
