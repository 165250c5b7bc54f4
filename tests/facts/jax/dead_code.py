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
