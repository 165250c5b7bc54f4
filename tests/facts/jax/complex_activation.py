"""The check of snippets/jax/complex_activation.py: what eager-mode.md and optimizations.md say about it, held on
every record of it."""

from facts import check, needs_jax, timed

SIX_OPS = ["sine", "cosine", "multiply", "add", "multiply", "maximum"]


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
        # optimizations.md: the fused CPU loop calls the C library's scalar cosf and sinf (named by index
        # there), and works on vector registers around the calls. Where objdump ran.
        code = results["machine_code"]
        if code["calls"] is not None:
            assert code["libm"] == ["cosf", "sinf"], code
            assert "ymm" in code["vector_registers"] or "zmm" in code["vector_registers"], code
    if record.device == "cuda":
        # One loop fusion is one kernel; nothing else in the entry launches one.
        assert after["entry_ops"].count("fusion") == 1, after["entry_ops"]
        launch_nothing = {"fusion", "bitcast", "tuple", "get-tuple-element"}
        assert set(after["entry_ops"]) <= launch_nothing, after["entry_ops"]
        # optimizations.md: the ratio is close to the bytes' (15 passes over N values against 3), so both move
        # their bytes at about the same rate (within 10 %).
        timing = results["timing"]
        ratio = timing["eager"]["median_us"] / timing["jit"]["median_us"]
        assert abs(ratio / (15 / 3) - 1) < 0.1, ratio
