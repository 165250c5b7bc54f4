"""Cutting compile time: a stack of N identical blocks compiled whole, against its
repeated block compiled once (regional compilation).

    python snippets/graph_mode/regional_compile.py

Builds a stack of N small transformer blocks for N = 1, 2, 4 and 8 and compiles it
two ways: torch.compile(model), one graph of every block, and block.compile() on each
block, where Dynamo compiles the first block and the others reuse its code. Times
each first call and counts the graphs and ops Dynamo traced, then times steady-state
calls of eager, whole and regional at each N. Last, calls four blocks compiled
regionally with new batch sizes, with automatic dynamic shapes and with
dynamic=False, and counts the graphs compiled after each call. Runs on CUDA when
torch sees a GPU, else on the CPU.
"""

import copy
import os
import sys
import time

import torch
import torch.nn.functional as F
from torch._dynamo.utils import counters
from torch.utils import benchmark

device = "cuda" if torch.cuda.is_available() else "cpu"
results = {"device": device}


# --8<-- [start:model]
class Block(torch.nn.Module):
    """Pre-norm transformer block: x + attention(norm(x)), then x + MLP(norm(x))."""

    def __init__(self, width=64, heads=2):
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = torch.nn.LayerNorm(width), torch.nn.LayerNorm(width)
        self.qkv = torch.nn.Linear(width, 3 * width)
        self.out = torch.nn.Linear(width, width)
        self.fc1 = torch.nn.Linear(width, 4 * width)
        self.fc2 = torch.nn.Linear(4 * width, width)

    def forward(self, x):  # x: (batch, tokens, width)
        qkv = self.qkv(self.norm1(x)).unflatten(-1, (3, self.heads, -1))
        q, k, v = qkv.permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.out(a.transpose(1, 2).flatten(2))
        return x + self.fc2(F.gelu(self.fc1(self.norm2(x))))


class Stack(torch.nn.Module):
    """N blocks in a row, as a language model repeats its layers."""

    def __init__(self, n):
        super().__init__()
        self.blocks = torch.nn.ModuleList(Block() for _ in range(n))

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x


def whole(model, **options):
    return torch.compile(model, **options)  # one graph: every block traced, compiled


def regional(model, **options):
    for block in model.blocks:
        block.compile(**options)  # each block's calls go through torch.compile
    return model


# Small, so compiling dominates: 4 sequences of 32 tokens, 64 wide. One thread: the
# CPU's two cores are shared with other work, and this model is too small to split.
torch.set_num_threads(1)
x = torch.randn(4, 32, 64, device=device)
DEPTHS = [1, 2, 4, 8]
# --8<-- [end:model]
results["depths"] = DEPTHS
results["shape"] = list(x.shape)
results["block_parameters"] = sum(p.numel() for p in Block().parameters())

# Python tells audit hooks about every process it starts: count the compilers.
COMPILERS = {"g++", "c++", "gcc", "cc", "clang", "clang++", "ptxas"}
compilers_run = []


def note_compiler(event, args):
    if event == "subprocess.Popen" and os.path.basename(str(args[0])) in COMPILERS:
        if not {"--version", "-v"} & set(map(str, args[1])):  # a compile, not a query
            compilers_run.append(args[0])


sys.addaudithook(note_compiler)


def first_call(compiled):
    """Seconds of the first call, and what Dynamo did in it."""
    counters.clear()
    compilers_run.clear()
    start = time.perf_counter()
    with torch.no_grad():
        compiled(x)
    if device == "cuda":
        torch.cuda.synchronize()
    return {"s": time.perf_counter() - start,
            "frames": counters["frames"]["ok"],  # frames Dynamo compiled
            "graphs": counters["stats"]["unique_graphs"],
            "ops": counters["stats"]["calls_captured"],  # calls Dynamo traced
            "compilers": len(compilers_run),
            "graph_cache_hits": counters["inductor"]["fxgraph_cache_hit"]}


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


load_before = os.getloadavg()[0]

