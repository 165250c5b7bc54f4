"""Facts printed by the "Dissecting torch.compile" chapter, part B: TorchInductor and benchmarking."""

import re

import pytest
from harness import snippet

run_inductor = snippet("dissecting/inductor_matmul_softmax.py")
run_small = snippet("dissecting/bench_small_matmul_softmax.py")
run_sweep = snippet("dissecting/bench_size_sweep.py")
run_modes = snippet("dissecting/bench_compile_modes.py")

ARTIFACTS = ["fx_graph_readable.py", "fx_graph_runnable.py", "fx_graph_transformed.py",
             "ir_post_fusion.txt", "ir_pre_fusion.txt", "output_code.py"]
SOFTMAX_OPS = ["amax", "sub", "exp", "sum", "div"]


# ------------------------------------------------------------------------------------------ TorchInductor


def test_inductor_backend_is_cpp_on_cpu_and_triton_on_cuda(run_inductor):
    assert run_inductor.results["backend"] == ("triton" if run_inductor.device == "cuda" else "cpp")
    assert f"Inductor backend for it: {run_inductor.results['backend']}" in run_inductor.section("backends")


def test_one_graph_and_its_debug_artifacts_under_stable_names(run_inductor):
    assert run_inductor.results["graph_count"] == 1
    assert run_inductor.results["artifacts"] == ARTIFACTS
    for name in ARTIFACTS:
        assert (run_inductor.files / "debug" / name).is_file(), f"debug/{name} was not written"
        assert name in run_inductor.section("compile")
    # The raw torch_compile_debug tree (run counters in its names) stays out of the output folder.
    assert not [p for p in run_inductor.files.rglob("*") if "torch_compile_debug" in p.name]


def test_artifacts_are_normalised(run_inductor):
    for name in ARTIFACTS:
        text = (run_inductor.files / "debug" / name).read_text()
        assert "torch_compile_debug-" not in text, name
        assert "# kernel path:" not in text, name
        assert not re.search(r"\b[a-z0-9]{52}\b", text), f"{name} still holds a cache hash"
        assert not re.search(r"# File: /", text), f"{name} still holds an absolute source path"


def test_compiled_matches_eager(run_inductor):
    assert run_inductor.results["max_abs_error"] < 1e-4


def test_softmax_decomposes_into_amax_sub_exp_sum_div(run_inductor):
    assert run_inductor.results["dynamo_calls"] == ["matmul", "softmax"]
    assert run_inductor.results["aten_ops"] == ["mm"] + SOFTMAX_OPS
    printed = run_inductor.section("decomposition")
    for op in ["mm.default", "amax.default", "sub.Tensor", "exp.default", "sum.dim_IntList", "div.Tensor"]:
        assert f"aten.{op}(" in printed
    # The same ops are in the recorded file itself, not only in what the snippet printed.
    readable = (run_inductor.files / "debug" / "fx_graph_readable.py").read_text()
    assert all(f"torch.ops.aten.{op}" in readable for op in ["amax.default", "exp.default", "div.Tensor"])


def test_fusion_turns_the_softmax_nodes_into_one(run_inductor):
    pre, post = run_inductor.results["pre_fusion"], run_inductor.results["post_fusion"]
    softmax_ops = [op for node in pre[1:] for op in node["ops"]]
    assert pre[0]["ops"] == ["extern_kernels.mm"]
    assert {"max reduction", "exp", "sum reduction", "truediv"} <= set(softmax_ops)
    if run_inductor.device == "cpu":
        assert len(pre) == 5 and softmax_ops == ["max reduction", "sub", "exp", "sum reduction", "truediv"]
        assert "ir_pre_fusion.txt: 5 scheduler nodes" in run_inductor.section("fusion")
    # After fusion: the matmul, and one node holding every softmax node.
    assert len(post) == 2 and post[0]["ops"] == ["extern_kernels.mm"]
    fused = post[1]
    assert fused["members"] == [node["name"] for node in pre[1:]]
    assert fused["ops"] == softmax_ops
    assert "Fused" in fused["kind"]
    assert "ir_post_fusion.txt: 2 scheduler nodes" in run_inductor.section("fusion")


def test_output_code_launches_the_library_matmul_and_one_fused_kernel(run_inductor):
    results = run_inductor.results
    prefix = "triton_" if run_inductor.device == "cuda" else "cpp_fused_"
    assert len(results["kernels"]) == 1 and results["kernels"][0].startswith(prefix)
    assert "softmax" in results["kernels"][0]
    assert len(results["launches"]) == 2 and results["launches"][0] == "extern_kernels.mm"
    assert results["launches"][1].startswith(results["kernels"][0])
    assert "call() launches 2:" in run_inductor.section("output_code")
    # Five buffers before fusion (buf0..buf4); the fused kernel keeps some intermediates to itself.
    assert "buf0" in results["buffers"] and len(results["buffers"]) < 5
    assert results["counts"] == {"aten_ops": 6, "pre_fusion_nodes": len(results["pre_fusion"]),
                                 "post_fusion_nodes": 2, "kernels": 1, "launches": 2,
                                 "buffers": len(results["buffers"])}
    assert results["kernel_name"] == results["kernels"][0]


def test_kernel_code_is_cpp_openmp_on_cpu_and_triton_on_cuda(run_inductor):
    code = run_inductor.section("kernel_code")
    if run_inductor.device == "cuda":
        assert code.startswith("@triton.jit") and "tl.load" in code
    else:
        assert code.startswith('extern "C"') and "#pragma omp" in code and "Vectorized<float>" in code
        # The vector length follows the CPU: 16 floats with AVX-512, 8 with AVX2.
        expected = {"AVX512": 16, "AVX2": 8}.get(run_inductor.results["cpu_capability"])
        if expected:
            assert run_inductor.results["vector_floats"] == expected


