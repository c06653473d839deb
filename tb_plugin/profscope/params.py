"""One parser for the query parameters of every route, with one set of rules.

Integers are non-negative decimal digits (at most `MAX_INT_DIGITS`), numbers are finite floats, lists
are comma-separated; a bad value is a 400 (`InvalidArgumentError`) whose message names the parameter
and what was expected. Routes read their parameters through a `Params`, never from the request.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from tensorboard import errors

# Ids, indices and counts fit in int64; longer digit strings are refused before int() sees them.
MAX_INT_DIGITS = 18


class Params:
    """The query parameters of one request; an empty value counts as absent."""

    def __init__(self, args: Mapping[str, str]) -> None:
        self._args = args

    def text(self, name: str, default: str | None = None) -> str | None:
        """A string parameter, `default` when absent."""
        value = self._args.get(name)
        return default if value is None or value == "" else value

    def required(self, name: str) -> str:
        """A string parameter that must be present."""
        value = self.text(name)
        if value is None:
            raise errors.InvalidArgumentError(f"missing query parameter {name!r}")
        return value

    def int(self, name: str, default: int | None = None) -> int:
        """A non-negative integer; `default` when absent, else it is required."""
        value = self.text(name)
        if value is None:
            if default is not None:
                return default
            raise errors.InvalidArgumentError(f"missing query parameter {name!r}")
        return _non_negative(name, value)

    def optional_int(self, name: str) -> int | None:
        """A non-negative integer, None when absent."""
        value = self.text(name)
        return None if value is None else _non_negative(name, value)

    def float(self, name: str) -> float | None:
        """A finite number, None when absent."""
        value = self.text(name)
        if value is None:
            return None
        try:
            number = float(value)
        except ValueError as e:
            raise errors.InvalidArgumentError(
                f"query parameter {name!r} must be a number, got {value!r}"
            ) from e
        if not math.isfinite(number):
            raise errors.InvalidArgumentError(f"query parameter {name!r} must be finite")
        return number

    def int_list(self, name: str) -> list[int] | None:
        """Comma-separated non-negative integers, None when absent."""
        value = self.text(name)
        if value is None:
            return None
        parts = [part.strip() for part in value.split(",") if part.strip()]
        if not all(_is_digits(part) for part in parts):
            raise errors.InvalidArgumentError(
                f"query parameter {name!r} must be comma-separated non-negative integers"
            )
        return [int(part) for part in parts]

    def names(self, name: str) -> list[str]:
        """A required comma-separated list of names (empty items dropped)."""
        return [part for part in self.required(name).split(",") if part]


def _is_digits(value: str) -> bool:
    return value.isascii() and value.isdigit() and len(value) <= MAX_INT_DIGITS


def _non_negative(name: str, value: str) -> int:
    if not _is_digits(value):
        raise errors.InvalidArgumentError(
            f"query parameter {name!r} must be a non-negative integer of at most {MAX_INT_DIGITS} digits, "
            f"got {value[:40]!r}"
        )
    return int(value)
