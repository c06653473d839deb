"""Get PyTorch/XLA's runtime logs into a TensorBoard logdir, where the profscope XLA view reads them.

Two ways, usable together:

- `xla_env(run_dir)` returns the environment variables that make the runtime itself write its
  per-step metrics (`XLA_METRICS_FILE`), graph dumps (`XLA_SAVE_TENSORS_FILE`) and debug analysis
  (`PT_XLA_DEBUG_FILE`) into the run folder. Set them before `import torch_xla`; the runtime writes
  with plain file I/O, so `run_dir` must be a local path.
- `log_metrics(run_dir, step)` appends a snapshot of `torch_xla.debug.metrics` to the run folder
  from Python, at the steps you choose; it writes through fsspec, so `gs://…` works too.

File names follow profscope's convention `<name>.xla_metrics.txt`, `<name>.xla_graphs.txt[.N]`,
`<name>.xla_debug.txt`, so one process's logs show up as one host `<name>` of the run.
torch_xla is imported only when `log_metrics` runs; profscope itself never needs it.
"""

from __future__ import annotations

import os
from typing import Any

import fsspec

GRAPH_FORMATS = ("text", "hlo", "dot", "stablehlo")


def metrics_path(run_dir: str, name: str = "xla", ordinal: int | None = None) -> str:
    """Where `log_metrics` writes: `<run_dir>/<name>.xla_metrics.txt`, plus `.<ordinal>` if given."""
    path = f"{run_dir.rstrip('/')}/{name}.xla_metrics.txt"
    return path if ordinal is None else f"{path}.{ordinal}"


def xla_env(
    run_dir: str,
    *,
    name: str = "xla",
    metrics: bool = True,
    graphs: bool = True,
    graph_format: str = "text",
    debug_level: int = 2,
    ir_debug: bool = True,
) -> dict[str, str]:
    """Environment variables for PyTorch/XLA to log into `run_dir` (a local folder).

    `graphs` dumps every graph (costly on long runs: the file grows each step); `ir_debug` records the
    Python line that created each IR node, which lets profscope point at the code that changed a
    tensor size; `debug_level` 1 logs compilations only, 2 also executions (PT_XLA_DEBUG_LEVEL).
    """
    if "://" in run_dir and not run_dir.startswith("file://"):
        raise ValueError(f"{run_dir}: PyTorch/XLA writes these logs with local file I/O; give a local folder")
    if graph_format not in GRAPH_FORMATS:
        raise ValueError(f"graph_format must be one of {GRAPH_FORMATS}, got {graph_format!r}")
    base = os.path.join(run_dir.removeprefix("file://"), name)
    env: dict[str, str] = {}
    if metrics:
        env["XLA_METRICS_FILE"] = f"{base}.xla_metrics.txt"
    if graphs:
        env["XLA_SAVE_TENSORS_FILE"] = f"{base}.xla_graphs.txt"  # the runtime appends .<ordinal>
        env["XLA_SAVE_TENSORS_FMT"] = graph_format
    if ir_debug:
        env["XLA_IR_DEBUG"] = "1"
        env["XLA_HLO_DEBUG"] = "1"
    if debug_level > 0:
        env["PT_XLA_DEBUG_LEVEL"] = str(debug_level)
        env["PT_XLA_DEBUG_FILE"] = f"{base}.xla_debug.txt"
    return env


def _process_ordinal() -> int | None:
    """This process's global ordinal when several processes train together, else None."""
    try:
        import torch_xla.runtime as xr
    except ImportError:
        return None
    try:
        return int(xr.global_ordinal()) if int(xr.world_size()) > 1 else None
    except (RuntimeError, AttributeError):
        return None


def log_metrics(
    run_dir: str,
    step: int | None = None,
    *,
    name: str = "xla",
    short: bool = False,
    storage_options: dict[str, Any] | None = None,
) -> str:
    """Append the current `torch_xla.debug.metrics` report to `run_dir`; return the file written.

    With `step`, the report gets the `[MetricsData; step=N]` header `XLA_METRICS_FILE` uses, so the
    XLA view charts compilations, transfers and CPU fallbacks per step. Each process of a multi-process
    job writes its own `.<ordinal>` file. `short=True` logs `short_metrics_report()` (compile,
    execute and transfer metrics plus every CPU-fallback counter).
    """
    try:
        import torch_xla.debug.metrics as met
    except ImportError as exc:
        raise ImportError("profscope.xla.log_metrics needs torch_xla (pip install torch-xla)") from exc
    if step is not None and step < 0:
        raise ValueError(f"step must be >= 0, got {step}")
    report = met.short_metrics_report() if short else met.metrics_report()
    header = f"[MetricsData; step={step}]\n" if step is not None else ""
    path = metrics_path(run_dir, name, _process_ordinal())
    data = (header + report + ("" if report.endswith("\n") else "\n")).encode("utf-8")
    fs, fs_path = fsspec.core.url_to_fs(path, **(storage_options or {}))
    parent = fs_path.rsplit("/", 1)[0]
    if parent:
        fs.makedirs(parent, exist_ok=True)
    try:
        with fs.open(fs_path, "ab") as handle:
            handle.write(data)
    except (NotImplementedError, ValueError):
        # Object stores cannot append: rewrite the object with the new report at the end.
        previous = fs.cat_file(fs_path) if fs.exists(fs_path) else b""
        fs.pipe_file(fs_path, previous + data)
    return path
