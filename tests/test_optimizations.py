"""Facts printed by the Optimizations chapter's snippets."""

import re

from harness import snippet

run_fusion = snippet("optimizations/fusion.py")
run_reuse = snippet("optimizations/buffer_reuse.py")
run_relayout = snippet("optimizations/relayout.py")
run_dead_code = snippet("optimizations/dead_code.py")

SIX_OPS = ["aten::sin", "aten::cos", "aten::mul", "aten::add", "aten::mul", "aten::relu"]


# Kernel fusion
def test_compiled_activation_matches_eager(run_fusion):
    assert run_fusion.results["allclose"] is True
    assert "compiled == eager: True" in run_fusion.section("compile")


def test_eager_runs_six_ops_and_compiled_one_fused_kernel(run_fusion):
    profile = run_fusion.results["profile"]
    assert profile["eager_ops"] == SIX_OPS
    assert profile["compiled_op_count"] == 0  # no aten op left: everything is in the generated kernel
    assert profile["compiled_kernel_count"] == 1
    if run_fusion.device == "cuda":
        assert profile["eager_kernel_count"] == 6
        assert profile["compiled_kernels"][0].startswith("triton_poi_fused_")
    else:
        assert re.fullmatch(r"graph_\d+_cpp_fused_add_cos_mul_relu_sin_0", profile["compiled_kernels"][0])
    assert "compiled: 0 aten ops" in run_fusion.section("profile")


def test_generated_code_is_one_kernel_doing_all_six_ops(run_fusion):
    assert run_fusion.results["generated_kernel_count"] == 1
    kernel = run_fusion.section("kernel")
    if run_fusion.device == "cuda":
        assert "def triton_poi_fused_add_cos_mul_relu_sin_0(" in kernel and "tl.store" in kernel
    else:
        assert 'extern "C"' in kernel and ".sin()" in kernel and ".cos()" in kernel and "clamp_min" in kernel
    assert kernel.count("load") >= 2  # reads x and y once each


def test_fused_kernel_moves_a_fifth_of_the_bytes(run_fusion):
    timing = run_fusion.results["timing"]
    assert timing["eager_mib"] == 5 * timing["fused_mib"]
    for name in ("eager", "compiled"):
        assert timing[name]["median_us"] > 0 and timing[name]["timings"] > 1 and timing[name]["gbps"] > 0
    assert timing["copy_gbps"] > 0


# Buffer reuse
def test_compiled_chain_matches_eager(run_reuse):
    assert run_reuse.results["allclose"] is True


def test_generated_code_reuses_buffers(run_reuse):
    code = run_reuse.results["code"]
    assert code["reuse_count"] >= 1
    assert re.search(r"buf\d+ = buf\d+; del buf\d+  # reuse", run_reuse.section("code"))
    assert code["full_size_allocations"] < code["eager_tensors_allocated"] == 7


def test_compiled_peak_memory_is_below_eager(run_reuse):
    peak = run_reuse.results["peak"]
    assert round(peak["eager_tensors"]) == 7  # every named intermediate lives until the function returns
    assert peak["compiled_tensors"] < peak["eager_tensors"]


# Relayout
def test_conv_outputs_are_channels_last_only_when_inductor_chooses(run_relayout):
    results = run_relayout.results
    assert results["allclose"] is True
    assert results["conv_count"] == 3
    assert results["conv_output_layouts"] == ["channels-last"] * 3
    assert results["kept_conv_layouts"] == ["NCHW (as given)"]


def test_returned_tensor_keeps_the_layout_eager_returns(run_relayout):
    strides = run_relayout.results["output_strides"]
    assert strides == sorted(strides, reverse=True) and strides[-1] == 1  # contiguous NCHW
    assert "channels-last    convolution output" in run_relayout.section("strides")


# Dead-code elimination
def test_unused_matmul_is_captured_then_eliminated(run_dead_code):
    results = run_dead_code.results
    assert results["allclose"] is True
    assert results["matmuls"] == {"dynamo": 3, "aten": 2, "generated_code": 2}
    assert results["gating1_unused_in_aten_graph"] is True
    graphs = run_dead_code.section("graphs")
    assert "unused = l_x_ @ l_gating1_" in graphs
    assert "%arg2_1 : [num_users=0]" in graphs


def test_profile_shows_three_matmuls_eager_and_two_compiled(run_dead_code):
    profile = run_dead_code.results["profile"]
    assert (profile["eager_mm_ops"], profile["compiled_mm_ops"]) == (3, 2)
    if run_dead_code.device == "cuda":
        assert (profile["eager_mm_kernels"], profile["compiled_mm_kernels"]) == (3, 2)