# --8<-- [start:first_call]
# Every compile below does its graph work: none loads a graph from the FX graph cache
# (warm caches are another page). One compile thread, so compilers run in this process.
torch._inductor.config.fx_graph_cache = False
torch._inductor.config.compile_threads = 1
# Untimed: the first compile in a process builds C++'s precompiled header and one
# block's kernels. Blocks compiled together also fuse across the boundary between
# them, into kernels one block does not have: each whole stack is compiled once here
# too, to build them. The timed compiles then differ by their graph work alone:
# tracing, AOTAutograd, Inductor's lowering and its code generation.
warm_up = first_call(regional(Stack(1)))
kernels_built = []  # compilers each whole stack ran, after one block's
for n in DEPTHS:
    torch._dynamo.reset()
    kernels_built.append(first_call(whole(Stack(n)))["compilers"])


def compile_both(n, first):
    """A stack of n blocks, and a copy of it compiled each way, first call made."""
    torch._dynamo.reset()  # forget every compiled graph: each N starts from nothing
    torch.manual_seed(0)
    model = Stack(n).to(device).eval()
    compiled = {"eager": model}
    for way, make in (("whole", whole), ("regional", regional)):
        compiled[way] = make(copy.deepcopy(model))
        done = first_call(compiled[way])
        first[way].append(done)
        print(f"N = {n}, {way + ':':<9} first call {done['s']:5.2f} s; "
              f"{done['frames']} frame compiled, {done['graphs']} graph of "
              f"{done['ops']:3} ops; compilers run: {done['compilers']}")
    return model, compiled
# --8<-- [end:first_call]


# --8<-- [start:sweep]
first = {"whole": [], "regional": []}
steady = {"eager": [], "whole": [], "regional": []}
for n in DEPTHS:
    model, compiled = compile_both(n, first)
    with torch.no_grad():
        timings = measure({way: (fn, x) for way, fn in compiled.items()})
    for way, m in timings.items():
        steady[way].append(m)
    print(f"N = {n}, steady state: " + ", ".join(
        f"{way} {m.median * 1e6:,.0f} us" for way, m in timings.items())
        + f" (medians of {len(timings['eager'].times)} rounds)")
with torch.no_grad():
    same = torch.allclose(compiled["whole"](x), model(x), rtol=1e-4, atol=1e-4)
    same &= torch.allclose(compiled["regional"](x), model(x), rtol=1e-4, atol=1e-4)
print(f"whole and regional match eager at N = {DEPTHS[-1]}: {same}")
# --8<-- [end:sweep]


def as_timing(seconds, what):
    """A first call, one per process, in the form the recorder pools over processes."""
    us = seconds * 1e6
    return {"work": what, "threads": torch.get_num_threads(), "median_us": us,
            "iqr_us": 0.0, "q1_us": us, "q3_us": us, "n": 1, "times_us": [us]}


results["first_call"] = {way: {field: [d[field] for d in done] for field in done[0]}
                         for way, done in first.items()}
results["compile_s"] = {way: [d["s"] for d in done] for way, done in first.items()}
results["compile"] = {way: [as_timing(d["s"], f"first call, {way}, N = {n}")
                            for n, d in zip(DEPTHS, done)]
                      for way, done in first.items()}
results["warm_up"] = {**warm_up, "whole_compilers": kernels_built}
results["timing"] = steady
results["matches_eager"] = same
results["threads"] = torch.get_num_threads()


# --8<-- [start:dynamic]
# New batch sizes after the first, through four blocks compiled regionally: after
# each call, how many graphs has Dynamo compiled?
BATCHES = [4, 8, 16]
torch.manual_seed(0)
model = Stack(4).to(device).eval()
graphs_after = {}
for dynamic in (None, False):  # None: automatic dynamic shapes, the default
    torch._dynamo.reset()
    compiled = regional(copy.deepcopy(model), dynamic=dynamic)
    counters.clear()
    graphs = []
    for batch in BATCHES:
        with torch.no_grad():
            compiled(torch.randn(batch, 32, 64, device=device))
        graphs.append(counters["stats"]["unique_graphs"])
    graphs_after[str(dynamic)] = graphs
    print(f"dynamic={str(dynamic) + ':':<6} graphs compiled after "
          + ", ".join(f"batch {b}: {g}" for b, g in zip(BATCHES, graphs)))
# --8<-- [end:dynamic]
results["batches"] = BATCHES
results["graphs_after"] = graphs_after
results["load_average"] = {"before": load_before, "after": os.getloadavg()[0]}
