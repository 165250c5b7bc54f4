"""The check of snippets/graph_mode/transformer_block.py: what transformer.md says about it, held on every record
of it."""

import math

from facts import check, skip_unless_pinned, timed


@check("graph_mode/transformer_block.py")
def _(record):
    results = record.results
    # The block's forward is one graph; the training step breaks once, at loss.backward(), and fullgraph=True
    # turns that break into an error.
    graphs = results["graphs"]
    assert (graphs["forward"], graphs["step"], graphs["step_breaks"]) == (1, 2, 1), graphs
    assert "backward" in graphs["break_reason"] and "backward" in results["fullgraph_step"]
    # Each compile stage took time: the metrics were read from a compile that ran, not a cache hit. The
    # recorder starts a record with empty compiler caches; a fresh run in a second suite finds the FX graph
    # cache the first one filled (.cache/tmp/torchinductor_<user>), and its Inductor stages take no time.
    for name, stages in results["compile_seconds"].items():
        ran = ("Dynamo", "AOTAutograd", "Inductor", "code_generation") if record.committed else ("Dynamo",)
        assert all(stages[s] > 0 for s in ran), stages
        assert all(stages["total"] > v for s, v in stages.items() if s != "total"), (name, stages)
    # Compiled inference: one graph of kernels Inductor wrote and library calls (matmuls, attention); the
    # training step: forward, backward, and the whole AdamW update as one kernel.
    (inference,) = results["compiled_kernels"]["inference"]
    forward, backward, optimizer = results["compiled_kernels"]["training"]
    prefix = "triton_" if record.device == "cuda" else "cpp_fused_"
    for graph in (inference, forward, backward, optimizer):
        assert graph["kernels"] and all(k.startswith(prefix) for k in graph["kernels"]), graph
    assert sum("native_layer_norm" in k for k in inference["kernels"]) == 2, inference
    assert any("gelu" in k for k in inference["kernels"]) and any("gelu_backward" in k for k in backward["kernels"])
    assert any("scaled_dot_product" in c for c in inference["calls"]), inference
    assert optimizer["calls"] == [] and any("addcdiv" in k and "lerp" in k for k in optimizer["kernels"])
    if record.device == "cpu":  # AdamW loops over the parameters on a CPU; one kernel does them all
        assert len(optimizer["kernels"]) == 1, optimizer
    assert results["parameter_tensors"] == 12  # transformer.md: AdamW's loop over 12 parameter tensors
    # The training compile reuses no kernel the inference compile built (the kernel cache is keyed by the
    # source): even the first LayerNorm kernel, named the same, also stores each row's rstd for the backward.
    counts = results["kernel_sources"]
    assert counts["inference"] == len(inference["kernels"]), (counts, inference)
    assert counts["training"] == sum(len(g["kernels"]) for g in (forward, backward, optimizer)), counts
    assert results["kernels_in_both"] == [], results["kernels_in_both"]
    if record.device == "cpu":
        assert inference["kernels"][0] == forward["kernels"][0] == "cpp_fused_native_layer_norm_0"
    # The page's model, not a measurement: the step's matrix products (4.8 GFLOP) at the H100's published
    # FP32 rate (67 TFLOP/s) take under 0.1 ms, less than a microsecond per op eager runs in a step.
    model = results["model"]
    assert round(model["matmul_gflop"], 1) == 4.8, model
    assert math.isclose(model["h100_fp32_us"], model["matmul_gflop"] * 1e3 / 67)
    assert math.isclose(model["us_per_eager_op"] * results["eager_ops"]["training"], model["h100_fp32_us"])
    assert model["h100_fp32_us"] < 100 and model["us_per_eager_op"] < 1, model
    # Eager runs each op as a kernel of its own: more than the compiled graph's kernels and calls together.
    eager = results["eager_ops"]
    assert eager["inference"] > len(inference["kernels"]) + len(inference["calls"]), eager
    timed(results["timing"], [f"{work}_{kind}" for work in ("inference", "training", "optimizer")
                              for kind in ("eager", "compiled")])
    for name, split in results["split_ms"].items():
        assert split["library"] > 0 and split["rest"] > 0, (name, split)
        assert 0 < results["library_percent"][name] < 100
    # Provenance: each kernel leads back to Dynamo's nodes and the expressions they were traced from. The
    # LayerNorm kernels come from the norm calls; the last kernel recomputes the first residual add (x).
    kernels = results["provenance"]
    assert list(kernels) == inference["kernels"], (list(kernels), inference["kernels"])
    sources = {kernel: {node: expression for node, _, expression in found} for kernel, found in kernels.items()}
    first, second, activation, last = inference["kernels"]
    # Python 3.11 marks the expression under its line; another Python may give the whole line.
    assert list(sources[first]) == ["layer_norm"] and "self.norm1(x)" in sources[first]["layer_norm"]
    assert "self.norm2(x)" in sources[second]["layer_norm_1"] and "x" in sources[second], sources[second]
    assert "gelu" in activation and "F.gelu(" in sources[activation]["gelu"], sources[activation]
    assert "x" in sources[last] and "x + self.fc2(" in sources[last]["add_1"], sources[last]
    # CUDA code for the forward: written for an H100 without a GPU (on a GPU, compiled and run). The layer
    # norms are persistent reductions; each matmul's bias moves into a Triton kernel after it (mm), but one
    # stays an addmm; attention is one library call, the memory-efficient kernel for float32.
    cuda = results["cuda"]
    if "reason" in cuda:  # the private path failed (torch 2.13.0+cpu: no fake CUDA weights for the block)
        assert cuda["reason"].split(": ", 1)[1] in record.section("cuda"), cuda
        skip_unless_pinned(record, cuda["reason"])
    assert cuda["kernels"] and all(k.startswith("triton_") for k in cuda["kernels"]), cuda
    assert any("scaled_dot_product" in c for c in cuda["calls"]), cuda
    if record.device == "cpu":  # the model: written for an H100 from fake tensors
        assert len(cuda["kernels"]) == 4, cuda
        assert sum(k.startswith("triton_per_fused") and "native_layer_norm" in k for k in cuda["kernels"]) == 2
        assert any("gelu" in k and "addmm" in k for k in cuda["kernels"]), cuda
        assert cuda["calls"].count("extern_kernels.mm") == 3, cuda
        assert cuda["calls"][:2] == ["extern_kernels.addmm", "torch.ops.aten._scaled_dot_product_efficient_attention"]
