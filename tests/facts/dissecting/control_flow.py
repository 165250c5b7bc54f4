"""The check of snippets/dissecting/control_flow.py: what dissecting/control-flow.md says about it, held on every
record of it."""

from facts import check


@check("dissecting/control_flow.py")
def _(record):
    results = record.results
    # torch.jit.trace bakes in the branch it saw.
    assert results["jit_trace"] == {"correct_on_other_branch": False, "correct_on_traced_branch": True}
    assert "traced code: return torch.sin(y)" in record.section("jit_trace")
    # torch.jit.script compiles the source as it is: the `if` survives and both branches are right.
    assert results["jit_script"] == {"correct": True, "keeps_branch": True}
    script = record.section("jit_script")
    assert "if bool(" in script and "else:" in script
    assert "correct on both branches: True" in script
    # FX refuses.
    assert results["fx_error"]["type"] == "torch.fx.proxy.TraceError"
    assert "control flow" in record.section("fx")
    # Dynamo breaks the graph; torch.cond keeps both branches in one graph.
    assert results["compile"] == {"graphs": 2, "breaks": 1, "correct": True}
    assert results["cond"] == {"graphs": 1, "breaks": 0, "correct": True}
    assert results["compile_graphs"]["graphs"] == 2 and results["cond_graph"]["graphs"] == 1
    assert "higher_order.cond" in record.file(results["cond_graph"]["fxgraph"]).read_text()
    # torch.export refuses the plain `if` (it needs the value of an unbacked symbol) and saves torch.cond whole.
    assert results["export_if"]["type"] == "GuardOnDataDependentSymNode"
    assert "Could not guard on data-dependent expression" in results["export_if"]["message"]
    assert results["export_cond"] == {"correct": True, "cond_nodes": 1}
    assert "torch.ops.higher_order.cond(gt, true_graph_0, false_graph_0, (y,))" in record.section("export_cond")
    # Branches of different sizes: the output's size is an unbacked symbol, bounded by the two branches' sizes.
    shapes = results["cond_shapes"]
    assert shapes["checks"] == ["u0 >= 2", "u0 <= 4"]
    assert shapes["exported"] == shapes["compiled"] == [[2], [4]]
