"""The check of snippets/graph_mode/break_triggers.py: what graph-mode.md says about it, held on every record of
it."""

from facts import check


@check("graph_mode/break_triggers.py")
def _(record):
    table = record.results["table"]
    counts = {key: (row["graph_count"], row["graph_break_count"]) for key, row in table.items()}
    assert counts == {
        "uses_print": (2, 1),
        "branches_on_data": (2, 1),
        "calls_numpy_tanh": (1, 0),  # Dynamo traces NumPy through torch._numpy
        "calls_numpy_interp": (2, 1),
        "calls_item": (2, 1),
        "calls_item_captured": (1, 0),  # capture_scalar_outputs keeps .item() in the graph
        "calls_tolist": (2, 1),  # a break, with the multiply before it in a graph of its own
        "starts_with_tolist": (1, 0),  # the same break, uncounted: the graph before it is empty
        "list_comprehension": (1, 0),  # unrolled into the graph, no break
    }
    assert table["uses_print"]["reasons"] == ["Failed to trace builtin operator"]
    assert table["branches_on_data"]["reasons"] == ["generic_jump TensorVariable()"]
    assert table["calls_numpy_interp"]["reasons"][0].startswith("attempted to trace numpy function")
    assert table["calls_item"]["reasons"][0].startswith("Unsupported Tensor.item() call")
    assert table["calls_tolist"]["reasons"] == ["Tensor.tolist() with non-integer tensor"]
    compiled = {key: row["graphs_compiled_for_3_inputs"] for key, row in table.items()}
    assert compiled["branches_on_data"] == 3  # one graph per branch taken, after the comparison's graph
    # .tolist(): the graph before the break once; after it, first with the values as constants, then
    # (new values fail the guards) once more with them as inputs.
    assert compiled["calls_tolist"] == 3
    assert compiled["starts_with_tolist"] == 2  # no graph before the break; the one after it twice
    assert compiled["calls_numpy_tanh"] == compiled["list_comprehension"] == 1
    assert "0x" not in record.section("table")
    graphs = record.results["graphs_tolist"]
    assert graphs["graphs"] == 2
    after_break = record.file(graphs["fxgraph"]).read_text().split("graph():")[2]
    assert "target=torch.tensor](args = ([" in after_break  # the floats, baked in as constants
    logged = record.results["logs"]
    assert [entry["file"] for entry in logged] == ["break_triggers.py"] * 4
    assert "`print`" in logged[0]["explanation"] and "Tensor.item()" in logged[1]["explanation"]
    # The log reports the .tolist() break whether or not a graph came before it (explain counts only the first).
    assert logged[2]["gist"] == logged[3]["gist"] == "Tensor.tolist() with non-integer tensor"
    assert "4 graph breaks logged" in record.section("logs")
