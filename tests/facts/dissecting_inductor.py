"""Facts of Dissecting torch.compile, part B: the TorchInductor and Benchmarking pages
(matmul + softmax through Inductor, timed small, over sizes and in each compile mode)."""

import re

from facts import MIN_TIMINGS, as_printed, check

ARTIFACTS = ["fx_graph_readable.py", "fx_graph_runnable.py", "fx_graph_transformed.py",
             "ir_post_fusion.txt", "ir_pre_fusion.txt", "output_code.py"]
SOFTMAX_IR_OPS = {"max reduction", "sub", "exp", "sum reduction", "truediv"}
# On a Triton target (config.online_softmax), the max and the sum are one reduction with two outputs.
ONLINE_SOFTMAX_IR_OPS = {"online_softmax_reduce reduction", "sub", "exp", "truediv"}


def check_lowering_and_fusion(pre, post, cuda):
    """inductor.md's lowering and fusion, on the scheduler nodes the snippet parsed from ir_pre_fusion.txt and
    ir_post_fusion.txt. Also run on CUDA IR made without a GPU (tests/test_cuda_dry_run.py)."""
    # One scheduler node per buffer; sub never gets a node of its own (lowering inlines it into exp).
    assert pre[0]["ops"] == ["extern_kernels.mm"] and pre[0]["buffers"] == ["buf0"]
    assert all(len(node["buffers"]) == 1 for node in pre)
    ops = {op for node in pre[1:] for op in node["ops"]}
    if cuda:
        assert ONLINE_SOFTMAX_IR_OPS <= ops and not {"max reduction", "sum reduction"} & ops, ops
    else:
        assert SOFTMAX_IR_OPS <= ops, ops
        # On a CPU, exp (reused, and costly to recompute) is realized: a node ending in exp, holding the
        # inlined sub. Five nodes, five buffers, for six ATen ops.
        assert [node["ops"] for node in pre[1:]] == [
            ["max reduction"], ["sub", "exp"], ["sum reduction"], ["truediv"]]
    assert all(node["ops"] != ["sub"] for node in pre)
    # Fusion: whole nodes merged, their ops and buffers kept; the matmul stays extern.
    assert post[0]["ops"] == ["extern_kernels.mm"]
    assert sorted(op for n in post for op in n["ops"]) == sorted(op for n in pre for op in n["ops"])
    assert sorted(b for n in post for b in n["buffers"]) == sorted(b for n in pre for b in n["buffers"])
    assert len(post) < len(pre)
    if not cuda:
        assert len(post) == 2 and post[1]["kind"] == "OuterLoopFusedSchedulerNode"
        assert post[1]["members"] == [node["name"] for node in pre[1:]]


def check_launches(kernels, launches, cuda):
    """The library matmul, then each generated kernel, launched once (from call() or its partitions)."""
    prefix = "triton_" if cuda else "cpp_fused_"
    assert kernels and all(k.startswith(prefix) for k in kernels), kernels
    assert launches and launches[0] == "extern_kernels.mm", launches
    assert [launch.removesuffix(".run") for launch in launches[1:]] == kernels, (launches, kernels)


def assert_timing(timing):
    assert timing["n"] >= MIN_TIMINGS, f"{timing['n']} timings, fewer than {MIN_TIMINGS}"
    assert len(timing["times_us"]) == timing["n"] and timing["median_us"] > 0
    assert timing["q1_us"] <= timing["median_us"] <= timing["q3_us"]


# ------------------------------------------------------------------------------ TorchInductor


