"""What `M` (metadata) events of a Chrome trace say about processes and threads.

Kept as the events arrive (a few dicts keyed by pid / tid, the last valid value winning), so a
file of any size holds only one entry per process or thread, never one per metadata event.
"""

from __future__ import annotations

import re
from typing import Any

_INT_TEXT = re.compile(r"^-?\d+$")


def norm_id(value: Any) -> Any:
    """pid / tid as Kineto means them: "25738" and 25738 are the same thread."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and _INT_TEXT.match(value.strip()):
        return int(value.strip())
    return value


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class ProcessInfo:
    """Process and thread names, labels and sort indices, keyed by normalized pid / tid."""

    def __init__(self) -> None:
        self.names: dict[Any, str] = {}
        self.labels: dict[Any, str] = {}
        self.sort: dict[Any, int] = {}
        self.thread_names: dict[tuple[Any, Any], str] = {}
        self.thread_sort: dict[tuple[Any, Any], int] = {}

    def add(self, name: str, pid: Any, tid: Any, args: Any) -> None:
        """One metadata event, in file order."""
        if not isinstance(args, dict):
            return
        pid, tid = norm_id(pid), norm_id(tid)
        value, sort = args.get("name"), args.get("sort_index")
        if name == "process_name" and isinstance(value, str):
            self.names[pid] = value
        elif name == "process_labels" and isinstance(args.get("labels"), str):
            self.labels[pid] = args["labels"]
        elif name == "process_sort_index" and is_int(sort):
            self.sort[pid] = sort
        elif name == "thread_name" and isinstance(value, str):
            self.thread_names[(pid, tid)] = value.strip()  # the last name given wins
        elif name == "thread_sort_index" and is_int(sort):
            self.thread_sort[(pid, tid)] = sort

    def update(self, later: ProcessInfo) -> None:
        """Add what a later part of the file says (its values win)."""
        self.names.update(later.names)
        self.labels.update(later.labels)
        self.sort.update(later.sort)
        self.thread_names.update(later.thread_names)
        self.thread_sort.update(later.thread_sort)
