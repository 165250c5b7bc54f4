"""The check of snippets/graph_mode/triton_linear_relu.py: what graph-mode.md says about it, held on every record
of it."""

from facts import check, timed


@check("graph_mode/triton_linear_relu.py")
def _(record):
    check = record.results["check"]
    assert check["match"] and check["max_error"] <= check["tolerance"]
    if record.device == "cuda":
        assert not check["interpreted"]
        pipeline = record.results["pipeline"]
        for stage in ("ttir", "ttgir", "llir", "ptx", "sass"):
            assert pipeline[stage]["matches"] >= 1, f"no matmul found in the {stage} stage"
        assert pipeline["shared_bytes"] > 0
        if record.environment.get("compute_capability") == "9.0":  # inductor-and-triton.md: Hopper's wgmma
            assert pipeline["ttgir"]["first"].split(" = ")[1].startswith("ttng.warp_group_dot"), pipeline
            assert pipeline["ptx"]["first"].startswith("wgmma.mma_async"), pipeline
            assert pipeline["sass"]["first"].startswith("HGMMA."), pipeline
        timed(record.results["timing"], ("eager", "compiled", "triton"))
    else:
        assert check["interpreted"] and (check["m"], check["n"], check["k"]) == (256, 256, 256)
        assert record.results["pipeline"] == {}
        assert "made when triton compiles" in record.section("pipeline")
