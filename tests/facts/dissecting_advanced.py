"""Facts of the deeper Dissecting pages: compute, memory and overhead (with max-autotune), a compiled
training step, and Triton from first principles. Structure only: counts, orderings of counted
quantities, errors against torch, what the compiler wrote; never a comparison of two timings."""

import pytest

from facts import MIN_TIMINGS, check


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
    assert results["ridge"] == pytest.approx(results["matmul_tflops"] * 1e3 / results["copy_gbps"])
    for key, count in (("roofline", 4), ("regimes_roofline", 3)):
        roofline = results[key]
        assert roofline["bandwidth_gbps"] == results["copy_gbps"]
        assert roofline["peak_tflops"] == results["matmul_tflops"]
        assert "measured" in roofline["label"]
        points = roofline["points"]
        assert len(points) == count
        assert all(set(p) == {"label", "intensity", "tflops", "measured"} and p["measured"] for p in points)
        assert all(p["intensity"] > 0 and p["tflops"] > 0 for p in points)
    # The bound on what fusion can gain, from this machine's roofs: six memory-bound ops fused into one
    # gain at most 60/12 = 5x; the matmul example at most its byte ratio, less where the GEMM dominates.
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
    assert "fusion can gain at most" in record.section("roofline")
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


@check("dissecting/training_step.py")
def _(record):
    results = record.results
    # Functionalization: in-place ops become their out-of-place twins; a mutated input is written back
    # with one copy_ at the end.
    functionalize = results["functionalize"]
    assert functionalize["traced_in_place"] == ["relu_", "add_"]
    assert functionalize["functional_in_place"] == ["copy_"]
    assert functionalize["functional_ops"] == ["mul", "relu", "add", "add", "copy_"]
    assert "relu_.default" in record.section("functionalize")
    # Two Dynamo graphs (the step breaks at loss.backward()): the model with its loss, and the optimizer.
    assert results["dynamo_graphs"][0] == ["linear", "relu", "layer_norm", "linear", "mse_loss"]
    # One add_ per parameter. torch 2.13 folds the learning rate into add_'s alpha; 2.11 traces a mul
    # before each add_ (training.md says so).
    optimizer_graph = results["dynamo_graphs"][1]
    assert optimizer_graph.count("add_") == 4 and set(optimizer_graph) <= {"add_", "mul"}, optimizer_graph
    assert "Dynamo graphs: 2" in record.section("step")
    # The optimizer's in-place updates, functionalized: four add, no in-place op left in the graph.
    optimizer = results["optimizer"]
    assert optimizer["dynamo_in_place"] == ["add_"] * 4
    functional = optimizer["functional_ops"]
    assert optimizer["functional_in_place"] == [] and functional.count("add") == 4
    assert set(functional) <= {"add", "mul"} and functional.count("mul") == optimizer_graph.count("mul")
    # The joint graph holds both passes; the partitioner cuts it into the two graphs.
    joint = record.section("joint")
    assert "tangents_1" in joint and "\nbw  " in joint and joint.startswith("fw  ")
    assert len(results["joint_ops"]) >= len(results["backward_ops"])
    assert "addmm" in results["forward_ops"] and "mm" in results["backward_ops"]
    for key in ("joint", "forward", "backward", "optimizer"):
        assert record.file(results["graphs"][key]["fxgraph"]).read_text().startswith("graph")
    # Min-cut saves fewer tensors, and fewer bytes, than the default partitioner; Inductor keeps what
    # min-cut keeps.
    count, size = results["saved_count"], results["saved_bytes"]
    # New activation memory: what forward made, less inputs, parameters, their views and aliases.
    new = results["new_activation_bytes"]
    assert 0 < new["min_cut"] < new["default"] and new["default"] < size["default"]
    assert new["min_cut"] <= size["min_cut"]
    assert "alias" not in results["new_activations"]["default"]
    assert not any(name.startswith("primals") or name.startswith("permute")
                   for names in results["new_activations"].values() for name in names)
    assert results["new_activation_ratio"] == new["default"] / new["min_cut"]
    assert count["min_cut"] < count["default"] and size["min_cut"] < size["default"]
    if record.device == "cpu":
        assert results["autograd_saved_count"]["inductor"] == count["min_cut"]
    else:
        assert results["autograd_saved_count"]["inductor"] < count["default"]
    assert results["autograd_saved_count"]["eager"] >= count["min_cut"]
    # Min-cut keeps the ReLU's mask (one byte a value), not its fp32 output.
    mask = results["min_cut_mask"]
    assert mask["dtype"] == "bool" and mask["shape"] == [64, 128] and mask["bytes"] == 64 * 128
    assert "relu" in [s["name"] for s in results["saved"]["default"]]
    assert "relu" not in [s["name"] for s in results["saved"]["min_cut"]]
    assert results["op_count"]["dynamo_graphs"] == 2
    partitioners = record.section("partitioners")
    assert f"min-cut  saves {count['min_cut']} tensors" in partitioners
    # The compiled steps compute what eager computes.
    assert results["weights_match"] == {"default": True, "min_cut": True}
    assert results["loss"]["compiled"] == pytest.approx(results["loss"]["eager"], rel=1e-5)


@check("dissecting/triton_basics.py")
def _(record):
    results = record.results
    if record.device == "cpu":
        assert results["ran"] == "Triton's interpreter on the CPU"
        assert "without a GPU; never run" in results["label"]
    # The kernels, run on a GPU or in the interpreter, match torch.
    assert results["add"]["programs"] == 97 and results["add"]["max_error"] <= 1e-6
    assert results["who"] == [0, 0, 0, 0, 1, 1, 1, 1, 2, 2]
    assert results["softmax"]["block_size"] == 1024
    assert results["softmax"]["max_error"] < 1e-5 and results["persistent"]["max_error"] < 1e-5
    assert "max error against torch" in record.section("add_run")
    # num_warps: the TTGIR carries the number asked for, and the layout spreads 1024 values over
    # 32 * num_warps threads.
    warps = results["warps"]
    assert set(warps) == {"1", "4", "8", "16"}
    for asked, w in warps.items():
        asked = int(asked)
        assert w["ttgir_num_warps"] == asked and w["warps_per_cta"] == asked
        assert w["values_per_thread"] * 32 * asked == 1024
        assert 0 < w["registers"] <= 255
        text = record.file(f"softmax.sm_90.num_warps_{asked}.ttgir").read_text()
        assert f'"ttg.num-warps" = {asked}' in text
    # num_stages: a pipelined loop holds more rows in shared memory with each stage.
    stages = results["stages"]
    assert stages["1"]["async_copies"] == 0 and all(stages[s]["async_copies"] > 0 for s in ("2", "3", "4"))
    shared = [stages[s]["shared_bytes"] for s in ("1", "2", "3", "4")]
    assert shared == sorted(shared) and shared[0] < shared[-1]
    assert "ttg.async_copy_global_to_local" in record.file("softmax_persistent.sm_90.num_stages_3.ttgir").read_text()
    assert "never run" in record.section("warps")
