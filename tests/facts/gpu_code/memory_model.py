"""The check of snippets/gpu_code/memory_model.py: what dissecting/regimes.md and dissecting/inductor-cuda.md say about
it, held on every record of it."""

import re

import pytest
from facts import check

from scripts import measures, records


@check("gpu_code/memory_model.py")
def _(record):
    model = record.results["model"]
    act = model["complex_activation"]
    n = 64 * 2**20
    assert [op["op"] for op in act["ops"]] == ["sin", "cos", "mul", "add", "mul", "relu"]
    assert act["fused_bytes"] == 3 * n * 4 and act["eager_bytes"] == 15 * n * 4
    assert act["h100"]["memory_bound"] and act["h200"]["memory_bound"]
    assert act["h100"]["speedup"] == pytest.approx(5.0)
    assert "5.00x at the roof" in record.section("bounds") and "at most 5" not in record.section("bounds")
    # A published 4.8 TB/s against 3.35 TB/s: the memory-bound bound shrinks by that ratio.
    assert act["h100"]["fused_us"] / act["h200"]["fused_us"] == pytest.approx(4800 / 3350)
    # Linear + ReLU: the gain at the roof is 3.3x with the epilogue inside the GEMM; with a library GEMM and one
    # kernel after it (Inductor's default), less. A ratio of two lower bounds, not a limit on a measured gain.
    for gpu in ("h100", "h200"):
        linear = model["linear_relu"][gpu]
        assert 1 < linear["library_gemm_speedup"] < linear["speedup"]
        assert linear["fused_us"] < linear["library_gemm_us"] < linear["eager_us"]
    big = model["matmul_softmax_4096"]
    assert big["flops"] >= 2 * 4096**3  # FlopCounterMode's 2*N^3 for the matmul
    assert big["h100"]["speedup"] < 1.1  # GEMM-heavy: fusion's gain at the roof is small
    roofline = record.results["roofline"]
    assert roofline["label"] == "H100 SXM (published)"
    assert roofline["bandwidth_gbps"] == 3350.0 and roofline["peak_tflops"] == 989.0
    points = roofline["points"]
    assert points and all(set(p) == {"label", "intensity", "tflops", "measured"} for p in points)
    for point in points:
        assert point["intensity"] > 0 and point["tflops"] > 0
        if not point["measured"]:
            assert point["tflops"] <= roofline["peak_tflops"]
            assert point["tflops"] <= roofline["bandwidth_gbps"] * point["intensity"] / 1000 * (1 + 1e-9)
    assert any(p["measured"] for p in points) == (record.device == "cuda")
    assert "model" in record.results["label"]
    # inductor-cuda.md: the roofs drawn are the H100's; the H200 has its peak rates and faster memory.
    specs = record.results["specs"]
    assert specs["h200"]["tflops"] == specs["h100"]["tflops"], specs
    assert specs["h200"]["bandwidth_gbps"] > specs["h100"]["bandwidth_gbps"], specs
    compiles = record.results.get("compiles", {})
    if record.device != "cuda":
        assert compiles == {}, compiles  # nothing timed, nothing compiled
    if record.device == "cuda":  # each example timed eager and compiled, and drawn as a measured point
        assert set(record.results["timing"]) == set(model), record.results["timing"].keys()
        # regimes.md: each example's compiled side is the function compiled once, for the static shapes it was
        # timed at. Dynamo's cache belongs to the function's code, not to a torch.compile wrapper, so without the
        # reset between examples matmul_softmax's second size would recompile with symbolic sizes (s77, ...).
        assert set(compiles) == set(model), f"the compiles of each timed example: {sorted(compiles)}"
        for name, frames in compiles.items():
            work = record.results["timing"][name]["compiled"]["work"]
            function, inputs = re.fullmatch(r"compiled (\w+)\((.*)\)", work).groups()
            shapes = [[int(n) for n in dims.split(", ") if n] for dims in re.findall(r"\[([^]]*)\]", inputs)]
            assert [f["function"] for f in frames] == [function], (name, frames)
            (frame,) = frames
            assert frame["recompile_reason"] is None, (name, frame)
            assert frame["inputs"] == shapes, f"{name}: compiled for {frame['inputs']}, timed at {shapes}"
        assert sum(p["measured"] for p in points) == 2 * len(model)
        # A circle sits at its square's intensity (the model's bytes): eager's at eager's, compiled's at fused's.
        measured = {p["label"]: p for p in points if p["measured"]}
        for name, entry in model.items():
            assert measured[f"{name}, eager on the GPU"]["intensity"] == entry["eager_intensity"]
            assert measured[f"{name}, compiled on the GPU"]["intensity"] == entry["fused_intensity"]
        # The H200's memory is faster than the H100 roofs drawn: eager's activation circle sits above its roof.
        if "H200" in record.hardware:
            eager_act = measured["complex_activation, eager on the GPU"]
            assert eager_act["tflops"] > roofline["bandwidth_gbps"] * eager_act["intensity"] / 1000
            # inductor-cuda.md: the compiled activation's circle sits below the drawn (H100) memory roof all the
            # same, short of the H200's bandwidth.
            fused_act = measured["complex_activation, compiled on the GPU"]
            assert fused_act["tflops"] < roofline["bandwidth_gbps"] * fused_act["intensity"] / 1000
        # At 100 x 100 the calls take far longer than either bound: microseconds against < 0.1 us.
        small = record.results["timing"]["matmul_softmax_100"]
        assert max(model["matmul_softmax_100"][gpu]["eager_us"] for gpu in ("h100", "h200")) < 0.1
        assert min(small[kind]["median_us"] for kind in ("eager", "compiled")) > 1
        if record.committed:
            # regimes.md and inductor-cuda.md: there the model predicts a gain at the roof, and compiled came out
            # slower.
            assert model["matmul_softmax_100"]["h200"]["speedup"] > 1, model["matmul_softmax_100"]
            assert measures.direction(measures.judge(small["eager"], small["compiled"], record.device)) < 0, small
            # The pages: this record timed its calls one per block in every process, but 4096's eager side in
            # blocks of many in some processes and of one in others.
            for name, sides in record.results["timing"].items():
                for kind, timing in sides.items():
                    blocks = measures.blocks_per_process(timing)
                    if name == "matmul_softmax_4096" and kind == "eager":
                        assert 1 in blocks and any(b and b > 1 for b in blocks), blocks
                    else:
                        assert blocks and set(blocks) == {1}, (name, kind, blocks)
            # guide.md: the same work, two numbers. The same release's records of fusion.py and
            # eager_cannot_fuse.py timed the same functions at the same sizes on the same GPU; the ratios differ,
            # and this record's compiled activation spread far wider between its processes.
            for snippet, key, ours in (("optimizations/fusion.py", "timing", "complex_activation"),
                                       ("graph_mode/eager_cannot_fuse.py", "timing", "linear_relu")):
                same = [r for r in records.releases_of(snippet, "cuda") if r.release == record.release
                        and r.hardware == record.hardware]
                if not same:
                    continue
                theirs, mine = same[0].results[key], record.results["timing"][ours]
                assert theirs["compiled"]["work"] == mine["compiled"]["work"], (theirs["compiled"], mine["compiled"])
                assert measures.calls_per_block(theirs["compiled"]) > 1  # blocks of many there
                ratio_theirs = measures.timing_band(theirs["eager"], theirs["compiled"])[0]
                ratio_mine = measures.timing_band(mine["eager"], mine["compiled"])[0]
                assert ratio_theirs > 1.25 * ratio_mine, (snippet, ratio_theirs, ratio_mine)
                if ours == "complex_activation":
                    assert (measures.process_spread(mine["compiled"])
                            > 10 * (measures.process_spread(theirs["compiled"]) - 1) + 1), ours
