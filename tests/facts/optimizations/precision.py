"""The check of snippets/optimizations/precision.py: what precision.md says about it, held on every record of
it."""

import re

from facts import check


@check("optimizations/precision.py")
def _(record):
    results = record.results
    graph, kernels, error = results["graph"], results["kernels"], results["error"]
    # Autocast's casts are ops of the graph Inductor lowers: none in float32, five under autocast (both
    # matmuls' two operands to bfloat16, the first product back to float32 for the GELU), and the page
    # counts six more ops in all (the residual add no longer folds into the matmul).
    assert graph["fp32"]["casts"] == 0 and graph["autocast"]["casts"] == 5, graph
    assert graph["autocast"]["ops"] - graph["fp32"]["ops"] == 6, graph
    shown = record.section("graph")
    assert "4 to bfloat16, 1 to float32" in shown, shown
    # The casts ride in kernels that do other work: every generated kernel of autocast that casts is
    # named after another op too, and the float32 code has no cast at all.
    assert not any(kernels["fp32"]["casts_in_code"].values()), kernels["fp32"]
    with_cast = kernels["autocast"]["with_cast"]
    assert with_cast, kernels["autocast"]
    if record.device == "cpu":
        # The C++ backend: the layer norm's kernel casts its output and w1, the GELU's casts back and forth
        # and w2, the residual add casts the product up; one kernel more than float32 (that add), the same
        # two library matmuls, and no kernel that only casts.
        assert kernels["fp32"]["generated"] == 2 and kernels["autocast"]["generated"] == 3, kernels
        assert kernels["fp32"]["library"] == kernels["autocast"]["library"] == 2, kernels
        assert "addmm" in " ".join(kernels["fp32"]["launches"]), kernels["fp32"]
        others = [re.sub(r"^cpp_fused_|_to_copy|_\d+$", "", k).strip("_") for k in with_cast]
        assert all(others), with_cast
        reads = kernels["autocast"]["reads"]
        matmuls = [k for k in kernels["autocast"]["launches"] if k.startswith("extern_kernels")]
        assert all(not reads[k] for k in matmuls), reads  # they read the casts' copies, no input
        assert len(with_cast) == 3, with_cast
    # bfloat16 costs accuracy, by orders of magnitude against float32; eager and compiled autocast make the
    # same size of error, and differ from each other by at most one bfloat16 step of the output's values.
    assert error["ratio"] > 100, error
    assert error["compiled_float32"] < 1e-4 and error["eager_float32"] < 1e-4, error
    assert 0.5 < error["compiled_autocast"] / error["eager_autocast"] < 2, error
    assert error["compiled_vs_eager_autocast"] <= error["bf16_step"], error
    assert set(results["dtypes"].values()) == {"torch.float32"}, results["dtypes"]  # the residual is fp32
    # set_float32_matmul_precision is guarded: "high" recompiles (GLOBAL_STATE names the setting), and on
    # this CPU changes no bit; "medium" changes no guarded setting, so no third graph.
    precision = results["matmul_precision"]
    assert precision["graphs"] == 2, precision
    assert not precision["recompiled"]["highest"] and not precision["recompiled"]["medium"], precision
    assert any("GLOBAL_STATE changed" in r for r in precision["recompiled"]["high"]), precision
    # The page names the setting the guard's message gives: cuda_matmul_precision (2.15) or allow_tf32 (older).
    assert any("cuda_matmul_precision" in r or "allow_tf32" in r for r in precision["recompiled"]["high"]), precision
    if record.device == "cpu":
        assert precision["high_same"], precision
