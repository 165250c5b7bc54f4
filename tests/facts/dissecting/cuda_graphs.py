"""The check of snippets/dissecting/cuda_graphs.py: what dissecting/graphs.md says about it, held on every record
of it."""

from facts import MIN_TIMINGS, as_printed, check


@check("dissecting/cuda_graphs.py")
def _(record):
    results = record.results
    timing = results["timing"]
    assert results["n_ops"] == 100 and results["size"] == 1024
    assert timing["eager"]["n"] >= MIN_TIMINGS and timing["eager"]["median_us"] > 0
    # On a GPU eager is timed in the same rounds as the replay and the compiled chains, and reported
    # with them; on a CPU it is timed alone, where it is introduced.
    eager = record.section("compiled" if record.device == "cuda" else "eager")
    assert "us per op" in eager and "IQR" in eager and f"n={as_printed(timing['eager'])[1]}" in eager
    if record.device == "cuda":
        # The replay and both compiled variants compute what eager computes; every one is timed by the
        # site's method. Which is faster is a number in the record, never an assertion.
        assert results["graph_matches_eager"] is True
        assert results["compiled_matches_eager"] is True and results["reduce_overhead_matches_eager"] is True
        assert set(timing) == {"eager", "cuda_graph", "compiled", "reduce_overhead"}
        assert all(t["n"] >= MIN_TIMINGS for t in timing.values())
        assert "CUDA graph replay" in record.section("graph")
        assert 'mode="reduce-overhead"' in record.section("compiled")
    else:
        assert set(timing) == {"eager"}
        assert "do not apply" in record.section("graph")
        assert "Skipped on CPU" in record.section("compiled")
