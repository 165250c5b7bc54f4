"""The check of snippets/dissecting/bench_compile_modes.py: what dissecting/benchmarking.md and
dissecting/regimes.md say about it, held on every record of it."""

from facts import assert_timing, check


@check("dissecting/bench_compile_modes.py")
def _(record):
    results, cuda = record.results, record.device == "cuda"
    # What each mode switches on.
    options = results["mode_options"]
    assert options["default"] == {}
    assert options["reduce-overhead"] == {"triton.cudagraphs": True}
    assert options["max-autotune"]["max_autotune"]
    assert options["max-autotune"]["triton.cudagraphs"]
    assert options["max-autotune-no-cudagraphs"]["max_autotune"]
    assert "triton.cudagraphs" not in options["max-autotune-no-cudagraphs"]

    # CUDA graphs' replay overwrites the previous output: shown on CUDA only.
    overwritten = results["cudagraph_output_overwritten"]
    pitfalls = record.section("pitfalls")
    if cuda:
        assert isinstance(overwritten, bool)
        assert "the clone taken before the next call still reads" in pitfalls
    else:
        assert overwritten is None and "need CUDA" in pitfalls

    # The SM check of max-autotune's GEMM templates.
    assert results["min_sms"] == 68
    if cuda:
        assert results["is_big_gpu"] == (results["sms"] >= 68)
        assert results["sm_warning"] == (not results["is_big_gpu"])
        assert f"{results['sms']} SMs; is_big_gpu: {results['is_big_gpu']}" in \
            record.section("sms")
    else:
        assert results["sms"] is None and results["is_big_gpu"] is None
        assert "only apply to max-autotune on CUDA" in record.section("sms")

    # The modes timed, per device; each with the site's method.
    if cuda:
        sizes, modes = [100, 2048], ["default", "reduce-overhead", "max-autotune"]
    else:
        sizes, modes = [100], ["default", "max-autotune-no-cudagraphs"]
    assert results["sizes"] == sizes and results["timed_modes"] == modes
    for n in map(str, sizes):
        assert list(results["timing"][n]) == ["eager", *modes]
        for timing in results["timing"][n].values():
            assert_timing(timing)
        assert all(results["compile_s"][n][mode] > 0 for mode in modes)
        assert set(results["matmul"][n]) == set(modes)
        # Without max-autotune, the matmul is always left to the vendor library.
        assert results["matmul"][n]["default"] == "extern mm"
    printed = record.section("timings")
    assert ("reduce-overhead" in printed) == cuda
    # Compile times compare modes: nothing cached between them, and each mode's compile wrote its
    # kernels into an empty cache folder of its own.
    assert results["caches"] == {"fx_graph": False, "aot_autograd": False, "autotune": False,
                                 "kernels": "an empty folder per mode"}
    assert "caches: FX graph, AOTAutograd and autotune off" in printed
    for n in map(str, sizes):
        assert set(results["kernel_cache_files"][n]) == set(modes)
        assert all(count > 0 for count in results["kernel_cache_files"][n].values())
