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
