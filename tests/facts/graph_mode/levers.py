"""The check of snippets/graph_mode/levers.py: what levers.md says about it, held on every record of it."""

from facts import check


@check("graph_mode/levers.py")
def _(record):
    results = record.results
    # fullgraph=True turns the print's graph break into an error; made reorderable, the print no longer breaks.
    assert results["fullgraph"]["graphs"] == 2
    assert "Failed to trace builtin operator" in results["fullgraph"]["raised"]
    assert results["reorderable"]["graphs"] == 1
    # TORCH_LOGS: each artifact logged something for the break, the recompile, the fusions and the code.
    logs = results["logs"]
    assert all(logs[a]["messages"] >= 1 for a in ("graph_breaks", "recompiles", "fusion", "output_code")), logs
    assert "size mismatch at index 0. expected 8, actual 16" in logs["recompiles"]["reason"]
    decisions = logs["fusion"]["decisions"]
    assert "fusing op1 (relu) with op2 (mean)" in decisions
    if record.device == "cpu":
        assert any(d.startswith("fusing op0 (amax) with") for d in decisions), decisions
        assert any(d.startswith("cannot fuse") for d in decisions), decisions
    else:
        # On a GPU a post-grad pass turns the softmax's max and sum into one online pass
        # (prepare_softmax_online), and nothing is turned down.
        assert any("prepare_softmax_online" in d for d in decisions), decisions
        assert not any(d.startswith("cannot fuse") for d in decisions), decisions
    # On the CPU the output code names C++ kernels; on a GPU, Triton ones.
    prefix = "triton_" if record.device == "cuda" else "cpp_fused_"
    assert logs["output_code"]["kernels"] and all(k.startswith(prefix) for k in logs["output_code"]["kernels"])
    # mode= names a set of Inductor options: CUDA graphs for reduce-overhead, autotuning on top for max-autotune.
    modes = results["modes"]
    assert modes["default"] == {} and modes["reduce-overhead"] == {"triton.cudagraphs": True}
    assert modes["max-autotune"]["max_autotune"] and modes["max-autotune"]["triton.cudagraphs"]
    assert "triton.cudagraphs" not in modes["max-autotune-no-cudagraphs"]
    # lite: every op falls back to its ATen kernel unless a region opts in; no passes, no buffer reuse.
    lite = modes["lite"]
    assert lite["fallback_by_default"] and not lite["allow_buffer_reuse"] and not lite["use_post_grad_passes"]
    assert "lite: fallback_by_default=True" in record.section("modes")
    # mark_dynamic skips the static graph the default compiles first; torch.cond keeps one graph.
    assert results["mark_dynamic"] == {"unmarked": 2, "marked": 1}
    assert results["cond"] == {"branchy": 3, "one_graph": 1}
    # set_stance: a recompile is an error under fail_on_recompile; force_eager compiles nothing.
    stance = results["set_stance"]
    assert "fail_on_recompile" in stance["error"] and "expected 8, actual 9" in stance["guard"]
    assert stance["graphs"] == 1
    # set_float32_matmul_precision: "high" sets the TF32 flags and leaves a CPU matmul bit for bit the same;
    # "medium" lets oneDNN use bfloat16 (fp32_precision=bf16), and here the result changed in its last bits only.
    precision = results["precision"]
    assert precision["highest"]["cuda.matmul.allow_tf32"] is False
    assert precision["high"]["cuda.matmul.allow_tf32"] and precision["medium"]["cuda.matmul.allow_tf32"]
    assert [precision[p]["mkldnn.matmul.fp32_precision"] for p in ("highest", "high", "medium")] == [
        "ieee", "tf32", "bf16"]
    if record.device == "cpu":
        assert precision["high"]["same_as_highest"]
        # Only a CPU where oneDNN has a bfloat16 matmul (AVX-512 or AMX) changes the result; on an AVX2-only
        # CPU "medium" gives the same bits too.
        assert precision["medium"]["same_as_highest"] is not record.bf16_matmul, record.environment.get("cpu_isa")
        assert precision["highest"]["error"] < 1e-4  # float32's size of error
        bf16 = results["precision_bf16_inputs_error"]
        if record.amx_bf16:  # oneDNN's AMX kernel takes bfloat16 inputs: their rounding's error (levers.md)
            assert 10 * precision["highest"]["error"] < precision["medium"]["error"] < 2 * bf16, precision
        else:  # the last bits only, far from bfloat16 inputs' error
            assert precision["medium"]["error"] < 10 * precision["highest"]["error"], precision
            assert precision["medium"]["error"] * 100 < bf16, precision
    else:
        # On a GPU "high" is TF32, whose error is far above float32's; "medium" gave the same as "high".
        assert not precision["high"]["same_as_highest"]
        assert precision["high"]["error"] > 100 * precision["highest"]["error"], precision
        assert precision["medium"]["error"] == precision["high"]["error"], precision
    # freezing: the weight and bias stop being arguments of call() and become constants of the module.
    frozen = results["freezing"]
    assert frozen["False"]["lines"][0].startswith("arg0_1, arg1_1, arg2_1 = args")
    assert frozen["True"]["lines"][0].startswith("arg2_1, = args") and frozen["True"]["constants"] >= 2
    assert any("_frozen_param" in line for line in frozen["True"]["lines"])
    # torch.compiler.disable: a break at the call, a graph on each side.
    assert results["disable"]["graphs"] == 2
    assert "torch.compiler.disable()" in results["disable"]["reason"]
    # options=: cpp.simdlen=1 leaves no vector code; mode= and options= cannot be combined.
    if record.device == "cpu":
        vectorized = results["options"]["vectorized"]
        assert vectorized["{}"] > 0 and vectorized["{'cpp.simdlen': 1}"] == 0
        assert len(results["options"]["kernels"]["{}"]) == 1  # the default fuses relu and the multiply
    assert "Either mode or options can be specified" in results["options"]["mode_and_options"]
    # lite: every op falls back to its ATen kernel, nothing fused.
    assert results["lite"]["fused_kernels"] == 0
    ops = [call.split(" = ")[1].split("(")[0] for call in results["lite"]["calls"] if "torch.ops" in call]
    assert ops == ["torch.ops.aten.relu.default", "torch.ops.aten.mul.Tensor"]  # 2.13 also writes aliases