# ------------------------------------------------------------------------------------------ Benchmarking


def test_first_calls_table(run_small):
    first = run_small.results["first_calls"]
    assert len(first["eager_us"]) == len(first["compiled_us"]) == 5
    assert all(t > 0 for t in first["eager_us"] + first["compiled_us"])
    printed = run_small.section("first_calls")
    assert re.search(r"^eager \(us\)(\s+[\d.]+){5}$", printed, re.MULTILINE)
    assert re.search(r"^compiled \(us\)(\s+[\d.]+){5}$", printed, re.MULTILINE)
    assert f"took {first['compiled_us'][0] / 1e6:.2f} s" in printed


def test_timer_results_are_consistent(run_small):
    timer = run_small.results["timer"]
    assert timer["eager_blocks"] >= 1 and timer["compiled_blocks"] >= 1
    assert timer["speedup"] == pytest.approx(timer["eager_us"] / timer["compiled_us"])
    printed = run_small.section("timer")
    assert f"speedup (eager / compiled): {timer['speedup']:.2f}x" in printed
    assert ("forever" in printed) == (timer["speedup"] <= 1)
    assert run_small.results["max_abs_error"] < 1e-4


def parse_sweep(text):
    row = re.compile(r"^\s*(\d+)\s+([\d,.]+) \(\s*([\d,.]+)\)\s+([\d,.]+) \(\s*([\d,.]+)\)\s+([\d.]+)x$", re.MULTILINE)
    return [[float(v.replace(",", "")) for v in match] for match in row.findall(text)]


def test_sweep_table_is_well_formed(run_sweep):
    sizes = [64, 128, 256, 512, 1024] + ([2048, 4096] if run_sweep.device == "cuda" else [])
    rows = run_sweep.results["sweep"]
    assert [r["n"] for r in rows] == sizes == run_sweep.results["sizes"]
    printed = parse_sweep(run_sweep.section("sweep"))
    assert [int(p[0]) for p in printed] == sizes
    for p, r in zip(printed, rows):
        assert r["eager_us"] > 0 and r["compiled_us"] > 0
        assert r["speedup"] == pytest.approx(r["eager_us"] / r["compiled_us"])
        assert abs(p[1] - r["eager_us"]) <= 0.05 + 1e-6 * r["eager_us"]
        assert abs(p[3] - r["compiled_us"]) <= 0.05 + 1e-6 * r["compiled_us"]
        assert abs(p[5] - r["speedup"]) <= 0.005


def test_crossover_follows_from_the_numbers(run_sweep):
    rows = run_sweep.results["sweep"]
    faster = [r["n"] for r in rows if r["compiled_us"] < r["eager_us"]]
    assert run_sweep.results["faster_at"] == faster
    expected = faster[0] if faster else None
    assert run_sweep.results["crossover"] == expected
    text = str(expected) if expected else "none in range"
    assert run_sweep.results["crossover_text"] == text
    assert f"crossover: {text}" in run_sweep.section("crossover")


def test_modes_switch_on_what_they_promise(run_modes):
    options = run_modes.results["mode_options"]
    assert options["default"] == {}
    assert options["reduce-overhead"] == {"triton.cudagraphs": True}
    assert options["max-autotune"]["max_autotune"] and options["max-autotune"]["triton.cudagraphs"]
    assert options["max-autotune-no-cudagraphs"]["max_autotune"]
    assert "triton.cudagraphs" not in options["max-autotune-no-cudagraphs"]


def test_sm_check_on_cuda_only(run_modes):
    results = run_modes.results
    assert results["min_sms"] == 68
    if run_modes.device == "cuda":
        import torch

        assert results["sms"] == torch.cuda.get_device_properties(0).multi_processor_count
        assert results["is_big_gpu"] == (results["sms"] >= 68)
        assert results["sm_warning"] == (not results["is_big_gpu"])
        assert f"{results['sms']} SMs; is_big_gpu: {results['is_big_gpu']}" in run_modes.section("sms")
    else:
        assert results["sms"] is None and results["is_big_gpu"] is None
        assert "only apply to max-autotune on CUDA" in run_modes.section("sms")


def test_modes_timed_per_device(run_modes):
    timings = run_modes.results["timings"]
    if run_modes.device == "cuda":
        sizes, modes = ["100", "2048"], ["default", "reduce-overhead", "max-autotune"]
    else:
        sizes, modes = ["100"], ["default", "max-autotune-no-cudagraphs"]
    assert sorted(timings, key=int) == sizes
    for n in sizes:
        assert set(timings[n]) == {"eager", *modes}
        for mode in modes:
            t = timings[n][mode]
            assert t["median_us"] > 0 and t["compile_s"] > 0
            assert t["speedup"] == pytest.approx(timings[n]["eager"]["median_us"] / t["median_us"])
        # Without max-autotune, the matmul is always left to the vendor library.
        assert timings[n]["default"]["matmul"] == "extern mm"
    if run_modes.device == "cpu":
        assert "reduce-overhead" not in run_modes.section("timings")


def test_sweep_figure_data_matches_the_table(run_sweep):
    figure = run_sweep.results["figures"]["sweep"]
    rows = run_sweep.results["sweep"]
    assert figure["kind"] == "sweep" and figure["x"] == [r["n"] for r in rows]
    assert [s["label"] for s in figure["series"]] == ["eager", "compiled"]
    for series in figure["series"]:
        side = series["label"]
        assert series["y"] == [r[f"{side}_us"] for r in rows]
        assert all(lo <= y <= hi for lo, y, hi in zip(series["lo"], series["y"], series["hi"]))
    assert figure["mark"]["x"] == run_sweep.results["crossover"]
