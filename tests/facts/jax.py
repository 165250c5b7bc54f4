"""The JAX counterparts' facts (snippets/jax/): what XLA did, read from the HLO.

JAX is an optional extra. A fresh run needs it; a committed record is only read, so its
check runs with or without JAX installed.
"""

import pytest

from facts import check, timed

SIX_OPS = ["sine", "cosine", "multiply", "add", "multiply", "maximum"]


def needs_jax(record):
    """Skip a fresh run (a record with no manifest) where JAX is not installed."""
    if not record.exists:
        reason = "JAX is an optional extra: pip install 'jax[cpu]'"
        pytest.importorskip("jax", reason=reason)


@check("jax/complex_activation.py")
def _(record):
    needs_jax(record)
    results = record.results
    assert results["before"]["elementwise_ops"] == SIX_OPS, "six ops reach XLA"
    after = results["after"]
    assert after["fusions"] == 1 and after["fusion_kinds"] == ["kLoop"], after
    assert sorted(after["fused_ops"]) == sorted(SIX_OPS), "the fusion runs all six ops"
    assert "6 element-wise ops" in record.section("before")
    assert "1 fusion (kLoop) running 6 ops" in record.section("after")
    assert results["allclose"]
    timed(results["timing"], results["timing"])
    if record.device == "cpu":
        assert after["entry_ops"] == ["fusion"], after["entry_ops"]
    if record.device == "cuda":
        # One loop fusion is one kernel; nothing else in the entry launches one.
        assert after["entry_ops"].count("fusion") == 1, after["entry_ops"]
        launch_nothing = {"fusion", "bitcast", "tuple", "get-tuple-element"}
        assert set(after["entry_ops"]) <= launch_nothing, after["entry_ops"]


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


@check("jax/relayout.py")
def _(record):
    needs_jax(record)
    results = record.results
    before, after = results["before"], results["after"]
    assert before["batching_dims"] == "[1] x [1]", "the heads reach XLA in the middle"
    assert before["relayouts"] == [], "the program jax.jit hands over moves no data"
    # After optimization: a transpose or copy, or an operand stored in another order.
    assert after["relayouts"] or after["other_layouts"], "no relayout after XLA"
    assert "XLA inserted:" in record.section("after")
    assert results["allclose"]
    if record.device == "cpu":
        assert after["transposes"] == 2, after["relayouts"]  # q and k
        # q, heads first:
        assert "transpose -> f32[4,64,1024]" in record.section("after")
        assert after["heads_first"] and after["dot_lhs_batch_dims"] == [0]
        assert results["heads_first_input"]["relayouts"] == [], "heads-first: no move"
