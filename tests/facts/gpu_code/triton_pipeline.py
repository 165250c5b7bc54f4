"""The check of snippets/gpu_code/triton_pipeline.py: what dissecting/triton.md and graph-mode.md say about it,
held on every record of it."""

import re

from facts import check, skip_unless_pinned

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
    else:  # triton.md: the CUDA tabs were compiled on the GPU's machine, for a named target, and never run
        assert f"on a machine with an {record.hardware}; never run" in record.results["label"]
        assert "ran on cuda:" in record.section("check")
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
            skip_unless_pinned(record, ran["reason"])
        assert ran["matmul_error"] < 5e-2 and ran["activation_error"] < 1e-4
