"""The Optimizations chapter's facts (docs/optimizations.md), one check per snippet."""

import re

from facts import check, timed

SIX_OPS = ["aten::sin", "aten::cos", "aten::mul", "aten::add", "aten::mul", "aten::relu"]


@check("optimizations/fusion.py")
def _(record):
    results = record.results
    assert results["allclose"] is True
    assert "compiled == eager: True" in record.section("compile")

    # Six eager ops; the compiled call runs one generated kernel and no aten op.
    eager, compiled = results["profile"]["eager"], results["profile"]["compiled"]
    assert eager["ops"] == SIX_OPS, eager["ops"]
    assert compiled["op_count"] == 0, compiled["ops"]
    assert compiled["kernel_count"] == 1, compiled["kernels"]
    assert "compiled: 0 aten ops" in record.section("profile")
    assert set(results["traces"]) == {"eager", "compiled"}
    for name in ("eager", "compiled"):
        assert record.file(f"traces.{name}.trace.json").exists()
    if record.device == "cuda":
        assert eager["kernel_count"] == 6, eager["kernels"]
        assert compiled["kernels"][0].startswith("triton_poi_fused_")
    else:
        assert eager["kernel_count"] == 0
        assert compiled["kernels"] == ["graph_N_cpp_fused_add_cos_mul_relu_sin_0"]

    # The lesson in bytes: 15 passes against 3, on tensors at least 4x the last-level cache (the page says
    # every pass goes to DRAM), so the copy it is set against is a DRAM figure too.
    assert results["passes"] == {"eager": 15, "compiled": 3, "copy": 2}
    assert results["n"] == (64 * 2**20 if record.device == "cuda" else 32 * 2**20)
    env = record.environment
    llc = env.get("gpu_l2_bytes") if record.device == "cuda" else (env.get("caches") or {}).get("llc_bytes")
    if llc:
        assert results["tensor_mib"] * 2**20 >= 4 * llc, (results["tensor_mib"], llc)
    assert "eager moves 5x the bytes" in record.section("timing")
    timed(results["timing"], ("eager", "compiled", "copy"))
    for name in ("eager", "compiled", "copy"):
        assert results["bandwidth_gbps"][name] > 0
    assert results["share_of_copy"]["copy"] == 1

    # Preallocated outputs: the same six ops with no allocation, counted in page faults.
    faults = results["page_faults"]
    assert set(faults) == {"eager", "eager_out", "compiled", "compiled_out"}, faults
    assert all(n >= 0 for n in faults.values()), faults
    timed(results["timing_out"], ("eager", "eager_out", "compiled", "compiled_out"))
    if record.device == "cpu":
        # The page's CPU story: fresh outputs fault their pages in, one output's worth for the compiled call
        # and six for eager; with outputs allocated once, neither faults, and allocation was most of both.
        assert faults["eager_out"] == 0 and faults["compiled_out"] == 0, faults
        assert faults["eager"] > 5 * faults["compiled"] > 0, faults
        assert min(results["allocation_share"].values()) > 0.5, results["allocation_share"]
    assert "page faults per call" in record.section("outputs")

    # One fused kernel, handed to async_compile; on CPU a vectorized loop, not unrolled.
    kernel = results["kernel"]
    assert kernel["count"] == 1 and len(kernel["names"]) == 1, kernel
    source = record.section("kernel")
    assert source.count("load") >= 2  # reads x and y once each
    if record.device == "cuda":
        assert kernel["names"] == ["triton_poi_fused_add_cos_mul_relu_sin_0"]
        assert "def triton_poi_fused_add_cos_mul_relu_sin_0(" in source
        assert "tl.store" in source
    else:
        assert kernel["names"] == ["cpp_fused_add_cos_mul_relu_sin_0"]
        assert 'extern "C"' in source and ".sin()" in source and "clamp_min" in source
        assert kernel["vector_bits"] == 32 * kernel["vector_step"]
        assert f"x0+=static_cast<int64_t>({kernel['vector_step']}L)" in source
        assert kernel["unroll_in_source"] is False


@check("optimizations/buffer_reuse.py")
def _(record):
    results = record.results
    assert results["allclose"] is True
    code = results["code"]

    # Every named intermediate lives until eager returns; compiled code frees and reuses.
    peak = results["peak"]
    assert round(peak["eager_tensors"]) == 7, peak
    assert peak["compiled_tensors"] < peak["eager_tensors"]
    assert code["reuse_count"] >= 1
    assert re.search(r"buf\d+ = buf\d+; del buf\d+  # reuse", record.section("code"))
    assert code["full_size_allocations"] < code["eager_tensors_allocated"] == 7

    if record.device == "cpu":
        # The page's walk through the CPU record: the returned buffer takes over the
        # memory of the buffer the matmul read.
        assert code["returned_reuses"] == code["matmul_input"], code
        assert code["reuse_line"] == (f"{code['returned']} = {code['returned_reuses']}; "
                                      f"del {code['returned_reuses']}  # reuse")
        assert code["small_allocations"] == 2  # the softmaxes' row maximum and sum

    # The inputs belong to the caller: never overwritten, whatever the sources say.
    assert code["inputs_reused"] == []
    assert all(old.startswith("buf") for old in code["reuses"].values())
    assert "inputs whose memory it reuses: none" in record.section("code")


@check("optimizations/relayout.py")
def _(record):
    results = record.results
    assert results["allclose"] is True
    assert results["conv_count"] == 3
    assert results["kept_conv_layouts"] == ["NCHW (as given)"]
    if record.device == "cpu":
        # With oneDNN, Inductor always stores a conv network's activations channels-last.
        assert results["conv_output_layouts"] == ["channels-last"] * 3
        assert "channels-last    convolution output" in record.section("strides")
    else:
        # On CUDA a heuristic decides; the page quotes how many it made channels-last.
        assert results["channels_last_conv_outputs"] in range(4)

    # The caller gets the layout eager mode returns: contiguous NCHW.
    strides = results["output_strides"]
    assert strides == sorted(strides, reverse=True) and strides[-1] == 1, strides
    timed(results["timing"], ("eager", "relayout", "kept"))


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
