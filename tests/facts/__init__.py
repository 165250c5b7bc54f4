"""The chapters' facts, one check per snippet, each run over a record.

A check takes a record (scripts.records.Record: `.device`, `.results`, `.section(name)`, `.stdout`,
`.file(name)`, `.value("dotted.key")`) and asserts what the chapter states about it:

    from facts import check

    # tests/facts/eager_mode/complex_activation.py: the check of snippets/eager_mode/complex_activation.py
    @check("eager_mode/complex_activation.py")
    def _(record):
        assert record.results["profile"]["kernel_count"] == (6 if record.device == "cuda" else 0)

tests/test_facts.py runs every check on a fresh in-process run of its snippet and on every committed record
of it, CPU and CUDA alike, so a record that contradicts its page fails CI, naming the record. A snippet
with no check fails the suite, unless scripts/skips.py names it with the reason (NO_CHECK). A record of a
snippet its stack cannot run (scripts/skips.py, CANNOT_RUN) skips its check with the record's one line.

A fresh run is made on whatever machine runs the suite, often under load, so a rule that rests on a timing
or on the machine (its cache sizes, a warm compiler cache) holds on committed records only:
`if record.committed:`. Those are the records a page shows, made by the recorder in quiet fresh processes.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path

from scripts import run_env
from scripts.skips import NO_CHECK as SKIPS  # noqa: F401  the one table of what is not checked, and why

CHECKS: dict[str, Callable] = {}

MIN_TIMINGS = 10  # rounds in one process: the site's measure() takes 10


def timed(timing: dict, names) -> None:
    """Each named timing was taken by the site's method: at least 10 interleaved rounds in a process, on a
    stated number of threads, naming the work it timed; a committed record pools every fresh process it
    ran in (scripts.records.PROCESSES), one median per process."""
    from scripts import records

    for name in names:
        m = timing[name]
        assert m["n"] >= MIN_TIMINGS and len(m["times_us"]) == m["n"], f"{name}: {m['n']} timings"
        assert m["median_us"] > 0 and m["iqr_us"] >= 0, name
        assert m.get("threads", 0) >= 1 and m.get("work"), f"{name}: no thread count or work named"
        if "processes" in m:
            assert m["processes"] == len(m["process_medians_us"]) >= records.PROCESSES, name


def as_printed(timing: dict) -> tuple[float, int]:
    """(median in µs, n) of the timing as the snippet printed it: a fresh run's own; in a record, which
    pools every process's timings under the first process's printout, the first process's."""
    if "processes" not in timing:
        return timing["median_us"], timing["n"]
    return timing["process_medians_us"][0], timing["n"] // timing["processes"]


def per_process(record, key: str) -> list:
    """The value of a dotted key as each process measured it (a record of several processes keeps them
    under "process_values"; a value all processes agreed on, or a fresh run's, is one value)."""
    return record.results.get("process_values", {}).get(key) or [record.value(key)]


def printed_value(record, key: str):
    """A dotted key's value as the printout shows it: the first process's."""
    return per_process(record, key)[0]


def assert_timing(timing: dict) -> None:
    """One timing as a fresh run or a record keeps it: n rounds, a median inside its quartiles."""
    assert timing["n"] >= MIN_TIMINGS, f"{timing['n']} timings, fewer than {MIN_TIMINGS}"
    assert len(timing["times_us"]) == timing["n"] and timing["median_us"] > 0
    assert timing["q1_us"] <= timing["median_us"] <= timing["q3_us"]


PINS = run_env.pins()


def skip_unless_pinned(record, reason: str) -> None:
    """A failure a GPU-code snippet caught (private compiler API that moved) is a skip on other releases,
    with its reason, and a failure on the torch and triton CI pins, where it must work."""
    import pytest

    env = record.environment
    if env.get("torch", "").split("+")[0] == PINS.get("torch") and env.get("triton") == PINS.get("triton"):
        pytest.fail(f"{record.where()}: {reason}, on the pinned torch {PINS['torch']} / triton {PINS['triton']}")
    pytest.skip(reason)


def needs_jax(record) -> None:
    """Skip a fresh run (a record with no manifest) where JAX is not installed."""
    import pytest

    if not record.exists:
        pytest.importorskip("jax", reason="JAX is an optional extra: pip install 'jax[cpu]'")


def check(snippet: str):
    """Register the decorated function as the one check of snippets/<snippet>; it lives in
    tests/facts/<snippet>, so a snippet's check is found by its path."""
    def register(function: Callable) -> Callable:
        home = f"{__name__}.{snippet.removesuffix('.py').replace('/', '.')}"
        if function.__module__ != home:
            raise ValueError(f"the check of snippets/{snippet} belongs in tests/facts/{snippet}, "
                             f"not in {function.__module__}")
        if snippet in CHECKS:
            raise ValueError(f"{snippet} has two checks: {CHECKS[snippet].__module__} and {function.__module__}")
        CHECKS[snippet] = function
        return function

    return register


def load() -> dict[str, Callable]:
    """Import every module under this package (tests/facts/<folder>/<snippet>.py), so every check is
    registered."""
    root = Path(__file__).parent
    for path in sorted(root.rglob("*.py")):
        if path.name != "__init__.py":
            importlib.import_module(".".join((__name__, *path.relative_to(root).with_suffix("").parts)))
    return CHECKS
