"""The check of snippets/gpu_code/reductions.py: what dissecting/reductions.md says about it, held on every record
of it."""

from facts import check


@check("gpu_code/reductions.py")
def _(record):
    results = record.results
    assert results["reason"] is None, results["reason"]
    kinds = {int(length): kind for length, kind in results["kinds"].items()}
    # Short rows: a persistent reduction, no loop, the row loaded once. Long rows: a looped reduction that
    # walks the row twice (the max and the sum of exponentials together, then the output), loading it each time.
    for length, kind in kinds.items():
        persistent = length <= 1024
        assert kind["kernel"].startswith("triton_per_" if persistent else "triton_red_"), (length, kind)
        assert kind["launcher"] == ("persistent_reduction" if persistent else "reduction"), (length, kind)
        assert (kind["loops"], kind["loads"]) == ((0, 1) if persistent else (2, 2)), (length, kind)
    assert min(kinds) <= 1024 < max(kinds) and results["longest_persistent"] == max(k for k in kinds if k <= 1024)
    # The same row both ways: the looped kernel combines max and sum online in its first loop, and keeps the
    # row in cache for its second (evict_last), which reads it again.
    both = results["both_ways"]
    assert (both["persistent"]["loops"], both["persistent"]["loads"]) == (0, 1)
    assert (both["looped"]["loops"], both["looped"]["loads"]) == (2, 2)
    looped = both["looped"]["source"]
    assert "online_softmax_combine" in looped and "evict_last" in looped, looped
    assert "for r0_offset in" not in both["persistent"]["source"]
    # The switch at 1024 is the rule for a reduction over the innermost dimension: a sum down columns is
    # persistent only up to 64 rows, and a dynamic row length is looped even where the same static length
    # is persistent.
    others = results["others"]
    expected = {"column sums of 64 rows": "triton_per_", "column sums of 65 rows": "triton_red_",
                "softmax of rows of 512": "triton_per_", "softmax of rows of 512, dynamic": "triton_red_"}
    assert set(others) == set(expected)
    for label, prefix in expected.items():
        assert others[label]["kernel"].startswith(prefix), (label, others[label])
        assert f"{label:<32} {prefix}" in record.section("other_rows")
    # A dynamic row length: no online softmax (the row is not known to be long enough), so three loops, the
    # max and the sum apart, then the output.
    assert others["softmax of rows of 512, dynamic"]["loops"] == 3
    assert others["softmax of rows of 512"]["loops"] == 0

