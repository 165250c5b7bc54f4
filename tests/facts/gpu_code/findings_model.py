"""The check of snippets/gpu_code/findings_model.py: the GPU model beside the findings table (guide.md, index.md),
held on every record of it. Each modelled side is the workload its timed record measured (the same `work`
label: function and input sizes), its kernels' bytes are what the page says, and its time at the roof is the
datasheet arithmetic. torch 2.15 models every side; an older release may fail to write some compiled side's CUDA
code (private Inductor internals), and its record says so instead of counting."""

import pytest
import torch
from facts import check

from scripts import records

MAIN = "2.15"
N = 32 * 2**20  # fusion.py's CPU size: the findings table's rows are CPU records


@check("gpu_code/findings_model.py")
def _(record):
    gpus = record.results["gpus"]
    assert {g: (s["tb_per_s"], s["fp32_tflops"], s["tf32_tflops"]) for g, s in gpus.items()} == {
        "h100": (3.35, 67, 494), "h200": (4.8, 67, 494), "b200": (7.7, 75, 1100)}
    timed = record.results["timed"]
    main = (record.release or torch.__version__).startswith(MAIN)  # a fresh run has no manifest
    for snippet, sides in timed.items():
        measured = records.record(snippet, "cpu")
        for key, side in sides.items():
            # The same function at the same sizes as the timed record (where the repository has that record).
            if measured.exists:
                assert side["work"] == measured.value(key)["work"], (snippet, key)
            if "error" in side:
                assert not main and "eager" not in key, (snippet, key, side["error"])
                continue
            kernels = side["kernels"]
            assert side["bytes"] == sum(k["bytes"] for k in kernels) > 0, (snippet, key)
            for g, spec in gpus.items():  # each kernel at its roof, summed
                roof = sum(max(k["bytes"] / (spec["tb_per_s"] * 1e12),
                               k["flops"] / (spec["tf32_tflops" if k["tf32"] else "fp32_tflops"] * 1e12))
                           for k in kernels) * 1e6
                assert side[f"{g}_us"] == pytest.approx(roof), (snippet, key, g)
    fusion = timed["optimizations/fusion.py"]
    # Six eager kernels, fifteen passes over n floats; one compiled kernel, three passes: the 5x at the roof.
    assert [k["op"] for k in fusion["timing.eager"]["kernels"]] == ["sin", "cos", "mul", "add", "mul", "relu"]
    assert fusion["timing.eager"]["bytes"] == 15 * N * 4
    assert [k["bytes"] for k in fusion["timing.compiled"]["kernels"]] == [3 * N * 4]
    assert fusion["timing.eager"]["h100_us"] / fusion["timing.compiled"]["h100_us"] == pytest.approx(5)
    # A matmul stays a library call compiled: the same FLOPs on both sides where nothing is dead code.
    for snippet, a, b in [("graph_mode/eager_cannot_fuse.py", "timing.eager", "timing.compiled"),
                          ("dissecting/bench_size_sweep.py", "timing.eager.4", "timing.compiled.4"),
                          ("graph_mode/transformer_block.py", "timing.inference_eager",
                           "timing.inference_compiled")]:
        assert timed[snippet][a]["flops"] == timed[snippet][b]["flops"] > 0, snippet
    # Dead code: the unused matmul is one of the three eager runs and none of what Inductor writes.
    dead = timed["jax/dead_code.py"]
    assert dead["timing.jit"]["flops"] == dead["timing.eager"]["flops"] * 2 // 3
    # AdamW compiled (guide.md): eight kernels in Inductor's CUDA code, against one in its CPU code
    # (transformer_block.py's record), where eager is the per-parameter loop, not CUDA's foreach default.
    adamw = timed["graph_mode/transformer_block.py"]["timing.optimizer_compiled"]
    if "error" not in adamw:
        assert len(adamw["kernels"]) == 8
    if main:  # every side modelled on the release the site builds with
        assert not any("error" in side for sides in timed.values() for side in sides.values())
