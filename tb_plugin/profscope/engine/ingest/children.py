"""The server's local ingest processes: pre-imported templates that fork one child per job.

Starting an interpreter and importing numpy, fsspec and the readers costs about 0.45 s of CPU per
process (measured on the 2-core VM): for a session of many hosts of a few hundred MB each, that is
a third of each ingest. So the server keeps one *template* per ingest slot (started with the
manager, so the second job of a session does not wait for one either):
`python -m profscope.engine.ingest.template`, which imports everything once and then reads job
lines from its stdin. For each job it forks a child (a few milliseconds, the imports shared
copy-on-write), which runs `ingest.run_ingest` and exits; the template waits for it, reports its
exit code and takes the next job. Every job still has a process of its own, so its memory is
returned when it ends and a crash or a kill ends only that job.

Protocol on the template's stdin / stdout, one JSON object per line: the server sends
`{"spec": ..., "log": PATH}` (the spec never on a command line: it may name storage options); the
template answers `{"pid": N}` once the child runs and `{"exit": CODE}` when it ends (negative: the
signal that ended it, as `subprocess` says). Where there is no `os.fork` (Windows), the template
runs the job itself and exits after it.

Hygiene: the template exits when the server is gone (it watches its parent pid) or closes its
stdin; a child watches the template the same way, so both end within 2 × ORPHAN_CHECK_S of the
server. The template holds a lock on its own log and each child on the job's log, so a starting
server removes only logs nobody holds (`ingest.remove_stale_files`). Memory: an idle template is
an interpreter with the readers imported (`memory.IDLE_CHILD_MB`, reserved per slot).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, BinaryIO

# Environment variable that tells a child the pid of the server that started it.
PARENT_ENV = "PROFSCOPE_INGEST_PARENT"
# Seconds between two checks by a child that its parent still runs.
ORPHAN_CHECK_S = 0.5
# Exit code of a child whose parent is gone.
EXIT_ORPHANED = 70
# Prefix of children's log files in the cache's `progress/` (each process holds a lock on its own).
CHILD_LOG_PREFIX = "child-"
TEMPLATE_MODULE = "profscope.engine.ingest.template"


class Template:
    """One template process, as the server sees it: hand it a job, read what became of it."""

    def __init__(self, process: subprocess.Popen[bytes], log_path: str) -> None:
        self.process = process
        self.log_path = log_path
        self.pid = process.pid

    def alive(self) -> bool:
        return self.process.poll() is None

    def hand_over(self, spec: Mapping[str, Any], job_log: str) -> bool:
        """Send a job (the template answers with its child's pid once forked); False when the
        template is gone."""
        if not self.alive() or self.process.stdin is None:
            return False
        job = {"spec": dict(spec), "log": job_log}
        try:
            self.process.stdin.write(json.dumps(job).encode("utf-8") + b"\n")
            self.process.stdin.flush()
        except OSError:
            return False
        return True

    def close(self) -> None:
        """Let the template go (it exits when its stdin closes) and remove its log."""
        if self.process.stdin is not None:
            with contextlib.suppress(OSError):
                self.process.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(10)
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        with contextlib.suppress(OSError):
            os.remove(self.log_path)


class Child:
    """A job's process (forked by a template), with the part of `subprocess.Popen` the manager and
    its tests use: `pid`, `args` (the template's command line), `wait`, `poll`, `send_signal`,
    `kill`. When the job ends its template goes back to the pool."""

    def __init__(self, pool: ChildPool, template: Template, job_log: str) -> None:
        self._pool = pool
        self._template = template
        self._job_log = job_log
        self.args = template.process.args
        self.returncode: int | None = None
        self._pid: int | None = None
        self._pid_lock = threading.Lock()
        self._wait_lock = threading.Lock()

    @property
    def pid(self) -> int:
        """The child's pid (waits for the template to fork it); -1 when the template died first."""
        with self._pid_lock:
            if self._pid is None:
                stdout = self._template.process.stdout
                answer = _read_answer(stdout) if stdout is not None else None
                self._pid = int(answer["pid"]) if answer is not None and "pid" in answer else -1
            return self._pid

    def wait(self) -> int:
        pid = self.pid
        with self._wait_lock:
            if self.returncode is None:
                stdout = self._template.process.stdout
                answer = _read_answer(stdout) if pid > 0 and stdout is not None else None
                if answer is None or "exit" not in answer:
                    self.returncode = self._gone_with_template()
                else:
                    self.returncode = int(answer["exit"])
                    self._pool.give_back(self._template)
        return self.returncode

    def poll(self) -> int | None:
        return self.returncode

    def send_signal(self, sig: int) -> None:
        pid = self.pid
        if self.returncode is None and pid > 0:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def _gone_with_template(self) -> int:
        """The template ended (killed, or without fork: after its one job); its exit code stands
        for the job's, and the job's process is ended if it still runs."""
        if self._pid is not None and self._pid > 0 and self._pid != self._template.pid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self._pid, signal.SIGKILL)
        code = self._template.process.wait()
        # What the template said (an import error, say) goes with the job.
        with (
            contextlib.suppress(OSError),
            open(self._template.log_path, "rb") as said,
            open(self._job_log, "ab") as log,
        ):
            log.write(said.read()[-4000:])
        self._pool.discard(self._template)
        return code


class ChildPool:
    """Templates of one manager: at most `size` kept, each running one job at a time."""

    def __init__(self, new_log: Callable[[], str], size: int) -> None:
        self._new_log = new_log  # a fresh log file path for a template
        self.size = max(1, size)
        self._lock = threading.Lock()
        self._prewarming = threading.Lock()
        self._idle: list[Template] = []
        self._all: list[Template] = []

    def prewarm(self) -> None:
        """Have a template for every slot, so that no job, the second of a session included, pays
        the interpreter start."""
        with self._prewarming:
            while True:
                with self._lock:
                    if len(self._all) >= self.size:
                        return
                template = self.spawn()
                if template is None:
                    return
                with self._lock:
                    self._idle.append(template)

    def start(self, spec: Mapping[str, Any], job_log: str) -> Child | None:
        """Run a job in a child of an idle template (started when none waits); None when no
        process can be started."""
        for _attempt in range(2):
            with self._lock:
                template = self._idle.pop() if self._idle else None
            if template is None:
                template = self.spawn()
                if template is None:
                    return None
            if template.hand_over(spec, job_log):
                return Child(self, template, job_log)
            self.discard(template)
        return None

    def spawn(self) -> Template | None:
        """Start a template: it imports everything, then waits for jobs on stdin."""
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        env[PARENT_ENV] = str(os.getpid())
        env.setdefault("OPENBLAS_NUM_THREADS", "1")  # no BLAS threads in a process that forks
        log_path = ""
        try:
            log_path = self._new_log()
            with open(log_path, "wb") as log:
                process = subprocess.Popen(
                    [sys.executable, "-m", TEMPLATE_MODULE],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=log,
                    env=env,
                    close_fds=True,
                )
        except OSError:
            with contextlib.suppress(OSError):
                os.remove(log_path)
            return None
        template = Template(process, log_path)
        with self._lock:
            self._all.append(template)
        return template

    def give_back(self, template: Template) -> None:
        with self._lock:
            keep = template.alive() and template in self._all and len(self._all) <= self.size
            if keep:
                self._idle.append(template)
        if not keep:
            self.discard(template)

    def discard(self, template: Template) -> None:
        with self._lock:
            if template in self._idle:
                self._idle.remove(template)
            if template not in self._all:
                return
            self._all.remove(template)
        template.close()

    def idle_pids(self) -> list[int]:
        with self._lock:
            return [t.pid for t in self._idle]

    def close(self) -> None:
        """End the idle templates (a busy one ends after its job, when its stdin is closed)."""
        with self._lock:
            idle, self._idle = self._idle, []
        for template in idle:
            self.discard(template)
        with self._lock:
            busy = list(self._all)
        for template in busy:
            if template.process.stdin is not None:
                with contextlib.suppress(OSError):
                    template.process.stdin.close()


def _read_answer(stdout: BinaryIO) -> dict[str, Any] | None:
    try:
        line = stdout.readline()
    except (OSError, ValueError):
        return None
    if not line.strip():
        return None
    try:
        answer = json.loads(line)
    except ValueError:
        return None
    return answer if isinstance(answer, dict) else None


def watch_parent(parent: int | None) -> None:
    """End this process within ORPHAN_CHECK_S once `parent` is gone (it is then reparented, so its
    parent pid changes)."""
    if parent is None:
        return

    def watch() -> None:
        while True:
            if os.getppid() != parent:
                os._exit(EXIT_ORPHANED)
            time.sleep(ORPHAN_CHECK_S)

    threading.Thread(target=watch, name="profscope-orphan-watch", daemon=True).start()


def watch_parent_from_env() -> None:
    """Watch the server named by PARENT_ENV (set by the server that started this process)."""
    parent = os.environ.get(PARENT_ENV)
    watch_parent(int(parent) if parent and parent.isdigit() else None)


def hold_log_lock(log: Any = None) -> None:
    """Lock this process's log (`log`, default its stdout) for as long as it lives: a starting
    manager removes only logs nobody holds."""
    with contextlib.suppress(ImportError, OSError, ValueError):
        import fcntl

        fcntl.flock((log or sys.stdout).fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
