"""The check of snippets/jax/relayout.py: what optimizations.md says about it, held on every record of it."""

from facts import check, needs_jax


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
