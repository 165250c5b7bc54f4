"""The check of snippets/dissecting/data_dependent.py: what dissecting/data-dependent.md says about it, held on
every record of it."""

from facts import check


@check("dissecting/data_dependent.py")
def _(record):
    results = record.results
    # .item() breaks the graph by default; captured, it is one graph that calls item.
    item = results["item"]
    assert item["graphs"] == 2 and "Tensor.item()" in item["reason"]
    assert item["captured_graphs"] == 1 and item["captured_calls"] == ["gt", "sum", "item", "mul"]
    # A branch on the unbacked symbol cannot be guarded; torch._check becomes a runtime assertion.
    assert "Could not guard on data-dependent expression u0 > 4" in results["guard"]["error"]
    assert results["guard"]["graphs"] == 2  # without fullgraph=True the branch is a graph break
    # A helper's `if count == 0` cannot be decided: fullgraph=True raises. torch._check(n > 0) decides it, in
    # one graph that asserts the fact when it runs, and raises on an input for which the fact is false.
    checked = results["check"]
    assert checked["unchecked_error"] == "Could not guard on data-dependent expression Eq(u0, 0)", checked
    assert checked["graphs"] == 1 and checked["same"] is True and checked["asserts"][0] == "u0 >= 1", checked
    assert checked["broken"].startswith("Runtime assertion failed for expression u0 >= 1"), checked
    # nonzero: a break by default; captured, the graph asserts the bounds it knows.
    nonzero = results["nonzero"]
    assert nonzero["graphs"] == 2 and "Dynamic shape operator" in nonzero["reason"]
    assert nonzero["captured_graphs"] == 1 and nonzero["positions"] == [0, 2, 4, 5, 7]
    assert nonzero["asserts"] == ["u0 >= 0", "u0 <= 8"]
    # dynamic=True specialises sizes 0 and 1; an unbacked size does not.
    assert results["mark_unbacked"] == {"dynamic": 3, "unbacked": 1}
    # NumPy's interp breaks the graph; as a custom op it is one node, called between Inductor's kernels.
    opaque = results["opaque"]
    assert opaque["graphs"] >= 2 and opaque["breaks"] >= 1 and "numpy" in opaque["reason"]
    custom = results["custom_op"]
    assert custom["graphs"] == 1 and custom["calls"] == ["mul", "lookup.default", "add"] and custom["same"] is True
    launches = custom["launches"]
    call = next(i for i, line in enumerate(launches) if "torch.ops.site.lookup.default(" in line)
    assert 0 < call < len(launches) - 1, launches
    # Compiled autograd: the backward, hook (clamp) included, is one graph. Without it, on the CPU the hook is a
    # graph of its own: the eager backward runs on the calling thread, where Dynamo's callback is set. A CUDA
    # backward runs on the autograd engine's thread for the device, where it is not: the hook runs uncompiled
    # and the last graph is the forward.
    autograd = results["compiled_autograd"]
    if record.device == "cpu":
        assert autograd["off"] == ["clamp"]
    else:
        assert autograd["off"] == ["linear", "relu", "sum"], autograd
        assert "1 graphs" in record.section("compiled_autograd").splitlines()[0]
    assert {"ReluBackward0", "AccumulateGrad", "clamp"} <= set(autograd["on"])
