"""One parser for the query parameters of every route, with one set of rules.

Integers are non-negative decimal digits (at most `MAX_INT_DIGITS`), numbers are finite decimals
within ±`MAX_ABS_NUMBER`, strings (and each name of a list of names) hold at most `MAX_TEXT_CHARS`
characters and no control characters, and lists are comma-separated with at most `MAX_LIST_ITEMS`
items. A bad value is a 400 (`InvalidArgumentError`) whose message names the parameter and what was
expected, quoting at most `ECHO_CHARS` characters of the value.
Routes read their parameters through a `Params`, never from the request; it also tells them
whether the request's client is still there (`disconnected`), so long work nobody waits for stops.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping

from tensorboard import errors

# Ids, indices and counts fit in int64; longer digit strings are refused before int() sees them.
MAX_INT_DIGITS = 18
# Times are ns; the engine works in int64 ps, so a time must stay well inside 2**63 ps once host
# offsets are added: the same bound as an open-ended summary range (2**62 ps).
MAX_ABS_NUMBER = float(2**62) / 1000
# A search query, a run path (PATH_MAX on Linux) or a host name; longer values are refused, not cut.
MAX_TEXT_CHARS = 4096
# Items of a comma-separated list (track ids of a whole trace, the events of a selection, hosts).
MAX_LIST_ITEMS = 100_000
# Characters of a refused value quoted in the message.
ECHO_CHARS = 40
# Number syntax accepted by `float`: what JSON writes (no hex, no underscores, no spaces), at most
# this long; "inf" and "nan" parse but are refused as not finite.
MAX_NUMBER_CHARS = 64
_NUMBER = re.compile(r"^[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _never_disconnected() -> bool:
    return False


class Params:
    """The query parameters of one request; an empty value counts as absent. `disconnected` is the
    server's check of the request's connection (the plugin gives it; without one it never says gone)."""

    def __init__(
        self, args: Mapping[str, str], disconnected: Callable[[], bool] = _never_disconnected
    ) -> None:
        self._args = args
        self._disconnected = disconnected

    def disconnected(self) -> bool:
        """Whether the request's client has closed its connection (nobody will read the answer).
        Cheap enough to ask between chunks of work: one poll of the socket."""
        return self._disconnected()

    def text(self, name: str, default: str | None = None) -> str | None:
        """A string parameter (no control characters), `default` when absent."""
        value = self._args.get(name)
        if value is None or value == "":
            return default
        _check_text(name, value)
        return value

    def required(self, name: str) -> str:
        """A string parameter that must be present."""
        value = self.text(name)
        if value is None:
            raise errors.InvalidArgumentError(f"missing query parameter {name!r}")
        return value

    def int(self, name: str, default: int | None = None) -> int:
        """A non-negative integer; `default` when absent, else it is required."""
        value = self._args.get(name)
        if value is None or value == "":
            if default is not None:
                return default
            raise errors.InvalidArgumentError(f"missing query parameter {name!r}")
        return _non_negative(name, value)

    def optional_int(self, name: str) -> int | None:
        """A non-negative integer, None when absent."""
        value = self._args.get(name)
        return None if value is None or value == "" else _non_negative(name, value)

    def float(self, name: str, limit: float = MAX_ABS_NUMBER) -> float | None:
        """A finite number within ±`limit`, None when absent."""
        value = self._args.get(name)
        if value is None or value == "":
            return None
        number = _number(value)
        if number is None:
            raise errors.InvalidArgumentError(
                f"query parameter {name!r} must be a number, got {_echo(value)}"
            )
        if not math.isfinite(number):
            raise errors.InvalidArgumentError(f"query parameter {name!r} must be finite, got {_echo(value)}")
        if abs(number) > limit:
            raise errors.InvalidArgumentError(
                f"query parameter {name!r} must be within ±{limit:.6g}, got {_echo(value)}"
            )
        return number

    def int_list(self, name: str) -> list[int] | None:
        """Comma-separated non-negative integers (at most `MAX_LIST_ITEMS`), None when absent."""
        value = self._args.get(name)
        if value is None or value == "":
            return None
        parts = _items(name, value)
        parts = [part.strip() for part in parts if part.strip()]
        if not all(_is_digits(part) for part in parts):
            raise errors.InvalidArgumentError(
                f"query parameter {name!r} must be comma-separated non-negative integers "
                f"of at most {MAX_INT_DIGITS} digits"
            )
        return [int(part) for part in parts]

    def names(self, name: str) -> list[str]:
        """A required comma-separated list of names (empty items dropped)."""
        value = self._args.get(name)
        if value is None or value == "":
            raise errors.InvalidArgumentError(f"missing query parameter {name!r}")
        parts = [part for part in _items(name, value) if part]
        for part in parts:
            _check_text(name, part)
        return parts


def _check_text(name: str, value: str) -> None:
    if len(value) > MAX_TEXT_CHARS:
        raise errors.InvalidArgumentError(
            f"query parameter {name!r} is {len(value)} characters long; at most {MAX_TEXT_CHARS} are accepted"
        )
    if _CONTROL.search(value):
        raise errors.InvalidArgumentError(f"query parameter {name!r} holds a control character")


def _items(name: str, value: str) -> list[str]:
    if value.count(",") >= MAX_LIST_ITEMS:
        raise errors.InvalidArgumentError(f"query parameter {name!r} lists more than {MAX_LIST_ITEMS} items")
    return value.split(",")


def _echo(value: str) -> str:
    shown = repr(value[:ECHO_CHARS])
    return shown if len(value) <= ECHO_CHARS else f"{shown}… ({len(value)} characters)"


def _number(value: str) -> float | None:
    """The value as a float when it is written like a JSON number (or inf/nan), else None."""
    if len(value) > MAX_NUMBER_CHARS:
        return None
    if _NUMBER.match(value) or value.lstrip("+-").lower() in ("inf", "infinity", "nan"):
        return float(value)
    return None


def _is_digits(value: str) -> bool:
    return value.isascii() and value.isdigit() and len(value) <= MAX_INT_DIGITS


def _non_negative(name: str, value: str) -> int:
    if not _is_digits(value):
        raise errors.InvalidArgumentError(
            f"query parameter {name!r} must be a non-negative integer of at most {MAX_INT_DIGITS} digits, "
            f"got {_echo(value)}"
        )
    return int(value)
