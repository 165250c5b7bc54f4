"""The check of snippets/graph_mode/inductor_linear_relu.py: what dissecting/triton.md and graph-mode.md say
about it, held on every record of it."""

from facts import check


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
    # The epilogue works in place: its kernel reads and writes one buffer, the GEMM's output, which the
    # wrapper's reuse line hands on (inductor-and-triton.md and its quiz).
    assert "# reuse" in record.section("wrapper")
    assert "in_out_ptr0" in kernel, kernel
    tuned = results["autotune"]
    assert tuned["matches_eager"]
    check_autotune(tuned["kernels"], tuned["launches"], tuned["folded"])
    if tuned["folded"]:
        assert "folded into the GEMM" in record.section("autotune")
    if record.device == "cuda":
        assert isinstance(tuned["big_gpu"], bool)
        if not tuned["big_gpu"]:
            assert not tuned["folded"]  # no Triton template is even tried
