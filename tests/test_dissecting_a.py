"""Facts printed by the Dissecting torch.compile chapter, part A (graphs, Dynamo, control flow)."""

import re

from harness import snippet

run_autograd = snippet("dissecting/autograd_graphs.py")
run_fx = snippet("dissecting/fx_rewrite.py")
run_cuda_graphs = snippet("dissecting/cuda_graphs.py")
run_backend = snippet("dissecting/dynamo_backend.py")
run_guards = snippet("dissecting/dynamo_guards.py")
run_control = snippet("dissecting/control_flow.py")


# ------------------------------------------------------------------------------------ autograd graphs


def test_forward_graph_is_mul_then_sin_and_saves_inputs_and_product(run_autograd):
    assert run_autograd.results["forward_ops"] == ["aten.mul.Tensor", "aten.sin.default"]
    assert run_autograd.results["saved_for_backward"] == ["primals_1", "primals_2", "mul"]
    forward = run_autograd.section("forward")
    assert "torch.ops.aten.sin.default(mul)" in forward
    assert "return (sin, primals_1, primals_2, mul)" in forward


def test_backward_graph_is_the_chain_rule(run_autograd):
    assert run_autograd.results["backward_ops"] == ["aten.cos.default"] + ["aten.mul.Tensor"] * 3
    backward = run_autograd.section("backward")
    assert "torch.ops.aten.cos.default(mul)" in backward and "tangents_1" in backward
    assert run_autograd.results["grads_match"] is True
    assert "cos(x*y)*x: True" in run_autograd.section("check")


def test_mermaid_diagram_is_generated_from_both_graphs(run_autograd):
    diagram = run_autograd.section("mermaid")
    assert diagram.startswith("flowchart LR\n")
    assert "subgraph forward" in diagram and "subgraph backward" in diagram
    assert 'fw_sin["sin<br/>aten.sin.default"]' in diagram
    assert "fw_mul -. saved .-> bw_cos" in diagram
    assert diagram.count(" -. saved .-> ") == 3  # mul, x and y cross from forward to backward
    assert (run_autograd.files / "autograd_graphs.mmd").read_text().strip() == diagram.strip()


# ------------------------------------------------------------------------------------------------ FX


def test_fx_graph_has_one_node_of_each_kind(run_fx):
    ops = [node["op"] for node in run_fx.results["nodes"]]
    assert ops == ["placeholder", "call_module", "call_function", "call_method", "call_function", "output"]
    graph = run_fx.section("module")
    assert "call_function[target=torch.relu]" in graph and "call_method[target=mean]" in graph


def test_fx_table_names_targets_without_addresses(run_fx):
    table = run_fx.section("table")
    assert table.splitlines()[0].split() == ["opcode", "name", "target", "args", "kwargs"]
    assert re.search(r"^call_function\s+relu\s+torch\.relu\s", table, re.MULTILINE)
    assert "0x" not in table


def test_rewrite_swaps_relu_for_gelu_and_computes_it(run_fx):
    assert run_fx.results["swapped"] == 1
    code = run_fx.section("rewrite")
    assert "gelu" in code and "relu" not in code
    assert run_fx.results["new_matches"] is True and run_fx.results["old_differs"] is True


# -------------------------------------------------------------------------------------- CUDA graphs


def test_cuda_graph_facts_per_device(run_cuda_graphs):
    results = run_cuda_graphs.results
    assert results["eager"]["per_op_us"] > 0 and results["eager"]["timings"] > 0
    if run_cuda_graphs.device == "cuda":
        assert results["graph_matches_eager"] is True
        assert results["compiled_matches_eager"] is True and results["reduce_overhead_matches_eager"] is True
        assert {"cuda_graph", "compiled", "reduce_overhead"} <= results.keys()
        assert "CUDA graph replay" in run_cuda_graphs.section("graph")
    else:
        assert "cuda_graph" not in results
        assert "do not apply" in run_cuda_graphs.section("graph")


# ---------------------------------------------------------------------------------------------- Dynamo


def test_backend_receives_one_graph_for_three_calls(run_backend):
    results = run_backend.results
    assert results["graphs"] == 1 and results["calls"] == 3 and results["matches"] is True
    assert results["ops"] == ["abs", "add", "truediv", "mul", "mul"]
    calls = run_backend.section("calls")
    assert calls.count("backend call") == 1
    assert "mul_1 = mul * 14" in calls  # the Python generator expression became a constant


def test_guards_show_tensor_match_for_each_input(run_guards):
    guards = run_guards.section("guards")
    assert guards.count("TENSOR_MATCH: check_tensor(") == 2
    assert "size=[8]" in guards and "torch.float32" in guards
    assert run_guards.results["guard_kinds"]["TENSOR_MATCH"] == 2
    assert " # " not in guards and "0x" not in guards  # normalised: no source comments, no addresses


def test_dtype_shape_and_requires_grad_each_recompile(run_guards):
    rows = run_guards.results["recompiles"]
    assert [rows[key]["graphs"] for key in ("first", "new_values", "dtype", "shape", "requires_grad", "again")] == [
        1, 1, 2, 3, 4, 4,
    ]
    assert "dtype mismatch" in rows["dtype"]["reason"]
    assert "size mismatch" in rows["shape"]["reason"]
    assert "requires_grad mismatch" in rows["requires_grad"]["reason"]


def test_automatic_dynamic_recompiles_once(run_guards):
    assert run_guards.results["automatic_dynamic"] == {"8": 1, "16": 2, "32": 2, "64": 2}


# ------------------------------------------------------------------------------------- control flow


def test_jit_trace_bakes_in_the_branch_it_saw(run_control):
    trace = run_control.results["jit_trace"]
    assert trace == {"correct_on_other_branch": False, "correct_on_traced_branch": True}
    assert "traced code: return torch.sin(y)" in run_control.section("jit_trace")


def test_fx_raises_trace_error(run_control):
    assert run_control.results["fx_error"]["type"] == "torch.fx.proxy.TraceError"
    assert "control flow" in run_control.section("fx")


def test_compile_breaks_the_graph_and_cond_does_not(run_control):
    assert run_control.results["compile"] == {"graphs": 2, "breaks": 1, "correct": True}
    assert run_control.results["cond"] == {"graphs": 1, "breaks": 0, "correct": True}
