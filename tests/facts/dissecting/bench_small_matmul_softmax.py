"""The check of snippets/dissecting/bench_small_matmul_softmax.py: what dissecting/benchmarking.md and
dissecting/regimes.md say about it, held on every record of it."""

import re

from facts import as_printed, assert_timing, check, printed_value


@check("dissecting/bench_small_matmul_softmax.py")
def _(record):
    results = record.results
    assert results["n"] == 100
    # The naive way: five single calls each; the first compiled one is the compilation.
    first = results["first_calls"]
    assert len(first["eager_us"]) == len(first["compiled_us"]) == 5
    assert all(t > 0 for t in first["eager_us"] + first["compiled_us"])
    compile_s, first_call_us = (printed_value(record, f"first_calls.{key}") for key in ("compile_s", "compiled_us.0"))
    assert abs(compile_s * 1e6 - first_call_us) < 1e-3
    printed = record.section("first_calls")
    assert re.search(r"^eager \(us\)(\s+[\d.]+){5}$", printed, re.MULTILINE)
    assert re.search(r"^compiled \(us\)(\s+[\d.]+){5}$", printed, re.MULTILINE)
    assert f"took {compile_s:.2f} s" in printed
    # The site's way: the one measure method.
    timing = results["timing"]
    for side in ("eager", "compiled"):
        assert_timing(timing[side])
        assert f"{side:<9} median" in record.section("timer")
    # measure() times 10 rounds a side in each process; a record pools its processes' rounds.
    for side in ("eager", "compiled"):
        assert timing[side]["n"] == 10 * timing[side].get("processes", 1)
    (eager_us, n), (compiled_us, _) = as_printed(timing["eager"]), as_printed(timing["compiled"])
    assert f"n = {n}" in record.section("timer")
    difference = compiled_us - eager_us  # the printed difference: this process's medians
    assert abs(printed_value(record, "compiled_minus_eager_us") - difference) < 1e-6 * abs(difference) + 1e-9
    assert results["max_abs_error"] < 1e-4
