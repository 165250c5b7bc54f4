"""The check of snippets/graph_mode/graph_breaks.py: what graph-mode.md says about it, held on every record of
it."""

from facts import check, timed


@check("graph_mode/graph_breaks.py")
def _(record):
    explain = record.results["explain"]
    chatty, quiet = explain["with_print"], explain["without_print"]
    assert (chatty["graph_count"], chatty["graph_break_count"]) == (2, 1)
    assert chatty["break_reasons"] == ["Failed to trace builtin operator"]
    assert chatty["ops_per_graph"] == [["linear", "relu", "linear"], ["linear", "sigmoid"]]
    assert (quiet["graph_count"], quiet["graph_break_count"], quiet["break_reasons"]) == (1, 0, [])
    assert len(quiet["ops_per_graph"][0]) == 5  # graph-mode.md: without the print, all five ops in one graph
    assert "with print: 2 graph(s), 1 graph break(s)" in record.section("explain")
    graphs = record.results["graphs_with_print"]
    assert graphs["graphs"] == 2 and record.file(graphs["fxgraph"]).exists()
    assert record.results["same_result"]
    timed(record.results["timing"], ("eager_print", "eager_no_print", "compiled_print", "compiled_no_print"))
