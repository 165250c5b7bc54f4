"""The check of snippets/jax/dead_code.py: what optimizations.md says about it, held on every record of it."""

from facts import check, needs_jax, timed


@check("jax/dead_code.py")
def _(record):
    needs_jax(record)
    results = record.results
    assert results["traced_matmuls"] == 3, "JAX traces the unused matmul"
    # By default jax.jit drops it (and the unused argument) before XLA sees the program;
    # with keep_unused=True all three matmuls reach XLA, which removes the dead one.
    assert results["lowered_matmuls"] == {"default": 2, "keep_unused": 3}
    before = record.section("before")
    assert "2 matmuls, 3 arguments reach XLA" in before
    assert "3 matmuls, 4 arguments reach XLA" in before
    assert results["compiled_matmuls"] == 2, "XLA removed the dead matmul"
    assert results["gating1_used"] is False
    assert "matmuls after optimization: 2" in record.section("after")
    assert results["allclose"]
    timed(results["timing"], results["timing"])
    if record.device == "cuda":
        # dead-code.md and guide.md: the three matmuls do the same FLOPs (512 x 2048 x 4096 each), so dropping
        # one saves at most a third of eager's matmul time; jit saves more than two thirds of eager's time
        # (a ratio above 3), so most of the saving is not the dropped matmul.
        assert "x (512, 2048), gating0 and gating1 (2048, 4096), linear (4096, 2048)" in record.section("mlp")
        timing = results["timing"]
        assert timing["eager"]["median_us"] / timing["jit"]["median_us"] > 3, timing
        # dead-code.md: on the GPU the two matmuls left are cuBLASLt calls; the relu has no instruction of its
        # own in the entry computation (it rides on the first call), and the second matmul is split in two
        # along its 4,096-long contraction, a Triton reduce fusion adding the halves.
        after = record.section("after")
        entry = after[after.index("ENTRY"):]
        assert entry.count('custom_call_target="__cublas$lt$matmul"') == 2, entry
        assert "maximum" not in entry and "relu" not in entry
        assert "bf16[2,2048,2048]{2,1,0} bitcast(%linear.1)" in entry
        assert "f32[2,512,2048]" in entry
        assert "ROOT %loop_reduce_fusion = bf16[512,2048]" in entry and "/*__triton*/" in entry
