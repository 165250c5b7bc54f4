"""CUDA graphs: a chain of tiny kernels, launched one by one, then replayed as one captured graph.

    python snippets/dissecting/cuda_graphs.py

On CUDA it times the chain four ways: eager (one launch per op), a torch.cuda.CUDAGraph replay (one launch
for the whole chain), torch.compile (fused into one kernel) and torch.compile(mode="reduce-overhead")
(fused, then replayed from a CUDA graph). On a CPU there are no kernel launches to record, so it times the
eager chain alone. Writes results.json to $SNIPPET_OUTPUT_DIR, or to a fresh temporary folder.
"""

import json
import os
import tempfile
from pathlib import Path

import torch
from torch.utils import benchmark

OUT = Path(os.environ.get("SNIPPET_OUTPUT_DIR") or tempfile.mkdtemp(prefix="cuda_graphs-"))
device = "cuda" if torch.cuda.is_available() else "cpu"
results = {"device": device}
MIN_RUN_TIME = 1.0 if device == "cuda" else 0.3  # seconds per timing: short on a CPU runner

# --8<-- [start:chain]
N_OPS = 100   # ops in the chain: eager mode launches one kernel per op, 100 kernels per call
SIZE = 1024   # fp32 values: 4 KiB per tensor, so each kernel has almost nothing to do


def chain(x):
    for _ in range(N_OPS):
        x = x * 1.001  # reads 4 KiB, writes 4 KiB: the launch costs far more than the arithmetic
    return x


x = torch.randn(SIZE, device=device)


def timed(label, stmt, **names):
    measurement = benchmark.Timer(stmt, globals=names).blocked_autorange(min_run_time=MIN_RUN_TIME)
    row = {"median_us": measurement.median * 1e6, "iqr_us": measurement.iqr * 1e6,
           "per_op_us": measurement.median * 1e6 / N_OPS, "timings": len(measurement.times)}
    print(f"{label:<34} {row['median_us']:9.1f} us per call (IQR {row['iqr_us']:6.1f}), "
          f"{row['per_op_us']:6.2f} us per op, {row['timings']} timings")
    return row
# --8<-- [end:chain]

# --8<-- [start:eager]
label = "eager, one launch per op" if device == "cuda" else "eager, one op call at a time"
results["eager"] = timed(label, "chain(x)", chain=chain, x=x)
# --8<-- [end:eager]

# --8<-- [start:graph]
if device == "cuda":
    # Capture: run the chain once while the stream records its kernels instead of running them.
    # Warm up on a side stream first, as capture requires (lazy initialisation must not be recorded).
    static_x = x.clone()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            chain(static_x)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_out = chain(static_x)  # the graph reads static_x and writes static_out, always these buffers
    # Replay on new data: copy it into the captured input buffer, replay, read the captured output buffer.
    new_x = torch.randn(SIZE, device=device)
    static_x.copy_(new_x)
    graph.replay()
    results["graph_matches_eager"] = torch.allclose(static_out, chain(new_x))
    print(f"replayed graph matches eager: {results['graph_matches_eager']}")
    results["cuda_graph"] = timed("CUDA graph replay, one launch", "graph.replay()", graph=graph)
else:
    print("No GPU: a CPU op runs its loop right where PyTorch calls it. There is no queue of kernel")
    print("launches to record and replay, so CUDA graphs (and mode='reduce-overhead') do not apply.")
    print(f"Each op above cost {results['eager']['per_op_us']:.2f} us for {SIZE * 4 // 1024} KiB of data: PyTorch's own")
    print("per-op work (the Python call, dispatch, allocating the output) plus the loop itself.")
# --8<-- [end:graph]

# --8<-- [start:compiled]
if device == "cuda":
    fused = torch.compile(chain)                                 # one fused kernel, launched from Python
    replayed = torch.compile(chain, mode="reduce-overhead")  # the fused kernel, replayed from a CUDA graph
    for name, fn in [("compiled", fused), ("reduce_overhead", replayed)]:
        for _ in range(3):  # compile, then let CUDA graph trees record (they capture on a later call)
            out = fn(x)
        results[f"{name}_matches_eager"] = torch.allclose(out, chain(x), rtol=1e-4)
        print(f"{name} matches eager: {results[f'{name}_matches_eager']}")
    results["compiled"] = timed("torch.compile, fused kernel", "f(x)", f=fused, x=x)
    results["reduce_overhead"] = timed('mode="reduce-overhead"', "f(x)", f=replayed, x=x)
    print(f"eager / CUDA graph: {results['eager']['median_us'] / results['cuda_graph']['median_us']:.1f}x, "
          f"eager / reduce-overhead: {results['eager']['median_us'] / results['reduce_overhead']['median_us']:.1f}x")
else:
    print("Skipped on CPU: torch.compile would fuse the chain into one C++ loop, a fusion story (see the")
    print("Inductor page), not a launch-overhead one.")
# --8<-- [end:compiled]

(OUT / "results.json").write_text(json.dumps(results, indent=2))
