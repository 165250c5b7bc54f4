"""The check of snippets/optimizations/dead_code.py: what optimizations.md says about it, held on every record of
it."""

from facts import check


@check("optimizations/dead_code.py")
def _(record):
    results = record.results
    assert results["allclose"] is True

    # Captured by TorchDynamo (3 matmuls), gone from the lowered ATen graph (2).
    assert results["matmuls"] == {"dynamo": 3, "aten": 2, "generated_code": 2}
    assert results["unused_input"] == "arg2_1"
    assert results["unused_line"] == "unused = l_x_ @ l_gating1_"
    assert results["lowered_matmul_nodes"] == ["mm", "mm_2"]  # the gap: the dead matmul
    graphs = record.section("graphs")
    assert "unused = l_x_ @ l_gating1_" in graphs
    assert "%arg2_1 : [num_users=0]" in graphs
    captured = record.file(results["graphs"]["captured"]["fxgraph"]).read_text()
    lowered = record.file(results["graphs"]["lowered"]["fxgraph"]).read_text()
    assert captured.count("l_gating1_") >= 1 and "aten.mm" not in captured
    assert lowered.count("aten.mm.default") == 2

    # The profiles agree: 3 matmuls eager, 2 compiled; on CUDA, fewer GEMM kernels compiled than eager. Not
    # exactly 3 and 2: cuBLAS may split one GEMM into several kernels (split-K), and names them by release.
    profile = results["profile"]
    assert (profile["eager_mm_ops"], profile["compiled_mm_ops"]) == (3, 2)
    if record.device == "cuda":
        eager, compiled = profile["eager_mm_kernels"], profile["compiled_mm_kernels"]
        assert eager >= 3, f"{eager} GEMM kernels recognised for 3 matmuls: the name patterns missed cuBLAS's"
        assert 2 <= compiled < eager, (eager, compiled)
