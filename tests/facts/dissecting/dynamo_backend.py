"""The check of snippets/dissecting/dynamo_backend.py: what dissecting/dynamo.md says about it, held on every
record of it."""

from facts import check


@check("dissecting/dynamo_backend.py")
def _(record):
    results = record.results
    # One graph for three calls: the guards passed on calls 2 and 3.
    assert results["graph_count"] == 1 and results["calls"] == 3 and results["matches"] is True
    assert results["ops"] == ["abs", "add", "truediv", "mul", "mul"]
    calls = record.section("calls")
    assert calls.count("backend call") == 1
    assert "mul_1 = mul * 14" in calls  # the Python generator expression became a constant
    # A list comprehension over tensors and a Python loop: unrolled into one graph, no break.
    loops = results["loops"]
    assert loops["graph_count"] == 1 and loops["explain_graphs"] == 1 and loops["explain_breaks"] == 0
    assert loops["ops"] == ["mul"] * loops["items"] + ["add"] * (loops["items"] - 1)
    assert loops["matches"] is True
    assert record.file(results["loops_graph"]["fxgraph"]).read_text().count("operator.mul") == loops["items"]
    assert "explain: 1 graph(s), 0 graph break(s)" in record.section("loops")
