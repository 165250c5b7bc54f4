"""The check of snippets/gpu_code/inductor_cuda_code.py: what dissecting/inductor.md and dissecting/triton.md say
about it, held on every record of it."""

from facts import check, skip_unless_pinned


@check("gpu_code/inductor_cuda_code.py")
def _(record):
    generated = record.results["inductor_cuda"]
    assert generated["label"]
    if not generated["available"]:
        assert "could not be generated" in generated["reason"]
        assert generated["reason"] in record.section("kernels")
        skip_unless_pinned(record, generated["reason"])
    if record.device == "cpu":
        assert "without a GPU; never run" in generated["label"]
    n = record.results["n"]
    act = generated["complex_activation"]
    (kernel,) = act["kernels"]  # six ops, ONE kernel
    assert kernel.startswith("triton_poi_fused_")
    assert all(op in kernel for op in ("sin", "cos", "mul", "add", "relu"))
    assert [launch.removesuffix(".run") for launch in act["launches"]] == [kernel]
    assert act["num_bytes_accessed"] == 3 * n * 4  # read x and y, write out: fp32
    assert "@triton.jit" in act["sources"][kernel] and "tl.load" in act["sources"][kernel]
    lin = generated["linear_relu"]
    (fused,) = lin["kernels"]  # extern mm + ONE fused add+relu kernel
    assert fused.startswith("triton_poi_fused_") and "add" in fused and "relu" in fused
    assert lin["launches"] == ["extern_kernels.mm", f"{fused}.run"]
    assert set(lin["bytes_per_kernel"]) == {"extern_kernels.mm", fused}
    soft = generated["matmul_softmax"]
    (reduction,) = soft["kernels"]
    assert reduction.startswith(("triton_per_fused_", "triton_red_fused_"))
    assert "softmax" in reduction
    # inductor.md: on a Triton target the max and sum become one online-softmax reduction, and exp is
    # computed twice (once in the reduction, once for the output).
    assert "online" in reduction, reduction
    assert soft["sources"][reduction].count("exp(") >= 2
    assert soft["launches"] == ["extern_kernels.mm", f"{reduction}.run"]
    assert sum(soft["bytes_per_kernel"].values()) == soft["num_bytes_accessed"]
    assert "@triton.jit" in record.file(act["file"]).read_text()
    assert kernel in record.section("activation")
    if record.device == "cuda":
        for name in ("complex_activation", "linear_relu", "matmul_softmax"):
            assert generated[name]["max_error"] is not None
