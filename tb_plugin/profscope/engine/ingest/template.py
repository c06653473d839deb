"""The template process of local ingests (`python -m profscope.engine.ingest.template`).

It imports every reader once, then reads job lines from its stdin; for each it forks a child that
runs `ingest.run_ingest` and exits, and reports the child's pid and exit code on its stdout (the
protocol and the hygiene are in `children`). A child forks its readers' helper processes too
(`registry.fork_helpers`): they start without an interpreter of their own.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from typing import Any

from profscope.engine.ingest import manager as ingest
from profscope.engine.ingest import memory as ingest_memory
from profscope.engine.ingest.children import hold_log_lock, watch_parent, watch_parent_from_env
from profscope.formats import registry


def _serve() -> int:
    """The template's loop: a job line in, a child forked for it, its pid and exit code out."""
    report = os.fdopen(os.dup(1), "w", buffering=1)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 1)  # nothing but answers reaches the server's pipe
    ingest.import_readers()
    for line in sys.stdin:
        if not line.strip():
            continue
        job = json.loads(line)
        if not hasattr(os, "fork"):
            report.write(json.dumps({"pid": os.getpid()}) + "\n")
            _become_job(job)
            return 0  # not reached: the job ends the process
        pid = os.fork()
        if pid == 0:
            report.close()
            _become_job(job)
        report.write(json.dumps({"pid": pid}) + "\n")
        _, status = os.waitpid(pid, 0)
        report.write(json.dumps({"exit": os.waitstatus_to_exitcode(status)}) + "\n")
    return 0


def _become_job(job: dict[str, Any]) -> None:
    """In the job's process: output to the job's log, stdin closed, the template watched; run it."""
    code = 1
    try:
        with open(os.devnull, "rb") as nothing:
            os.dup2(nothing.fileno(), 0)
        with open(job["log"], "ab") as log:
            os.dup2(log.fileno(), 1)
            os.dup2(log.fileno(), 2)
        hold_log_lock()
        watch_parent(os.getppid() if hasattr(os, "fork") else None)
        registry.fork_helpers()  # this process exists for the job, every reader imported
        code = ingest.run_ingest(job["spec"], exits_after=True)
    except BaseException as e:  # noqa: BLE001 - the job's process must end with a code, whatever happened
        with contextlib.suppress(Exception):
            print(f"ingest process failed: {type(e).__name__}: {e}", file=sys.stderr)
    ingest.end_process(code)


def main() -> int:
    ingest_memory.one_malloc_arena()  # before any thread; the children inherit it
    watch_parent_from_env()
    hold_log_lock(sys.stderr)
    return _serve()


if __name__ == "__main__":
    ingest.end_process(main())