@check("dissecting/inductor_matmul_softmax.py")
def _(record):
    results, cuda = record.results, record.device == "cuda"
    counts = results["counts"]

    # C++/OpenMP on a CPU, Triton on a GPU.
    assert results["backend"] == ("triton" if cuda else "cpp")
    assert f"Inductor backend for it: {results['backend']}" in record.section("backends")

    # One graph, its six debug artifacts in the folder the config patch named.
    assert results["debug_folder"].startswith("inductor_debug/torchinductor/")
    assert set(ARTIFACTS) <= set(results["artifacts"])
    if not cuda:
        assert results["artifacts"] == ARTIFACTS
    for name in ARTIFACTS:
        assert record.file(f"{results['debug_folder']}/{name}").is_file(), name
        assert name in record.section("compile")
    assert results["max_abs_error"] < 1e-4

    # Dynamo keeps softmax as one call; Inductor receives it as amax, sub, exp, sum, div.
    assert results["dynamo_calls"] == ["matmul", "softmax"]
    assert results["aten_ops"] == ["mm", "amax", "sub", "exp", "sum", "div"]
    assert counts["aten_ops"] == 6
    printed = record.section("decomposition")
    for op in ["mm.default", "amax.default", "sub.Tensor", "exp.default", "div.Tensor"]:
        assert f"aten.{op}" in printed
    readable = record.file(f"{results['debug_folder']}/fx_graph_readable.py").read_text()
    assert all(f"torch.ops.aten.{op}" in readable for op in ["amax", "exp", "div"])
    # The kept graphs: Dynamo's calls softmax, the ATen one exp.
    assert "softmax" in record.file(results["dynamo_graph"]["fxgraph"]).read_text()
    assert "aten.exp" in record.file(results["aten_graph"]["fxgraph"]).read_text()

    # Users: sub has one (exp), so lowering inlines it; exp has two (sum and div).
    users = results["users"]
    assert users["sub"] == ["exp"]
    assert sorted(users["exp"]) == ["div", "sum_1"]
    assert "users: sum_1, div" in printed

    # Lowering (one scheduler node per buffer) and fusion (whole nodes merged).
    pre, post = results["pre_fusion"], results["post_fusion"]
    check_lowering_and_fusion(pre, post, cuda)
    assert counts["pre_fusion_nodes"] == len(pre) < counts["aten_ops"]
    lowering = record.section("lowering")
    assert f"ir_pre_fusion.txt: {len(pre)} scheduler nodes, one per buffer, for 6" in lowering
    assert counts["post_fusion_nodes"] == len(post)
    assert f"ir_post_fusion.txt: {len(post)} scheduler nodes" in record.section("fusion")

    # Generated code: the library matmul and the generated kernel(s), each launched once.
    kernels, launches = results["kernels"], results["launches"]
    check_launches(kernels, launches, cuda)
    assert "softmax" in results["kernel_name"] and results["kernel_name"] == kernels[0]
    assert f"call() launches {len(launches)}:" in record.section("output_code")
    # Fusion keeps intermediates inside the kernel: fewer buffers allocated than nodes.
    assert "buf0" in results["buffers"] and len(results["buffers"]) < len(pre)
    assert counts == {"aten_ops": 6, "pre_fusion_nodes": len(pre),
                      "post_fusion_nodes": len(post), "kernels": len(kernels),
                      "launches": len(launches), "buffers": len(results["buffers"])}
    assert results["compile_threads"] >= 1
    assert isinstance(results["unroll_pragmas"], int) and results["unroll_pragmas"] >= 0
    assert results["kept_in_kernel"], "no pre-fusion buffer stayed inside the kernel"
    if not cuda:
        assert counts["kernels"] == 1 and counts["launches"] == 2
        # exp's buffer, realized at lowering, is never allocated: fusion kept it inside.
        assert results["exp_buffer"] == pre[2]["buffers"][0]
        assert results["exp_buffer"] in results["kept_in_kernel"]

    code = record.section("kernel_code")
    if cuda:
        assert code.startswith("@triton") and results["kernel_lines"] > 0
        assert results["triton_heuristic"] in {"persistent_reduction", "reduction",
                                               "pointwise"}
    else:
        assert code.startswith('extern "C"') and "#pragma omp" in code
        assert "Vectorized<float>" in code
        # The vector length follows the CPU: 16 floats with AVX-512, 8 with AVX2.
        expected = {"AVX512": 16, "AVX2": 8}.get(results["cpu_capability"])
        if expected:
            assert results["vector_floats"] == expected


# ------------------------------------------------------------------------------ Benchmarking


@check("dissecting/bench_small_matmul_softmax.py")
def _(record):
    results = record.results
    assert results["n"] == 100
    # The naive way: five single calls each; the first compiled one is the compilation.
    first = results["first_calls"]
    assert len(first["eager_us"]) == len(first["compiled_us"]) == 5
    assert all(t > 0 for t in first["eager_us"] + first["compiled_us"])
    assert abs(first["compile_s"] * 1e6 - first["compiled_us"][0]) < 1e-3
    printed = record.section("first_calls")
    assert re.search(r"^eager \(us\)(\s+[\d.]+){5}$", printed, re.MULTILINE)
    assert re.search(r"^compiled \(us\)(\s+[\d.]+){5}$", printed, re.MULTILINE)
    assert f"took {first['compile_s']:.2f} s" in printed
    # The site's way: the one measure method.
    timing = results["timing"]
    for side in ("eager", "compiled"):
        assert_timing(timing[side])
        assert f"{side:<9} median" in record.section("timer")
    (eager_us, n), (compiled_us, _) = as_printed(timing["eager"]), as_printed(timing["compiled"])
    assert f"n = {n}" in record.section("timer")
    difference = compiled_us - eager_us  # the printed difference: this process's medians
    assert abs(results["compiled_minus_eager_us"] - difference) < 1e-6 * abs(difference) + 1e-9
    assert results["max_abs_error"] < 1e-4


def sweep_rows(text):
    number = r"([\d,.]+)"
    row = re.compile(rf"^\s*(\d+)\s+{number} \(\s*{number}\)\s+{number} \(\s*{number}\)"
                     rf"\s+([\d.]+)x\s+(\d+)$", re.MULTILINE)
    return [[float(v.replace(",", "")) for v in match] for match in row.findall(text)]


@check("dissecting/bench_size_sweep.py")
def _(record):
    results = record.results
    sizes = [64, 128, 256, 512, 1024] + ([2048, 4096] if record.device == "cuda" else [])
    assert results["sizes"] == sizes
    eager, compiled = results["timing"]["eager"], results["timing"]["compiled"]
    assert len(eager) == len(compiled) == len(sizes)
    for timing in eager + compiled:
        assert_timing(timing)
    # The printed table is the recorded data.
    rows = sweep_rows(record.section("sweep"))
    assert [int(r[0]) for r in rows] == sizes
    for row, e, c in zip(rows, eager, compiled):
        (e_us, e_n), (c_us, c_n) = as_printed(e), as_printed(c)
        assert abs(row[1] - e_us) <= 0.05 + 1e-6 * e_us
        assert abs(row[3] - c_us) <= 0.05 + 1e-6 * c_us
        assert abs(row[5] - e_us / c_us) <= 0.005
        assert int(row[6]) == min(e_n, c_n)
    assert results["smallest"]["n"] == sizes[0]


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
