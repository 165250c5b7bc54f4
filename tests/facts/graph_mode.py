"""What the Graph mode chapter (docs/graph-mode.md) states, checked on every record of its snippets."""

from facts import check, timed


@check("graph_mode/eager_cannot_fuse.py")
def _(record):
    eager, compiled = record.results["eager"], record.results["compiled"]
    assert eager["ops"] == ["aten::matmul", "aten::add", "aten::relu"]
    assert "eager: 3 ops called" in record.section("eager")
    assert compiled["matches_eager"]
    # Inductor keeps the GEMM as a library call and generates one kernel for the rest: two launches.
    assert (compiled["extern_count"], compiled["generated_count"]) == (1, 1)
    assert any(op.startswith("Torch-Compiled Region") for op in compiled["profiler_ops"])
    for trace in record.results["traces"].values():
        assert record.file(trace["trace"]).exists()
    timed(record.results["timing"], ("eager", "compiled"))
    if record.device == "cuda":
        # Eager: the GEMM, the add and the relu each launch (at least) one kernel; compiled: fewer.
        assert eager["kernel_count"] >= 3
        assert compiled["kernel_count"] < eager["kernel_count"]
    else:
        assert eager["kernel_count"] == compiled["kernel_count"] == 0
        assert compiled["calls"] == ["extern_kernels.addmm", "cpp_fused_relu_0"]  # bias folded into addmm


@check("graph_mode/compile_time.py")
def _(record):
    first = record.results["first_call"]
    assert first["matches_eager"]
    # A second compile of the same graph finds its kernel in Inductor's code cache: no compiler runs,
    # with the FX graph cache off or on.
    assert first["compilers_again"] == first["compilers_cache_on"] == first["compilers_cache_hit"] == 0
    assert first["cached_hits"] == 1  # the last compile finds the graph in the FX graph cache
    assert "compilers run: none" in record.section("first_call")
    if record.exists:  # a committed record: the recorder starts every snippet with empty compiler caches
        assert first["compilers_first"] >= 1
    timed(record.results["timing"], ("eager", "compiled"))


@check("graph_mode/graph_breaks.py")
def _(record):
    explain = record.results["explain"]
    chatty, quiet = explain["with_print"], explain["without_print"]
    assert (chatty["graph_count"], chatty["graph_break_count"]) == (2, 1)
    assert chatty["break_reasons"] == ["Failed to trace builtin operator"]
    assert chatty["ops_per_graph"] == [["linear", "relu", "linear"], ["linear", "sigmoid"]]
    assert (quiet["graph_count"], quiet["graph_break_count"], quiet["break_reasons"]) == (1, 0, [])
    assert "with print: 2 graph(s), 1 graph break(s)" in record.section("explain")
    graphs = record.results["graphs_with_print"]
    assert graphs["graphs"] == 2 and record.file(graphs["fxgraph"]).exists()
    assert record.results["same_result"]
    timed(record.results["timing"], ("eager_print", "eager_no_print", "compiled_print", "compiled_no_print"))


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


def check_linear_relu(kernels, launches):
    """Default mode: the library GEMM, then one generated kernel that adds the bias and applies the ReLU.
    Also run on CUDA code made without a GPU (tests/test_cuda_dry_run.py), as is check_autotune."""
    extern = [name for name in launches if name.startswith("extern_kernels")]
    assert extern in (["extern_kernels.addmm"], ["extern_kernels.mm"]), launches
    assert len(kernels) == 1 and "relu" in kernels[0], kernels
    assert launches == extern + kernels  # GEMM, then the epilogue


