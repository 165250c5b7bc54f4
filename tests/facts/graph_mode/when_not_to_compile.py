"""The check of snippets/graph_mode/when_not_to_compile.py: what graph-mode.md says about it, held on every
record of it."""

from facts import check, timed


@check("graph_mode/when_not_to_compile.py")
def _(record):
    break_even = record.results["break_even"]
    assert break_even["compile_s"] > 0
    assert break_even["pays_off"] == (break_even["calls"] is not None)
    assert break_even["calls"] is None or break_even["calls"] >= 1
    timed(record.results["timing"], ("eager", "compiled"))
    timed(record.results["tiny"], ("eager", "compiled"))
    assert "median compiled / median eager" in record.section("tiny")
