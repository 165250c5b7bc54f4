"""Facts printed by the Graph mode chapter's snippets (CPU values here, CUDA values on a GPU machine)."""

from harness import snippet

run_fuse = snippet("graph_mode/eager_cannot_fuse.py")
run_compile_time = snippet("graph_mode/compile_time.py")
run_breaks = snippet("graph_mode/graph_breaks.py")
run_triggers = snippet("graph_mode/break_triggers.py")
run_inductor = snippet("graph_mode/inductor_linear_relu.py")
run_triton = snippet("graph_mode/triton_linear_relu.py")
run_recompiles = snippet("graph_mode/recompiles.py")
run_when_not = snippet("graph_mode/when_not_to_compile.py")


def test_eager_runs_three_ops_and_compiled_code_matches(run_fuse):
    eager, compiled = run_fuse.results["eager"], run_fuse.results["compiled"]
    assert eager["ops"] == ["aten::matmul", "aten::add", "aten::relu"]
    assert "eager: 3 ops called" in run_fuse.section("eager")
    assert compiled["matches_eager"]
    # Inductor keeps the GEMM as a library call and generates one kernel for the rest (bias and/or relu).
    assert compiled["extern_count"] == 1 and compiled["generated_count"] == 1
    assert "Torch-Compiled Region: 0/0" in compiled["profiler_ops"]
    if run_fuse.device == "cuda":
        assert eager["kernel_count"] >= 3
        assert compiled["kernel_count"] < eager["kernel_count"]
    else:
        assert eager["kernel_count"] == compiled["kernel_count"] == 0
        assert compiled["calls"] == ["extern_kernels.addmm", "cpp_fused_relu_0"]  # bias folded into addmm


def test_first_call_compiles_and_later_calls_do_not(run_compile_time):
    first = run_compile_time.results["first_call"]
    assert first["matches_eager"]
    assert first["uncached_s"] > first["second_s"]
    assert first["cached_hits"] == 1  # the second cached run finds the graph in Inductor's FX graph cache
    assert "second call (guards pass" in run_compile_time.section("first_call")


def test_print_splits_the_forward_into_two_graphs(run_breaks):
    chatty, quiet = run_breaks.results["explain"]["with print"], run_breaks.results["explain"]["without print"]
    assert (chatty["graph_count"], chatty["graph_break_count"]) == (2, 1)
    assert chatty["break_reasons"] == ["Failed to trace builtin operator"]
    assert chatty["ops_per_graph"] == [["linear", "relu", "linear"], ["linear", "sigmoid"]]
    assert (quiet["graph_count"], quiet["graph_break_count"], quiet["break_reasons"]) == (1, 0, [])
    assert "with print: 2 graph(s), 1 graph break(s)" in run_breaks.section("explain")
    assert run_breaks.results["timing"]["same_result"]


def test_break_triggers_table(run_triggers):
    table = run_triggers.results["table"]
    counts = {name: (row["graph_count"], row["graph_break_count"]) for name, row in table.items()}
    assert counts == {
        "print": (2, 1),
        "if x.sum() > 0": (2, 1),
        "np.tanh on .numpy()": (1, 0),  # Dynamo traces NumPy through torch._numpy
        "np.interp on .numpy()": (2, 1),
        ".item()": (2, 1),
        ".item(), capture_scalar_outputs": (1, 0),
        ".tolist()": (1, 0),  # no break: the values are baked into the graph as constants
    }
    assert table["print"]["reasons"] == ["Failed to trace builtin operator"]
    assert table["if x.sum() > 0"]["reasons"] == ["generic_jump TensorVariable()"]
    assert table["np.interp on .numpy()"]["reasons"][0].startswith("attempted to trace numpy function unsupported")
    assert table[".item()"]["reasons"][0].startswith("Unsupported Tensor.item() call")
    # Data-dependent code compiles again for new values; the baked-in .tolist() constants do too.
    assert table["if x.sum() > 0"]["graphs_compiled_for_3_inputs"] == 3
    assert table[".tolist()"]["graphs_compiled_for_3_inputs"] == 2
    assert table["np.tanh on .numpy()"]["graphs_compiled_for_3_inputs"] == 1
    assert "0x" not in run_triggers.section("table")


def test_graph_breaks_log_is_captured_and_normalised(run_triggers):
    logged = run_triggers.results["logs"]
    assert [entry["file"] for entry in logged] == ["break_triggers.py", "break_triggers.py"]
    assert "`print`" in logged[0]["explanation"] and "Tensor.item()" in logged[1]["explanation"]
    assert "2 graph breaks logged" in run_triggers.section("logs")


def test_inductor_output_code(run_inductor):
    results = run_inductor.results
    assert results["matches_eager"]
    assert results["extern_calls"] in (["extern_kernels.addmm"], ["extern_kernels.mm"])
    assert len(results["kernels"]) == 1 and "relu" in results["kernels"][0]
    kernel = run_inductor.section("kernel")
    if run_inductor.device == "cuda":
        assert results["kernels"][0].startswith("triton_") and "@triton.jit" in kernel
    else:
        assert results["kernels"] == ["cpp_fused_relu_0"]
        assert 'extern "C"' in kernel and "#pragma omp" in kernel
    assert "/tmp/" not in run_inductor.stdout and "kernel path" not in run_inductor.stdout


def test_triton_kernel_matches_torch(run_triton):
    check = run_triton.results["check"]
    assert check["match"] and check["max_error"] <= check["tolerance"]
    if run_triton.device == "cuda":
        assert not check["interpreted"]
        pipeline = run_triton.results["pipeline"]
        assert {"ttir", "ttgir", "llir", "ptx"} <= set(pipeline)
        assert pipeline["cubin"]["bytes"] > 0
        assert set(run_triton.results["benchmark"]) == {"eager", "torch_compile", "triton_kernel"}
    else:
        assert check["interpreted"] and (check["m"], check["n"], check["k"]) == (256, 256, 256)
        assert run_triton.results["pipeline"] == {}
        assert "exist only when triton compiles for a GPU" in run_triton.section("pipeline")


def test_recompiles_on_new_shapes(run_recompiles):
    counts = run_recompiles.results["counts"]
    assert counts["None"]["compiles"] == 2  # static first, then one dynamic graph for every other batch
    assert counts["False"]["compiles"] == 4  # one per distinct batch size
    assert counts["True"]["compiles"] == 1
    assert counts["None"]["recompile_reasons"] == ["tensor 'x' size mismatch at index 0. expected 8, actual 16"]
    assert len(counts["False"]["recompile_reasons"]) == 3
    assert all(r["matches_eager"] for r in run_recompiles.results["inductor"].values())


def test_break_even_and_tiny_model(run_when_not):
    results = run_when_not.results
    assert results["break_even"]["compile_s"] > 0
    calls = results["break_even"]["calls"]
    assert calls is None or calls >= 1
    assert results["tiny"]["compiled_over_eager"] > 0
    assert "compiled takes" in run_when_not.section("tiny")