def check_autotune(kernels, launches, folded):
    """max-autotune: every generated kernel launched once, wherever the wrapper launches it (call(), or
    partition_0 under CUDA graphs), and `folded` true exactly when no library GEMM is launched."""
    assert launches, "no launch found in the wrapper: the parser missed where it launches its kernels"
    extern = [name for name in launches if name.startswith("extern_kernels")]
    assert sorted(name for name in launches if name not in extern) == sorted(kernels), (launches, kernels)
    assert folded == (not extern), (folded, launches)
    if folded:  # a template won: one kernel, the GEMM with the ReLU in it
        assert len(kernels) == 1 and "relu" in kernels[0], kernels
    else:  # the library GEMM, then the ReLU on its own
        assert any("relu" in name for name in kernels), kernels


@check("graph_mode/inductor_linear_relu.py")
def _(record):
    results = record.results
    assert results["matches_eager"]
    check_linear_relu(results["kernels"], results["launches"])
    assert results["extern_calls"] == [n for n in results["launches"] if n.startswith("extern_kernels")]
    kernel = record.section("kernel")
    if record.device == "cuda":
        assert results["kernels"][0].startswith("triton_") and "@triton.jit" in kernel
    else:
        assert results["kernels"] == ["cpp_fused_relu_0"]
        assert 'extern "C"' in kernel and "#pragma omp" in kernel
    assert "/tmp/" not in record.stdout and "kernel path" not in record.stdout
    assert "# reuse" in record.section("wrapper")  # the epilogue writes over the GEMM's output buffer
    tuned = results["autotune"]
    assert tuned["matches_eager"]
    check_autotune(tuned["kernels"], tuned["launches"], tuned["folded"])
    if tuned["folded"]:
        assert "folded into the GEMM" in record.section("autotune")
    if record.device == "cuda":
        assert isinstance(tuned["big_gpu"], bool)
        if not tuned["big_gpu"]:
            assert not tuned["folded"]  # no Triton template is even tried


@check("graph_mode/recompiles.py")
def _(record):
    counts = record.results["counts"]
    assert counts["None"]["compiles"] == 2  # static first, then one dynamic graph for every other batch
    assert counts["False"]["compiles"] == 4  # one per distinct batch size
    assert counts["True"]["compiles"] == 1
    assert counts["None"]["recompile_reasons"] == ["tensor 'x' size mismatch at index 0. expected 8, actual 16"]
    assert len(counts["False"]["recompile_reasons"]) == 3
    # Batch 1 is specialised apart: 8 static, 16 dynamic, 1 a third graph, static again.
    batch_one = record.results["batch_one"]
    assert batch_one["compiles"] == 3
    assert batch_one["last_inputs"][0] == [1, 256]
    limit = record.results["limit"]
    assert limit["sizes"] > limit["recompile_limit"]
    assert limit["compiles"] == limit["recompile_limit"]  # then Dynamo runs the function eagerly
    assert f"recompile limit: {limit['recompile_limit']}" in record.section("limit")
    assert all(r["matches_eager"] for r in record.results["inductor"].values())


@check("graph_mode/triton_linear_relu.py")
def _(record):
    check = record.results["check"]
    assert check["match"] and check["max_error"] <= check["tolerance"]
    if record.device == "cuda":
        assert not check["interpreted"]
        pipeline = record.results["pipeline"]
        for stage in ("ttir", "ttgir", "llir", "ptx", "sass"):
            assert pipeline[stage]["matches"] >= 1, f"no matmul found in the {stage} stage"
        assert pipeline["shared_bytes"] > 0
        timed(record.results["timing"], ("eager", "compiled", "triton"))
    else:
        assert check["interpreted"] and (check["m"], check["n"], check["k"]) == (256, 256, 256)
        assert record.results["pipeline"] == {}
        assert "made when triton compiles" in record.section("pipeline")


@check("graph_mode/when_not_to_compile.py")
def _(record):
    break_even = record.results["break_even"]
    assert break_even["compile_s"] > 0
    assert break_even["pays_off"] == (break_even["calls"] is not None)
    assert break_even["calls"] is None or break_even["calls"] >= 1
    timed(record.results["timing"], ("eager", "compiled"))
    timed(record.results["tiny"], ("eager", "compiled"))
    assert "median compiled / median eager" in record.section("tiny")
