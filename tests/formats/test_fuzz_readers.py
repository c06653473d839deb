"""Every reader on inputs mutated from the real files in tests/data: it loads them or refuses them
with `UnreadableProfile` naming the file, in bounded time; never another exception, never a hang.
(For graph logs the graph bodies are also parsed into nodes, as the `xla/graph` route does.)

The mutations (truncation, byte flips, splices from other seeds, duplicated and deleted ranges,
inserted and repeated tokens, hostile numbers, varints of the XPlane tree, gzip of mutated text)
are those of `benchmarks/fuzz_soak.py`, each input drawn from a seed Hypothesis picks (a failure
reports it: `fuzz.input_from(reader, random.Random(seed), big=False)` rebuilds the input), on the
small seeds so that a few thousand inputs per reader run in seconds. The soak script runs the same
engine for hundreds of thousands of inputs, each in a child process with a memory bound.
"""

from __future__ import annotations

import importlib.util
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support import REPO
from tests.support.reading_limits import cpu_bound

pytestmark = pytest.mark.stack_independent

_SPEC = importlib.util.spec_from_file_location("fuzz_soak", REPO / "benchmarks" / "fuzz_soak.py")
assert _SPEC is not None and _SPEC.loader is not None
fuzz = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(fuzz)

# Inputs per reader, the same ones each run (derandomized): the whole module takes about a minute of
# CPU on the 2-core VM (2,000 each took 75 s); the soak script draws hundreds of thousands.
INPUTS = {
    "xplane": 1000,
    "chrome_json": 1000,
    "chrome_gz": 1000,
    "xla_metrics": 1000,
    "xla_debug": 1000,
    "xla_graphs": 1000,
}
# Most reads of these inputs take milliseconds, but one drawn from seed 872929 (an XPlane of about
# 100,000 planes in 420 KB) takes 3.3 s of CPU on the 2-core VM. Above this bound it is a hang.
SECONDS_PER_INPUT = 10.0


class Hang(Exception):
    """The reader used more than SECONDS_PER_INPUT of CPU (or four times that of wall time)."""


def _fuzz(reader: str) -> object:
    @settings(
        max_examples=INPUTS[reader],
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(st.integers(min_value=0, max_value=2**64))
    def check(seed: int) -> None:
        data = fuzz.input_from(reader, random.Random(seed), big=False)
        with cpu_bound(SECONDS_PER_INPUT, lambda: Hang(f"no answer within {SECONDS_PER_INPUT:g} s")):
            outcome, detail = fuzz.run_reader(reader, data)
        assert outcome in ("loaded", "refused"), detail

    return check


@pytest.mark.parametrize("reader", sorted(INPUTS))
def test_reader_loads_or_refuses_every_mutated_input(reader: str) -> None:
    _fuzz(reader)()


def test_the_mutations_reach_both_outcomes() -> None:
    """The suite is only as good as its inputs: they must hit both outcomes, and the seeds must
    be the real files (a typo in a path would leave a reader fuzzed on nothing)."""
    for reader in INPUTS:
        assert fuzz.seeds(reader, False), reader
        outcomes = {
            fuzz.run_reader(reader, fuzz.input_from(reader, random.Random(i), big=False))[0]
            for i in range(60)
        }
        assert "loaded" in outcomes, reader
        if reader not in ("xla_metrics", "xla_debug"):  # these two refuse only files without a record
            assert "refused" in outcomes, reader


def test_a_refusal_must_name_the_file_and_no_exception(monkeypatch: pytest.MonkeyPatch) -> None:
    """The oracle itself: an UnreadableProfile that leaks an exception type counts as a crash."""
    from profscope.errors import UnreadableProfile

    def leaky(path: str, fs: object) -> None:
        raise UnreadableProfile(path, "IndexError: index -1 is out of bounds")

    monkeypatch.setattr(fuzz, "reader_function", lambda reader: leaky)
    assert fuzz.run_reader("chrome_json", b"{}")[0] == "crash"
