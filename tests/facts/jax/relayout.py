"""The check of snippets/jax/relayout.py: what relayout.md says about it, held on every record of it. On the CPU
XLA moves the heads first before the dot; on the GPU (the H200 record) its Triton GEMM reads them in place."""

from facts import check, needs_jax


@check("jax/relayout.py")
def _(record):
    needs_jax(record)
    results = record.results
    before, after = results["before"], results["after"]
    assert before["batching_dims"] == "[1] x [1]", "the heads reach XLA in the middle"
    assert before["relayouts"] == [], "the program jax.jit hands over moves no data"
    assert "XLA inserted:" in record.section("after")
    assert results["allclose"]
    # Operands that arrive heads-first are never moved.
    assert results["heads_first_input"]["relayouts"] == [], "heads-first: no move"
    if record.device == "cpu":
        # After optimization: a transpose or copy, or an operand stored in another order.
        assert after["relayouts"] or after["other_layouts"], "no relayout after XLA"
        assert after["transposes"] == 2, after["relayouts"]  # q and k
        # q, heads first:
        assert "transpose -> f32[4,64,1024]" in record.section("after")
        assert after["heads_first"] and after["dot_lhs_batch_dims"] == [0]
    if record.device == "cuda":
        hlo = record.section("after")
        # No transpose, no copy, no array stored in another order: the heads stay where they are.
        assert after["relayouts"] == [] and after["other_layouts"] == [], after
        assert not after["heads_first"]
        # q and k are only reshaped, with a bitcast (no data moves): the 1024 features cut into 8 x 128.
        assert "f32[64,4,8,128]{3,2,1,0} bitcast(%q.1)" in hlo
        assert "f32[64,4,8,128]{3,2,1,0} bitcast(%k.1)" in hlo
        # The dot is a Triton GEMM fusion whose batch dimensions are the heads (1) and the 8 pieces (2),
        # read in place, contracting the last 128: one partial product per piece, f32[4,8,64,64].
        assert "/*__triton_nested_gemm_fusion*/" in hlo
        assert "lhs_batch_dims={1,2}, lhs_contracting_dims={3}" in hlo
        assert "rhs_batch_dims={1,2}, rhs_contracting_dims={3}" in hlo
        # A second fusion sums the 8 partial products (a split-K): f32[4,8,64,64] -> f32[4,64,64].
        assert "f32[4,64,64]{2,1,0} reduce(%param_0, %constant_2), dimensions={1}" in hlo
        assert "ROOT %loop_reduce_fusion = f32[4,64,64]" in hlo
