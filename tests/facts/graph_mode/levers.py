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
    assert any(d.startswith("fusing op0 (amax) with") for d in decisions), decisions
    assert any(d.startswith("cannot fuse") for d in decisions), decisions
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
