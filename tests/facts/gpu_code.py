"""GPU code made without a GPU: Triton's stages for three targets, Inductor's CUDA code, and a
memory-traffic model. Structure only (an instruction is there, a count holds), never exact text:
the text drifts between triton and torch releases."""

import re
from pathlib import Path

import pytest

from facts import check

PINS = dict(line.split("==") for line in
            (Path(__file__).resolve().parents[2] / "ci" / "constraints.txt").read_text().splitlines()
            if "==" in line and not line.startswith("#"))


def skip_unless_pinned(record, reason):
    """A caught failure of private compiler API is a skip on other releases (said why), and a failure on
    the releases CI pins, where it must work."""
    env = record.environment
    if env.get("torch", "").split("+")[0] == PINS.get("torch") and env.get("triton") == PINS.get("triton"):
        pytest.fail(f"{record.where()}: {reason}, on the pinned torch {PINS['torch']} / triton {PINS['triton']}")
    pytest.skip(reason)

TARGETS = {"sm_80": ("sm_80", "mma.sync", "HMMA.16816"),
           "sm_90": ("sm_90a", "wgmma.mma_async", "HGMMA."),
           "sm_100": ("sm_100a", "tcgen05.mma", "UTC")}


@check("gpu_code/triton_pipeline.py")
def _(record):
    builds = record.results["builds"]
    assert set(builds) == {"matmul_bias_relu", "complex_activation"}
    for target, (ptx_target, ptx_op, sass_op) in TARGETS.items():
        for hints in ("hints", "no_hints"):
            mm = builds["matmul_bias_relu"][target][hints]
            assert mm["ptx_target"] == ptx_target, (target, mm["ptx_target"])
            assert mm["matrix_ptx"] and mm["matrix_ptx"].startswith(ptx_op), (target, mm["matrix_ptx"])
            assert mm["matrix_sass"] and mm["matrix_sass"].startswith(sass_op), (target, mm["matrix_sass"])
            assert "never run" in mm["label"] and target in mm["label"]
            for name in builds:
                build = builds[name][target][hints]
                assert isinstance(build["registers"], int) and 0 < build["registers"] <= 255
                assert build["shared_bytes"] >= 0 and build["sass_instructions"] > 0
        with_hints = builds["matmul_bias_relu"][target]["hints"]
        without = builds["matmul_bias_relu"][target]["no_hints"]
        # The alignment hints turn scalar 16-bit loads into 16-byte asynchronous copies
        # (LDGSTS.E.BYPASS.128; triton 3.9 adds a cache hint for sm_80: ...LTC128B.128).
        assert any(op.startswith("LDGSTS.E.BYPASS") and op.endswith(".128")
                   for op in with_hints["loads"]), with_hints["loads"]
        assert "LDG.E.U16" not in with_hints["loads"]
        assert without["loads"].get("LDG.E.U16", 0) > 0, without["loads"]
        assert not any(op.startswith("LDGSTS") for op in without["loads"])
        assert with_hints["registers"] < without["registers"]
        assert with_hints["shared_bytes"] > 0
        act = builds["complex_activation"][target]
        assert act["hints"]["loads"].get("LDG.E.128", 0) > 0, act["hints"]["loads"]
        assert "LDG.E.128" not in act["no_hints"]["loads"], act["no_hints"]["loads"]
    # triton.md: three stages of a 128 x 64 and a 64 x 128 fp16 tile. mma.sync (sm_80) takes its operands
    # through registers, so S - 1 buffers; wgmma and tcgen05.mma read shared memory as they run, so S.
    stage = (128 * 64 + 64 * 128) * 2
    mm = {target: builds["matmul_bias_relu"][target]["hints"] for target in TARGETS}
    assert mm["sm_80"]["shared_bytes"] == 2 * stage, mm["sm_80"]["shared_bytes"]
    for target in ("sm_90", "sm_100"):
        assert 3 * stage <= mm[target]["shared_bytes"] < 4 * stage, (target, mm[target]["shared_bytes"])
    # Four tcgen05 products of K = 16 per 64-wide step: the peeled first step and the loop body.
    assert mm["sm_100"]["matrix_sass_count"] == 2 * (64 // 16)
    if record.device == "cpu":
        assert "without a GPU" in record.results["label"]
    # The stages, as files, with the instruction each page excerpt points at.
    sm90 = "matmul_bias_relu.sm_90"
    assert "tt.dot" in record.file(f"{sm90}.ttir").read_text()
    assert re.search(r"warp_group_dot", record.file(f"{sm90}.ttgir").read_text())
    assert "wgmma" in record.file(f"{sm90}.llir").read_text()
    assert re.search(r"^\.target sm_90a", record.file(f"{sm90}.ptx").read_text(), re.M)
    assert "HGMMA" in record.file(f"{sm90}.sass").read_text()
    assert "HMMA.16816" in record.file("matmul_bias_relu.sm_80.sass").read_text()
    assert "UTCHMMA" in record.file("matmul_bias_relu.sm_100.sass").read_text()
    for stage in ("ttir", "ttgir", "llir", "ptx", "sass"):  # each excerpt marks its lines
        assert "→" in record.section(stage) and "sm_90" in record.section(stage)
    assert "HGMMA" in record.section("sass") and "wgmma.mma_async" in record.section("ptx")
    assert "HMMA.16816" in record.section("matrix") and "UTCHMMA" in record.section("matrix")
    # The kernels themselves, run on a GPU or in the interpreter, match torch.
    ran = record.results["check"]
    if record.device == "cuda" or ran["interpreted"]:
        if not ran["ran"]:
            pytest.skip(ran["reason"])
        assert ran["matmul_error"] < 5e-2 and ran["activation_error"] < 1e-4


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


@check("gpu_code/memory_model.py")
def _(record):
    model = record.results["model"]
    act = model["complex_activation"]
    n = 64 * 2**20
    assert [op["op"] for op in act["ops"]] == ["sin", "cos", "mul", "add", "mul", "relu"]
    assert act["fused_bytes"] == 3 * n * 4 and act["eager_bytes"] == 15 * n * 4
    assert act["h100"]["memory_bound"] and act["h200"]["memory_bound"]
    assert act["h100"]["speedup"] == pytest.approx(5.0)
    # A published 4.8 TB/s against 3.35 TB/s: the memory-bound bound shrinks by that ratio.
    assert act["h100"]["fused_us"] / act["h200"]["fused_us"] == pytest.approx(4800 / 3350)
    # Linear + ReLU: the epilogue inside the GEMM bounds the gain at 3.3x; a library GEMM and one kernel
    # after it (Inductor's default), at less.
    for gpu in ("h100", "h200"):
        linear = model["linear_relu"][gpu]
        assert 1 < linear["library_gemm_speedup"] < linear["speedup"]
        assert linear["fused_us"] < linear["library_gemm_us"] < linear["eager_us"]
    big = model["matmul_softmax_4096"]
    assert big["flops"] >= 2 * 4096**3  # FlopCounterMode's 2*N^3 for the matmul
    assert big["h100"]["speedup"] < 1.1  # GEMM-heavy: fusion cannot buy much
    roofline = record.results["roofline"]
    assert roofline["label"] == "H100 SXM (published)"
    assert roofline["bandwidth_gbps"] == 3350.0 and roofline["peak_tflops"] == 989.0
    points = roofline["points"]
    assert points and all(set(p) == {"label", "intensity", "tflops", "measured"} for p in points)
    for point in points:
        assert point["intensity"] > 0 and point["tflops"] > 0
        if not point["measured"]:
            assert point["tflops"] <= roofline["peak_tflops"]
            assert point["tflops"] <= roofline["bandwidth_gbps"] * point["intensity"] / 1000 * (1 + 1e-9)
    assert any(p["measured"] for p in points) == (record.device == "cuda")
    assert "model" in record.results["label"]
