"""CUDA graphs: a chain of tiny kernels launched one by one, then replayed as one graph.

    python snippets/dissecting/cuda_graphs.py

On CUDA it times the chain four ways, in the same rounds: eager (one launch per op), a
torch.cuda.CUDAGraph replay (one launch for the whole chain), torch.compile (fused into
one kernel) and torch.compile(mode="reduce-overhead") (fused, then replayed from a CUDA
graph). On a CPU there are no kernel launches to record, so it times the eager chain
alone.
"""

import torch
from torch.utils import benchmark

device = "cuda" if torch.cuda.is_available() else "cpu"
results = {}
results["device"] = device


# --8<-- [start:measure]
def measure(candidates, rounds=10):
    """The site's one method. `candidates` maps a name to (fn, *args). Each is warmed
    up and given a block of calls; then one block of each is timed in turn, round
    after round (A, B, A, B, ...), so a burst of load from elsewhere hits all alike.
    Returns name -> Measurement, per call. Timer runs on 1 thread unless told, so it
    is told: all of torch's threads. The recorder repeats the whole snippet in fresh
    processes, so the spread that judges a comparison includes theirs."""
    def work(fn, args):  # what was timed: "compiled f(float32[1024, 256], ...)"
        inner = getattr(fn, "_orig_mod", fn)
        compiled = inner is not fn or hasattr(fn, "_torchdynamo_orig_callable")
        kind = "compiled " if compiled else ""
        shapes = ", ".join(f"{str(a.dtype)[6:]}{list(a.shape)}" for a in args
                           if isinstance(a, torch.Tensor))
        return f"{kind}{getattr(inner, '__name__', type(inner).__name__)}({shapes})"

    timers = {name: benchmark.Timer("fn(*args)", globals={"fn": fn, "args": args},
                                    label=work(fn, args),
                                    num_threads=torch.get_num_threads())
              for name, (fn, *args) in candidates.items()}
    calls = {name: timer.blocked_autorange(min_run_time=0.2).number_per_run
             for name, timer in timers.items()}  # warm-up; picks calls per block
    blocks = {name: [] for name in timers}
    for _ in range(rounds):
        for name, timer in timers.items():
            blocks[name].append(timer.timeit(calls[name]))
    return {name: benchmark.Measurement.merge(b)[0] for name, b in blocks.items()}
# --8<-- [end:measure]


# --8<-- [start:chain]
N_OPS = 100   # ops in the chain: eager mode launches one kernel per op, 100 per call
SIZE = 1024   # fp32 values: 4 KiB per tensor, so each kernel has almost nothing to do


def chain(x):
    for _ in range(N_OPS):
        x = x * 1.001  # reads 4 KiB, writes 4 KiB: the launch costs far more than this
    return x


x = torch.randn(SIZE, device=device)


def report(label, m):
    print(f"{label:<30} median {m.median * 1e6:8.1f} us per call "
          f"(IQR {m.iqr * 1e6:6.1f}, n={len(m.times)}), "
          f"{m.median * 1e6 / N_OPS:6.2f} us per op")
# --8<-- [end:chain]
results.update(n_ops=N_OPS, size=SIZE)

# --8<-- [start:eager]
# What a page compares is timed in one call, in the same rounds: on a GPU the eager
# chain waits for the replay and the compiled chains, to be timed with them below.
candidates = {"eager": (chain, x)}
if device == "cuda":
    print(f"{'eager, one launch per op':<30} timed below, with the others")
else:
    timing = measure(candidates)
    report("eager, one op at a time", timing["eager"])
# --8<-- [end:eager]

# --8<-- [start:graph]
if device == "cuda":
    # Capture: run the chain once while the stream records its kernels instead of
    # running them. Warm up on a side stream first, as capture requires (lazy
    # initialisation must not be recorded).
    static_x = x.clone()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            chain(static_x)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_out = chain(static_x)  # the graph reads static_x, writes static_out
    # Replay on new data: copy it into the captured input buffer, replay, and read
    # the captured output buffer (the next replay overwrites it).
    new_x = torch.randn(SIZE, device=device)
    static_x.copy_(new_x)
    graph.replay()
    graph_matches = torch.allclose(static_out, chain(new_x))
    print(f"replayed graph matches eager: {graph_matches}")
    candidates["cuda_graph"] = (graph.replay,)
    print(f"{'CUDA graph replay, one launch':<30} timed below, with eager")
else:
    print("No GPU: a CPU op runs its loop right where PyTorch calls it. There is no")
    print("queue of kernel launches to record and replay, so CUDA graphs (and")
    print("mode='reduce-overhead') do not apply. Each op above costs PyTorch's work")
    print("(the Python call, dispatch, allocating the output) plus a loop over")
    print(f"{SIZE * 4} bytes.")
# --8<-- [end:graph]
if device == "cuda":
    results["graph_matches_eager"] = graph_matches

# --8<-- [start:compiled]
if device == "cuda":
    # Dynamo unrolls the Python loop into 100 multiplications; Inductor fuses them
    # into one kernel, launched from Python (default) or replayed from a CUDA graph.
    fused = torch.compile(chain)
    replayed = torch.compile(chain, mode="reduce-overhead")
    matches = {}
    for name, fn in [("compiled", fused), ("reduce_overhead", replayed)]:
        for _ in range(3):  # compile, then let CUDA graph trees record on a later call
            out = fn(x)
        matches[name] = torch.allclose(out, chain(x), rtol=1e-4)
        print(f"{name} matches eager: {matches[name]}")
    candidates.update(compiled=(fused, x), reduce_overhead=(replayed, x))
    timing = measure(candidates)  # eager, replay, fused, fused and replayed
    for name, label in [("eager", "eager, one launch per op"),
                        ("cuda_graph", "CUDA graph replay, one launch"),
                        ("compiled", "torch.compile, fused kernel"),
                        ("reduce_overhead", 'mode="reduce-overhead"')]:
        report(label, timing[name])
else:
    print("Skipped on CPU: torch.compile would fuse the chain into one C++ loop,")
    print("a fusion story (see the Inductor page), not a launch-overhead one.")
# --8<-- [end:compiled]
if device == "cuda":
    results["compiled_matches_eager"] = matches["compiled"]
    results["reduce_overhead_matches_eager"] = matches["reduce_overhead"]
results["timing"] = timing
results["per_op_us"] = {name: m.median * 1e6 / N_OPS for name, m in timing.items()}
