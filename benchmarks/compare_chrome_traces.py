"""Whether two copies of the Chrome / Kineto reader give the same finalized traces.

Usage:
    python benchmarks/compare_chrome_traces.py BASELINE_DIR [TRACE ...] [--helper TRACE ...]

A speed change to the reader must not change what it reads. This reads every Chrome / Kineto file
under `tests/data` (and the TRACEs given) with this tree's package and with the one in
BASELINE_DIR (a folder holding a `profscope/` package, e.g. `tb_plugin` of a clean clone of the
main branch), each in its own process, and compares a digest of every field of the finalized
`Trace`: each column's dtype, shape and bytes, the tables, the strings, the warnings, skip counts
and metadata. Files named after `--helper` are read with the second decoding process even below
`reader.PARALLEL_MIN_BYTES`, so the hand-over between the two halves is compared too.

Prints one line per file that differs (the fields that do) and a summary; the exit status is 1
when any file differs. Not a timed test: it needs a second tree, and reads every file twice.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

_REPO = Path(__file__).resolve().parents[1]
_SKIP_PARTS = ("roofline", "/hta/")  # JSON files under tests/data that are not traces


def _digest(value: Any) -> str:
    """A digest of a Trace field: arrays by dtype, shape and bytes; containers item by item."""
    import numpy as np

    d = hashlib.sha256()

    def walk(v: Any) -> None:
        if isinstance(v, np.ndarray):
            d.update(f"{v.dtype}{v.shape}".encode())
            d.update(np.ascontiguousarray(v).tobytes())
        elif dataclasses.is_dataclass(v):
            for f in dataclasses.fields(v):
                d.update(f.name.encode())
                walk(getattr(v, f.name))
        elif isinstance(v, dict):
            for k in v:
                d.update(repr(k).encode())
                walk(v[k])
        elif isinstance(v, (list, tuple)):
            d.update(f"[{len(v)}".encode())
            for x in v:
                walk(x)
        else:
            d.update(repr(v).encode())

    walk(value)
    return d.hexdigest()[:16]


def digests(paths: list[str], helper: set[str]) -> dict[str, Any]:
    """{path: {field: digest}} of the traces this process's package reads, or the refusal."""
    import fsspec

    from profscope.errors import UnreadableProfile
    from profscope.formats.chrome import reader

    default_min = reader.PARALLEL_MIN_BYTES
    out: dict[str, Any] = {}
    for path in paths:
        reader.PARALLEL_MIN_BYTES = 1 if path in helper else default_min
        try:
            trace = reader.read(path, fsspec.filesystem("file"))
        except UnreadableProfile as exc:
            out[path] = f"unreadable: {exc}"
            continue
        fields = (f.name for f in dataclasses.fields(trace) if f.name != "attachments")
        out[path] = {name: _digest(getattr(trace, name)) for name in fields}
    return out


def _run(package_dir: str, paths: list[str], helper: list[str]) -> dict[str, Any]:
    """`digests` in a fresh process importing `profscope` from `package_dir`."""
    env = dict(os.environ, PYTHONPATH=package_dir)
    job = json.dumps({"paths": paths, "helper": helper})
    done = subprocess.run(
        [sys.executable, __file__, "--child"], input=job, capture_output=True, text=True, env=env, check=True
    )
    return json.loads(done.stdout)


def main() -> None:
    if sys.argv[1:] == ["--child"]:
        job = json.loads(sys.stdin.read())
        json.dump(digests(job["paths"], set(job["helper"])), sys.stdout)
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("baseline", help="folder holding the baseline's profscope/ package")
    parser.add_argument("traces", nargs="*", help="more Chrome / Kineto files to compare")
    parser.add_argument("--helper", nargs="*", default=[], help="files to read with the helper process")
    args = parser.parse_args()
    corpus = sorted(
        str(p)
        for pattern in ("*.json", "*.json.gz")
        for p in (_REPO / "tests" / "data").rglob(pattern)
        if not any(part in str(p) for part in _SKIP_PARTS)
    )
    paths = corpus + args.traces + args.helper
    ours = _run(str(_REPO / "tb_plugin"), paths, args.helper)
    theirs = _run(args.baseline, paths, args.helper)
    differ = 0
    for path in paths:
        a, b = ours[path], theirs[path]
        if a == b:
            continue
        differ += 1
        fields = (
            [k for k in a if a.get(k) != b.get(k)] if isinstance(a, dict) and isinstance(b, dict) else [a, b]
        )
        print(f"DIFFERS {path}: {fields}")
    print(f"{len(paths)} files, {differ} differ ({len(corpus)} under tests/data)")
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
