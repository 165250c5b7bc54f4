"""The counts the pages type in their own words, and what holds each (tests/test_stated_counts.py).

A page's phrase maps to the check that asserts that number of its snippet ("facts/<snippet>"), to a setting
of the site's method ("records.PROCESSES"), or to "fact: " and the reason no record can change it.
"""

GENERIC = "fact: a general statement, not a count of the page's snippet"

HELD = {
    "contributing.md": {
        "five fresh processes": "records.PROCESSES",
    },
    "dead-code.md": {
        "three stages": "fact: JAX's own pipeline (jaxpr, StableHLO, optimised HLO), the three tabs the page shows",
    },
    "dissecting/benchmarking.md": {
        "two lines": "fact: an idiom ('two lines of code'), not a count of the snippet",
        "five calls": "facts/dissecting/bench_small_matmul_softmax.py",  # the first calls, five of each
        "ten calls": "fact: a quiz's hypothetical mean, not a count of the snippet",
    },
    "dissecting/bytecode.md": {
        "three lines": "facts/dissecting/dynamo_bytecode.py",
    },
    "dissecting/compiler-crash.md": {
        "two graphs": "facts/dissecting/compiler_crash.py",  # the fence: a graph on each side of the break
        "1 graphs": "fact: a quiz's arithmetic, b + 1 graphs for b breaks in straight-line code",
        "three calls": "fact: a quiz's hypothetical forward, not a count of the snippet",
        "3 breaks": "fact: a quiz's hypothetical forward, not a count of the snippet",
        "4 graphs": "fact: a quiz's hypothetical forward, not a count of the snippet",
    },
    "dissecting/distributed.md": {
        "two processes": "fact: the snippet's setting (world_size=2, nprocs=2), not a count it measures",
        "two graphs": "fact: a quiz's arithmetic, the bucket rule applied to bucket_cap_mb=4",
        "five blocks": "facts/dissecting/distributed.py",  # DDP's buckets add up to five layers' bytes
    },
    "dissecting/control-flow.md": {
        "two graphs": "facts/dissecting/control_flow.py",
    },
    "dissecting/dynamo.md": {
        "six calls": "facts/dissecting/dynamo_guards.py",
    },
    "dissecting/fusion-scores.md": {
        "two nodes": "fact: a fusion pairs two nodes, by the definition of the scheduler's pairs",
        "six ops": "facts/dissecting/fusion_scores.py",
        "four buffers": "facts/dissecting/fusion_scores.py",
        "four nodes": "facts/dissecting/fusion_scores.py",  # the diagram's: one scheduler node per buffer
        "two ops": "fact: exp's readers are the sum and the division, the two ops the softmax source names",
        "two kernels": "facts/dissecting/fusion_scores.py",
    },
    "dissecting/graphs.md": {
        "two graphs": "fact: AOTAutograd's partitioner makes a forward and a backward graph, by definition",
        "two ops": GENERIC,
    },
    "dissecting/inductor-cuda.md": {
        "4 warps": "facts/gpu_code/inductor_cuda_code.py",
        "two lines": "facts/gpu_code/inductor_cuda_code.py",
        # matmul and softmax compiled: the library GEMM and one softmax kernel (launches == [mm, reduction])
        "two kernels": "facts/gpu_code/inductor_cuda_code.py",
        "five processes": "records.PROCESSES",
    },
    "dissecting/tlparse.md": {
        "two calls": "facts/dissecting/tlparse_report.py",
        "two compiles": "facts/dissecting/tlparse_report.py",
    },
    "dissecting/training.md": {
        "two graphs": "facts/dissecting/training_step.py",
    },
    "dissecting/triton-basics.md": {
        "32 threads": "fact: an NVIDIA warp is 32 threads (CUDA programming guide)",
        "16 warps": "facts/dissecting/triton_basics.py",
        "eight warps": "facts/dissecting/triton_basics.py",
        "4 stages": "facts/dissecting/triton_basics.py",
        "two stages": "facts/dissecting/triton_basics.py",
        "three stages": "facts/dissecting/triton_basics.py",
        "64 warps": "fact: an H100 SM runs at most 64 warps (NVIDIA's Hopper tuning guide)",
        "2,048 threads": "fact: an H100 SM's 64 warps of 32 threads, the same limit (Hopper tuning guide)",
        "four warps": "facts/dissecting/triton_basics.py",
        "four stages": "facts/dissecting/triton_basics.py",
        "32 warps": "fact: 32 programs of one warp each, the arithmetic of the sentence",
    },
    "dissecting/triton.md": {
        "two kernels": "facts/gpu_code/line_maps.py",
        "32 threads": "fact: an NVIDIA warp is 32 threads (CUDA programming guide)",
        "four warps": "fact: a Hopper warpgroup is four warps (PTX ISA, wgmma)",
        "128 threads": "fact: a Hopper warpgroup is 128 threads (PTX ISA, wgmma)",
        "three stages": "facts/gpu_code/line_maps.py",
        "three lines": "facts/gpu_code/line_maps.py",
        "two lines": "facts/gpu_code/line_maps.py",
    },
    "dissecting/warm-start.md": {
        "two fresh processes": "facts/dissecting/warm_start.py",
        "two graphs": "facts/dissecting/warm_start.py",
    },
    "eager-mode.md": {
        "six kernels": "facts/eager_mode/complex_activation.py",
        "six ops": "facts/eager_mode/complex_activation.py",
        "five fresh processes": "records.PROCESSES",
    },
    "graph-mode.md": {
        "three lines": "facts/graph_mode/eager_cannot_fuse.py",
        "five ops": "facts/graph_mode/graph_breaks.py",
    },
    "glossary.md": {
        "128 threads": "fact: a warpgroup is four warps, and a warp is 32 threads on every NVIDIA GPU",
    },
    "guide.md": {
        "two processes": GENERIC,
        # matmul and softmax compiled: the library GEMM and one softmax kernel (launches == [mm, reduction])
        "two kernels": "facts/gpu_code/inductor_cuda_code.py",
        # compiled AdamW in Inductor's CUDA code: the step counter's add and seven update kernels
        "eight kernels": "facts/gpu_code/findings_model.py",
        "two ops": "fact: matmul and softmax eager are ATen's mm and _softmax, the function's two lines",
    },
    "index.md": {
        "six kernels": "facts/eager_mode/complex_activation.py",
        "six ops": "facts/eager_mode/complex_activation.py",
    },
    "optimizations.md": {
        "six ops": "facts/optimizations/fusion.py",
        "five fresh processes": "records.PROCESSES",
    },
    "real-models.md": {
        "two calls": "fact: the forward and the training step, the two functions the snippet shows and times",
    },
    "reproduce.md": {
        "5 fresh processes": "records.PROCESSES",
        "10 rounds": "facts/dissecting/bench_small_matmul_softmax.py",  # n == 10 x processes
        "5 processes": "records.PROCESSES",
    },
    "transformer.md": {
        "one compiles": "fact: 'this one compiles', a pronoun, not a count",
        "four stages": "facts/graph_mode/transformer_block.py",
        "two ops": "facts/graph_mode/when_not_to_compile.py",  # tiny(): x * 2 + 1
    },
    "when-to-compile.md": {
        "four ops": "facts/graph_mode/when_not_to_compile.py",
        "five calls": "facts/graph_mode/recompiles.py",
    },
}
