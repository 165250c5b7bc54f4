"""Facts of Dissecting torch.compile, part A: the Graphs, TorchDynamo and Data-dependent control
flow pages (autograd and FX graphs, CUDA graphs, Dynamo's backend and guards, control flow)."""

import re

from facts import MIN_TIMINGS, as_printed, check


@check("dissecting/autograd_graphs.py")
def _(record):
    results = record.results
    default, min_cut = results["default"], results["min_cut"]
    # The forward graph is mul then sin, and with the default partitioner (what a custom backend
    # gets from aot_module_simplified) it saves x, y and the product for backward.
    assert default["forward_ops"] == ["aten.mul.Tensor", "aten.sin.default"]
    assert default["saved_for_backward"] == ["primals_1", "primals_2", "mul"]
    forward = record.section("forward")
    assert "torch.ops.aten.sin.default(mul)" in forward
    assert "return (sin, primals_1, primals_2, mul)" in forward
    # The backward graph is the chain rule: cos of the saved product, then three products.
    assert default["backward_ops"] == ["aten.cos.default"] + ["aten.mul.Tensor"] * 3
    backward = record.section("backward")
    assert "torch.ops.aten.cos.default(mul)" in backward and "tangents_1" in backward
    assert results["grads_match"] is True
    assert "cos(x*y)*x: True" in record.section("check")
    # Inductor's min-cut partitioner saves only x and y and recomputes the product in backward.
    assert min_cut["saved_for_backward"] == ["primals_1", "primals_2"]
    assert min_cut["backward_ops"] == ["aten.mul.Tensor", "aten.cos.default"] + ["aten.mul.Tensor"] * 3
    assert "return (sin, primals_1, primals_2)\n" in record.section("min_cut")
    # Counted by autograd's saved-tensor hooks: 3 with the default partitioner (as in eager), 2 with
    # the min-cut one and with Inductor itself.
    assert results["saved"]["default_partition"] == ["x", "y", "a new (8,) tensor"]
    assert results["saved"]["min_cut_partition"] == ["x", "y"]
    assert results["saved"]["inductor"] == ["x", "y"]
    assert results["saved_count"] == {"default_partition": 3, "min_cut_partition": 2, "inductor": 2, "eager": 3}
    saved = record.section("saved")
    assert "default_partition  saves 3" in saved and "inductor           saves 2: x, y" in saved
    # The graphs the page draws were kept.
    for key, op in [("forward", "aten.sin"), ("backward", "aten.cos"), ("min_cut_backward", "aten.cos")]:
        assert op in record.file(results[f"{key}_graph"]["fxgraph"]).read_text()


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


@check("dissecting/fx_rewrite.py")
def _(record):
    results = record.results
    ops = [node["op"] for node in results["nodes"]]
    assert ops == ["placeholder", "call_module", "call_function", "call_method", "call_function", "output"]
    graph = record.section("module")
    assert "call_function[target=torch.relu]" in graph and "call_method[target=mean]" in graph
    table = record.section("table")
    assert table.splitlines()[0].split() == ["opcode", "name", "target", "args", "kwargs"]
    assert re.search(r"^call_function\s+relu\s+torch\.relu\s", table, re.MULTILINE)
    assert "0x" not in table  # qualified names, not reprs with addresses
    assert results["swapped"] == 1
    code = record.section("rewrite")
    assert "gelu" in code and "relu" not in code
    assert results["new_matches"] is True and results["old_differs"] is True
    traced = record.file(results["traced_graph"]["fxgraph"]).read_text()
    rewritten = record.file(results["rewritten_graph"]["fxgraph"]).read_text()
    assert "torch.relu" in traced and "gelu" in rewritten and "relu" not in rewritten


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


@check("dissecting/dynamo_guards.py")
def _(record):
    results = record.results
    guards = record.section("guards")
    assert guards.count("TENSOR_MATCH: check_tensor(") == 2
    assert "size=[8]" in guards and "torch.float32" in guards
    assert results["guard_kinds"]["TENSOR_MATCH"] == 2
    assert results["guard_count"] == sum(results["guard_kinds"].values())
    assert " # " not in guards and "0x" not in guards  # normalised: no source comments, no addresses
    rows = results["recompiles"]
    keys = ("first", "new_values", "dtype", "shape", "requires_grad", "again")
    assert [rows[key]["graphs"] for key in keys] == [1, 1, 2, 3, 4, 4]
    assert "dtype mismatch" in rows["dtype"]["reason"]
    assert "size mismatch" in rows["shape"]["reason"]
    assert "requires_grad mismatch" in rows["requires_grad"]["reason"]
    assert results["automatic_dynamic"] == {"8": 1, "16": 2, "32": 2, "64": 2}
    assert isinstance(results["recompile_limit"], int) and results["recompile_limit"] >= 4


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
