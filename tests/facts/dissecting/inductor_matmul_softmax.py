"""The check of snippets/dissecting/inductor_matmul_softmax.py: what dissecting/inductor.md and
dissecting/triton.md say about it, held on every record of it."""

from facts import check

ARTIFACTS = ["fx_graph_readable.py", "fx_graph_runnable.py", "fx_graph_transformed.py",
             "ir_post_fusion.txt", "ir_pre_fusion.txt", "output_code.py"]


SOFTMAX_IR_OPS = {"max reduction", "sub", "exp", "sum reduction", "truediv"}


# On a Triton target (config.online_softmax), the max and the sum are one reduction with two outputs.
ONLINE_SOFTMAX_IR_OPS = {"online_softmax_reduce reduction", "sub", "exp", "truediv"}


def check_lowering_and_fusion(pre, post, cuda):
    """inductor.md's lowering and fusion, on the scheduler nodes the snippet parsed from ir_pre_fusion.txt and
    ir_post_fusion.txt. Also run on CUDA IR made without a GPU (tests/test_cuda_dry_run.py)."""
    # One scheduler node per buffer; sub never gets a node of its own (lowering inlines it into exp).
    assert pre[0]["ops"] == ["extern_kernels.mm"] and pre[0]["buffers"] == ["buf0"]
    assert all(len(node["buffers"]) == 1 for node in pre)
    ops = {op for node in pre[1:] for op in node["ops"]}
    if cuda:
        assert ONLINE_SOFTMAX_IR_OPS <= ops and not {"max reduction", "sum reduction"} & ops, ops
    else:
        assert SOFTMAX_IR_OPS <= ops, ops
        # On a CPU, exp (reused, and costly to recompute) is realized: a node ending in exp, holding the
        # inlined sub. Five nodes, five buffers, for six ATen ops.
        assert [node["ops"] for node in pre[1:]] == [
            ["max reduction"], ["sub", "exp"], ["sum reduction"], ["truediv"]]
    assert all(node["ops"] != ["sub"] for node in pre)
    # Fusion: whole nodes merged, their ops and buffers kept; the matmul stays extern.
    assert post[0]["ops"] == ["extern_kernels.mm"]
    assert sorted(op for n in post for op in n["ops"]) == sorted(op for n in pre for op in n["ops"])
    assert sorted(b for n in post for b in n["buffers"]) == sorted(b for n in pre for b in n["buffers"])
    assert len(post) < len(pre)
    if not cuda:
        assert len(post) == 2 and post[1]["kind"] == "OuterLoopFusedSchedulerNode"
        assert post[1]["members"] == [node["name"] for node in pre[1:]]


def check_launches(kernels, launches, cuda):
    """The library matmul, then each generated kernel, launched once (from call() or its partitions)."""
    prefix = "triton_" if cuda else "cpp_fused_"
    assert kernels and all(k.startswith(prefix) for k in kernels), kernels
    assert launches and launches[0] == "extern_kernels.mm", launches
    assert [launch.removesuffix(".run") for launch in launches[1:]] == kernels, (launches, kernels)


