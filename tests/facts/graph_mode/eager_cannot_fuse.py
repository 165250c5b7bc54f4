"""The check of snippets/graph_mode/eager_cannot_fuse.py: what dissecting/regimes.md and graph-mode.md say about
it, held on every record of it."""

from facts import check, timed

from scripts import measures


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
    if record.committed:
        # guide.md: a linear layer that gains on the GPU and not on the CPU.
        timing = record.results["timing"]
        words = measures.judge(timing["eager"], timing["compiled"], record.device)
        assert measures.direction(words) == (1 if record.device == "cuda" else 0), words
    if record.device == "cuda":
        # Eager: the GEMM, the add and the relu each launch (at least) one kernel; compiled: fewer.
        assert eager["kernel_count"] >= 3
        assert compiled["kernel_count"] < eager["kernel_count"]
        # graph-mode.md names them: the profiled call's label, a memset, cuBLAS's GEMM, then eager's add and
        # relu kernels; compiled, the same GEMM and Inductor's one Triton kernel.
        kernels, compiled_kernels = eager["kernels"], compiled["kernels"]
        assert kernels[:2] == ["eager", "Memset "] and compiled_kernels[:2] == ["compiled", "Memset "]
        assert kernels[2].startswith("nvjet") and compiled_kernels[2] == kernels[2]
        assert kernels[3:] == ["at::native::elementwise_kernel", "at::native::vectorized_elementwise_kernel"]
        assert compiled_kernels[3:] == ["triton_poi_fused_add_relu_0"]
        assert compiled["calls"] == ["extern_kernels.mm", "triton_poi_fused_add_relu_0"]
    else:
        assert eager["kernel_count"] == compiled["kernel_count"] == 0
        assert compiled["calls"] == ["extern_kernels.addmm", "cpp_fused_relu_0"]  # bias folded into addmm
        if record.committed:  # graph-mode.md: the epilogue's M x N tensors stay in the recording CPU's L3
            l3 = record.environment["caches"]["L3"]
            assert 3 * record.results["shape"]["mn_mib"] * 2**20 < l3, (record.results["shape"], l3)
