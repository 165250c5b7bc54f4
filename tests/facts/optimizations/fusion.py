"""The check of snippets/optimizations/fusion.py: what dissecting/regimes.md, dissecting/triton.md, eager-mode.md
and optimizations.md say about it, held on every record of it."""

from facts import check, timed

from scripts import measures

SIX_OPS = ["aten::sin", "aten::cos", "aten::mul", "aten::add", "aten::mul", "aten::relu"]


@check("optimizations/fusion.py")
def _(record):
    results = record.results
    assert results["allclose"] is True
    assert "compiled == eager: True" in record.section("compile")
    # The page: the largest difference is at most two ULP of the largest output, and the outputs reach past
    # 10 (on the CPU the whole difference comes from sin and cos: eager's MKL against Inductor's Sleef).
    assert "ULP of the largest output" in record.section("compile")
    if record.device == "cpu":
        assert 0 <= results["max_error_ulps"] <= 2, results["max_error_ulps"]
        assert results["largest_output"] > 10, results["largest_output"]

    # Six eager ops; the compiled call runs one generated kernel and no aten op.
    eager, compiled = results["profile"]["eager"], results["profile"]["compiled"]
    assert eager["ops"] == SIX_OPS, eager["ops"]
    assert compiled["op_count"] == 0, compiled["ops"]
    assert compiled["kernel_count"] == 1, compiled["kernels"]
    assert "compiled: 0 aten ops" in record.section("profile")
    assert set(results["traces"]) == {"eager", "compiled"}
    for name in ("eager", "compiled"):
        assert record.file(f"traces.{name}.trace.json").exists()
    if record.device == "cuda":
        assert eager["kernel_count"] == 6, eager["kernels"]
        assert compiled["kernels"][0].startswith("triton_poi_fused_")
    else:
        assert eager["kernel_count"] == 0
        assert compiled["kernels"] == ["graph_N_cpp_fused_add_cos_mul_relu_sin_0"]

    # The lesson in bytes: 15 passes against 3, on tensors at least 4x the last-level cache of the machine
    # that made the record (the page says every pass goes to DRAM), so the copy it is set against is a DRAM
    # figure too. A fresh run in the suite says nothing of the page's machine: some test machines of this
    # project report a 480 MiB L3.
    assert results["passes"] == {"eager": 15, "compiled": 3, "copy": 2}
    assert results["n"] == (64 * 2**20 if record.device == "cuda" else 32 * 2**20)
    env = record.environment
    llc = env.get("gpu_l2_bytes") if record.device == "cuda" else (env.get("caches") or {}).get("llc_bytes")
    if llc and record.committed:
        assert results["tensor_mib"] * 2**20 >= 4 * llc, (results["tensor_mib"], llc)
    assert "eager moves 5x the bytes" in record.section("timing")
    timed(results["timing"], ("eager", "compiled", "copy"))
    for name in ("eager", "compiled", "copy"):
        assert results["bandwidth_gbps"][name] > 0
    assert results["share_of_copy"]["copy"] == 1
    if record.device == "cuda" and record.committed:
        # inductor-cuda.md: the fused kernel moved its bytes at about a copy's rate, so sin and cos did not
        # hold it back (DESIGN.md's mark for it: 85 % of the copy's bandwidth).
        assert results["share_of_copy"]["compiled"] >= 0.85, results["share_of_copy"]

    # Preallocated outputs: the same six ops with no allocation, counted in page faults.
    faults = results["page_faults"]
    assert set(faults) == {"eager", "eager_out", "compiled", "compiled_out"}, faults
    assert all(n >= 0 for n in faults.values()), faults
    timed(results["timing_out"], ("eager", "eager_out", "compiled", "compiled_out"))
    if record.device == "cpu":
        # The page's CPU story: fresh outputs fault their pages in, one output's worth for the compiled call
        # and six for eager; with outputs allocated once, neither faults.
        assert faults["eager_out"] == 0 and faults["compiled_out"] == 0, faults
        assert faults["eager"] > 5 * faults["compiled"] > 0, faults
        # The page says allocation was most of both: a claim about the record it shows, made from timings, so
        # it holds on committed records only. A fresh run on a loaded test machine measured 0.50 for the
        # compiled call (CI, stop 36): a timing is never a test's pass/fail.
        if record.committed:
            assert min(results["allocation_share"].values()) > 0.5, results["allocation_share"]
            # The home page's caption: on this CPU most of what compiling saves is allocation, the rest
            # traffic. Saved by allocating once: eager's allocation cost less the compiled call's.
            t = {name: m["median_us"] for name, m in results["timing_out"].items()}
            allocation = (t["eager"] - t["eager_out"]) - (t["compiled"] - t["compiled_out"])
            traffic = t["eager_out"] - t["compiled_out"]
            assert allocation > traffic > 0, (allocation, traffic)
    assert "page faults per call" in record.section("outputs")
    if record.device == "cuda" and record.committed:
        # optimizations.md: on the GPU the compiled call into a preallocated output did not gain, and its
        # processes spread wider than any other timing of the record.
        out = results["timing_out"]
        gain = measures.judge(out["compiled"], out["compiled_out"], record.device)
        assert measures.direction(gain) <= 0, out["compiled_out"]
        # ... timed one call per block, the plain compiled call in blocks of many.
        assert measures.calls_per_block(out["compiled_out"]) == 1 < measures.calls_per_block(out["compiled"])
        others = [t for group in ("timing", "timing_out") for name, t in results[group].items()
                  if not (group == "timing_out" and name == "compiled_out")]
        assert measures.process_spread(out["compiled_out"]) > max(measures.process_spread(t) for t in others)

    # One fused kernel, handed to async_compile; on CPU a vectorized loop, not unrolled.
    kernel = results["kernel"]
    assert kernel["count"] == 1 and len(kernel["names"]) == 1, kernel
    source = record.section("kernel")
    assert source.count("load") >= 2  # reads x and y once each
    if record.device == "cuda":
        assert kernel["names"] == ["triton_poi_fused_add_cos_mul_relu_sin_0"]
        assert "def triton_poi_fused_add_cos_mul_relu_sin_0(" in source
        assert "tl.store" in source
    else:
        assert kernel["names"] == ["cpp_fused_add_cos_mul_relu_sin_0"]
        assert 'extern "C"' in source and ".sin()" in source and "clamp_min" in source
        assert kernel["vector_bits"] == 32 * kernel["vector_step"]
        assert f"x0+=static_cast<int64_t>({kernel['vector_step']}L)" in source
        assert kernel["unroll_in_source"] is False
