"""The check of snippets/graph_mode/compile_time.py: what dissecting/dynamic-shapes.md and graph-mode.md say
about it, held on every record of it."""

from facts import check, timed


@check("graph_mode/compile_time.py")
def _(record):
    first = record.results["first_call"]
    assert first["matches_eager"]
    # A second compile of the same graph finds its kernel in Inductor's code cache: no compiler runs,
    # with the FX graph cache off or on.
    assert first["compilers_again"] == first["compilers_cache_on"] == first["compilers_cache_hit"] == 0
    assert first["cached_hits"] == 1  # the last compile finds the graph in the FX graph cache
    assert "compilers run: none" in record.section("first_call")
    if record.committed:  # a committed record: the recorder starts every snippet with empty compiler caches
        assert first["compilers_first"] >= 1
    timed(record.results["timing"], ("eager", "compiled"))
