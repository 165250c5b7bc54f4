"""The check of snippets/dissecting/regimes.py: what dissecting/regimes.md says about it, held on every record of
it."""

import statistics

import pytest
from facts import MIN_TIMINGS, check, per_process


@check("dissecting/regimes.py")
def _(record):
    results = record.results
    counts, intensity = results["counts"], results["intensity"]
    # Counted, not measured: one FLOP and 12 bytes per value for x + y; six element-wise ops
    # moving 15 values per output value eagerly, 3 fused; 2*N^3 FLOPs for the matmul.
    assert [op["op"] for op in counts["add"]["ops"]] == ["add"]
    assert intensity["add"]["eager"] == pytest.approx(1 / 12)
    assert [op["op"] for op in counts["complex_activation"]["ops"]] == ["sin", "cos", "mul", "add", "mul", "relu"]
    assert intensity["complex_activation"]["eager"] == pytest.approx(0.1)
    assert intensity["complex_activation"]["fused"] == pytest.approx(0.5)
    assert results["bytes_ratio"]["complex_activation"] == pytest.approx(5.0)
    assert [op["op"] for op in counts["linear_relu"]["ops"]] == ["mm", "add", "relu"]
    n = 8192 if record.device == "cuda" else 1024
    assert counts["matmul"]["flops"] == 2 * n**3
    # The ordering the page draws: element-wise far below the GEMMs.
    assert (intensity["add"]["eager"] < intensity["complex_activation"]["eager"]
            < intensity["complex_activation"]["fused"] < intensity["linear_relu"]["eager"]
            < intensity["matmul"]["eager"])
    # The sweep and the roofs, each timed by the site's method.
    sweep = results["sweep"]
    assert sweep["sizes"][0] == 16 and sweep["sizes"] == sorted(sweep["sizes"])
    assert len(sweep["timing"]) == len(sweep["sizes"]) == len(sweep["gbps"])
    assert all(t["n"] >= MIN_TIMINGS for t in sweep["timing"])
    assert sweep["within_twice_up_to"] in sweep["sizes"]
    assert all(results["timing"][k]["n"] >= MIN_TIMINGS for k in ("copy", "add", "add_tiny", "matmul"))
    assert results["copy_gbps"] > 0 and results["matmul_tflops"] > 0
    # In each process, the ridge is where its two measured roofs meet; the record keeps the median of each.
    ridges, tflops, gbps = (per_process(record, key) for key in ("ridge", "matmul_tflops", "copy_gbps"))
    count = max(map(len, (ridges, tflops, gbps)))
    ridges, tflops, gbps = (values * count if len(values) == 1 else values for values in (ridges, tflops, gbps))
    assert all(r == pytest.approx(t * 1e3 / g) for r, t, g in zip(ridges, tflops, gbps))
    assert results["ridge"] == pytest.approx(statistics.median(ridges))
    for key, count in (("roofline", 4), ("regimes_roofline", 3)):
        roofline = results[key]
        assert roofline["bandwidth_gbps"] == results["copy_gbps"]
        assert roofline["peak_tflops"] == results["matmul_tflops"]
        assert "measured" in roofline["label"]
        points = roofline["points"]
        assert len(points) == count
        assert all(set(p) == {"label", "intensity", "tflops", "measured"} and p["measured"] for p in points)
        assert all(p["intensity"] > 0 and p["tflops"] > 0 for p in points)
    # The gain at the roof (every kernel, eager and fused, at this machine's roofs): six memory-bound ops fused
    # into one gain 60/12 = 5x there; the matmul example at most its byte ratio, less where the GEMM dominates.
    chapters = results["chapters"]
    assert chapters["complex_activation"]["fusion_bound"] == pytest.approx(5.0)
    assert 1 <= chapters["linear_relu"]["fusion_bound"] < chapters["complex_activation"]["fusion_bound"]
    # Inductor's default (library GEMM, then one kernel) gains less than the epilogue inside the GEMM.
    linear = chapters["linear_relu"]
    assert 1 <= linear["library_gemm_fusion_bound"] <= linear["fusion_bound"]
    assert linear["fused_bound_us"] <= linear["library_gemm_bound_us"] <= linear["eager_bound_us"]
    for name in chapters:
        assert set(chapters[name]["timing"]) == {"eager", "compiled"}
        assert all(t["n"] >= MIN_TIMINGS for t in chapters[name]["timing"].values())
    assert "FLOP/byte" in record.section("intensity") and "ridge point" in record.section("roofs")
    assert "a gain at the roof of" in record.section("roofline")
    # Max-autotune: what the CPU can and cannot show.
    autotune = results["autotune"]
    assert autotune["mode_options"]["max_autotune"] is True
    assert autotune["matches_eager"] is True
    assert set(autotune["launches"]) == {"default", "max_autotune"}
    assert all(autotune["launches"].values())
    assert autotune["benchmarked"] and all(len(choices) >= 2 for choices in autotune["benchmarked"].values())
    for op, choices in autotune["benchmarked"].items():
        assert autotune["winners"][op] == min(choices, key=choices.get)
    library = ("extern_kernels", "torch.ops")
    assert autotune["template_won"] == (not any(k.startswith(library) for k in autotune["launches"]["max_autotune"]))
    assert set(autotune["timing"]) == {"default", "max_autotune"}
    assert "is_big_gpu()" in record.section("autotune")
    if record.device == "cpu":
        assert autotune["is_big_gpu"] is False
        assert "ran" not in autotune
    else:
        assert isinstance(autotune["is_big_gpu"], bool)
        assert set(autotune["ran"]) == {"default", "max_autotune"} and all(autotune["ran"].values())
        if autotune["is_big_gpu"]:
            # Triton GEMM templates were among the choices Inductor benchmarked.
            assert any(c.startswith("triton_") for cs in autotune["benchmarked"].values() for c in cs)