@check("dissecting/inductor_matmul_softmax.py")
def _(record):
    results, cuda = record.results, record.device == "cuda"
    counts = results["counts"]

    # C++/OpenMP on a CPU, Triton on a GPU.
    assert results["backend"] == ("triton" if cuda else "cpp")
    assert f"Inductor backend for it: {results['backend']}" in record.section("backends")

    # One graph, its six debug artifacts in the folder the config patch named.
    assert results["debug_folder"].startswith("inductor_debug/torchinductor/")
    assert set(ARTIFACTS) <= set(results["artifacts"])
    if not cuda:
        assert results["artifacts"] == ARTIFACTS
    for name in ARTIFACTS:
        assert record.file(f"{results['debug_folder']}/{name}").is_file(), name
        assert name in record.section("compile")
    assert results["max_abs_error"] < 1e-4

    # Dynamo keeps softmax as one call; Inductor receives it as amax, sub, exp, sum, div.
    assert results["dynamo_calls"] == ["matmul", "softmax"]
    assert results["aten_ops"] == ["mm", "amax", "sub", "exp", "sum", "div"]
    assert counts["aten_ops"] == 6
    printed = record.section("decomposition")
    for op in ["mm.default", "amax.default", "sub.Tensor", "exp.default", "div.Tensor"]:
        assert f"aten.{op}" in printed
    readable = record.file(f"{results['debug_folder']}/fx_graph_readable.py").read_text()
    assert all(f"torch.ops.aten.{op}" in readable for op in ["amax", "exp", "div"])
    # The kept graphs: Dynamo's calls softmax, the ATen one exp.
    assert "softmax" in record.file(results["dynamo_graph"]["fxgraph"]).read_text()
    assert "aten.exp" in record.file(results["aten_graph"]["fxgraph"]).read_text()

    # Users: sub has one (exp), so lowering inlines it; exp has two (sum and div).
    users = results["users"]
    assert users["sub"] == ["exp"]
    assert sorted(users["exp"]) == ["div", "sum_1"]
    assert "users: sum_1, div" in printed

    # Lowering (one scheduler node per buffer) and fusion (whole nodes merged).
    pre, post = results["pre_fusion"], results["post_fusion"]
    check_lowering_and_fusion(pre, post, cuda)
    assert counts["pre_fusion_nodes"] == len(pre) < counts["aten_ops"]
    lowering = record.section("lowering")
    assert f"ir_pre_fusion.txt: {len(pre)} scheduler nodes, one per buffer, for 6" in lowering
    assert counts["post_fusion_nodes"] == len(post)
    assert f"ir_post_fusion.txt: {len(post)} scheduler nodes" in record.section("fusion")

    # Generated code: the library matmul and the generated kernel(s), each launched once.
    kernels, launches = results["kernels"], results["launches"]
    check_launches(kernels, launches, cuda)
    assert "softmax" in results["kernel_name"] and results["kernel_name"] == kernels[0]
    assert f"call() launches {len(launches)}:" in record.section("output_code")
    # Fusion keeps intermediates inside the kernel: fewer buffers allocated than nodes.
    assert "buf0" in results["buffers"] and len(results["buffers"]) < len(pre)
    assert counts == {"aten_ops": 6, "pre_fusion_nodes": len(pre),
                      "post_fusion_nodes": len(post), "kernels": len(kernels),
                      "launches": len(launches), "buffers": len(results["buffers"])}
    assert results["compile_threads"] >= 1
    assert isinstance(results["unroll_pragmas"], int) and results["unroll_pragmas"] >= 0
    assert results["kept_in_kernel"], "no pre-fusion buffer stayed inside the kernel"
    if not cuda:
        assert counts["kernels"] == 1 and counts["launches"] == 2
        # exp's buffer, realized at lowering, is never allocated: fusion kept it inside.
        assert results["exp_buffer"] == pre[2]["buffers"][0]
        assert results["exp_buffer"] in results["kept_in_kernel"]

    # Inductor unrolls a reduction shorter than unroll_reductions_threshold into pointwise code: a sum over rows
    # of 4 is 3 adds with no loop; rows as long as the threshold keep a reduction loop.
    threshold = results["unroll_reductions_threshold"]
    assert 4 < threshold
    unrolled = results["unrolled"]
    assert unrolled["4"] == {"reduction_loop": False, "adds": 3}, unrolled
    assert unrolled[str(threshold)]["reduction_loop"] is True, unrolled
    assert "rows of 4 (unroll_reductions_threshold = " in record.section("unroll")
    assert "unrolled, 3 adds a row" in record.section("unroll")

    code = record.section("kernel_code")
    if cuda:
        assert code.startswith("@triton") and results["kernel_lines"] > 0
        assert results["triton_heuristic"] in {"persistent_reduction", "reduction",
                                               "pointwise"}
    else:
        assert code.startswith('extern "C"') and "#pragma omp" in code
        assert "Vectorized<float>" in code
        # The vector length follows the CPU: 16 floats with AVX-512, 8 with AVX2.
        expected = {"AVX512": 16, "AVX2": 8}.get(results["cpu_capability"])
        if expected:
            assert results["vector_floats"] == expected
