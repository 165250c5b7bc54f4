"""Dynamic shapes: what recompiles when a size changes, and what a symbolic size costs.

    python snippets/dissecting/dynamic_shapes.py

Compiles one function under the default automatic dynamic shapes, with dynamic=True and
with mark_dynamic, counting graphs and printing each graph's inputs, with the symbolic
sizes (s0, s1: renamed in order of appearance, as the names differ between releases).
Prints the guards of a static and of a dynamic graph (TORCH_LOGS=guards, caught from the
logger), then times calls of both with Inductor.
"""

import functools
import logging
import re
from logging.handlers import BufferingHandler

import torch
from torch.utils import benchmark

device = "cuda" if torch.cuda.is_available() else "cpu"
results = {}
results["device"] = device
torch.manual_seed(0)


# --8<-- [start:function]
def scale_rows(x):
    # x.shape[0] is a Python int in eager mode; in a dynamic graph it is a symbol
    return torch.softmax(x, dim=-1) * x.shape[0]
# --8<-- [end:function]


# --8<-- [start:backend]
symbols = {}  # Dynamo's names for symbolic sizes (s77, s27, ...) -> s0, s1, ...


def renamed(text):
    def rename(match):
        return symbols.setdefault(match.group(0), f"s{len(symbols)}")
    return re.sub(r"\bs\d+\b", rename, text)


graphs = []


def describe(gm):
    """A graph's inputs (sizes as Dynamo sees them) and its one multiply."""
    inputs = []
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            value = node.meta["example_value"]
            kind = f"Tensor{list(value.shape)}" if isinstance(value, torch.Tensor) \
                else type(value).__name__
            inputs.append(f"{node.name}: {kind}")
    mul = next(line for line in gm.code.splitlines() if "softmax *" in line)
    return renamed(f"({', '.join(inputs)}) -> {mul.split(';')[0].strip()}")


def recording_backend(gm, example_inputs):
    graphs.append(gm)
    print(f"  graph {len(graphs)}: {describe(gm)}")
    return gm.forward
# --8<-- [end:backend]


# --8<-- [start:capture]
def logged(artifact, fn):
    """Run fn() with TORCH_LOGS=<artifact> on; return the messages, kept off stderr."""
    logger = logging.getLogger(f"torch._dynamo.guards.__{artifact}")
    handler, propagate = BufferingHandler(capacity=100_000), logger.propagate
    torch._logging.set_logs(**{artifact: True})
    logger.addHandler(handler)
    logger.propagate = False  # keep the messages off torch's stderr handler
    try:
        fn()
    finally:
        logger.propagate = propagate
        logger.removeHandler(handler)
        torch._logging.set_logs()  # back to the default: nothing logged
    return [record.getMessage() for record in handler.buffer]
# --8<-- [end:capture]


def failed_guard(messages):
    """The guard of the newest cached graph that failed, from a recompiles message."""
    if not messages:
        return None
    reasons = re.findall(r"- \d+/\d+: (.*)", messages[0])
    return re.sub(r"\s+#.*$", "", reasons[0]) if reasons else None


# --8<-- [start:run_sizes]
shapes = [(8, 16), (12, 16), (20, 16), (20, 32), (1, 16)]


def run_sizes(compiled, shapes, mark=None):
    """Call compiled once per shape; print graphs so far and why it recompiled."""
    counts = {}
    for shape in shapes:
        x = torch.randn(*shape, device=device)
        if mark is not None:
            torch._dynamo.mark_dynamic(x, mark)  # dynamic from the first compile
        before = len(graphs)
        why = failed_guard(logged("recompiles", functools.partial(compiled, x)))
        if len(graphs) == before:
            note = "reused"
        else:
            note = f"failed: {why}" if before else "first call"
        print(f"shape {str(shape):<9} -> graphs so far: {len(graphs)} ({note})")
        counts[str(shape)] = len(graphs)
    return counts
# --8<-- [end:run_sizes]


# --8<-- [start:static]
print("dynamic=False:")
static = run_sizes(torch.compile(scale_rows, backend=recording_backend, dynamic=False),
                   shapes)
# --8<-- [end:static]
results["static"] = {"graphs": len(graphs), "after": static,
                     "described": [describe(g) for g in graphs]}

# --8<-- [start:automatic]
torch._dynamo.reset()
graphs.clear()
print("dynamic=None (the default):")
automatic = run_sizes(torch.compile(scale_rows, backend=recording_backend), shapes)
# --8<-- [end:automatic]
results["automatic"] = {"graphs": len(graphs), "after": automatic,
                        "described": [describe(g) for g in graphs]}

# --8<-- [start:dynamic_true]
torch._dynamo.reset()
graphs.clear()
print("dynamic=True:")
dynamic = run_sizes(torch.compile(scale_rows, backend=recording_backend, dynamic=True),
                    shapes)
# --8<-- [end:dynamic_true]
first_dynamic = renamed(graphs[0].code)
results["dynamic_true"] = {"graphs": len(graphs), "after": dynamic,
                           "described": [describe(g) for g in graphs],
                           "first_graph_code": first_dynamic,
                           "symbolic_in_graph": bool(
                               re.search(r"\* s\d+", first_dynamic))}

# --8<-- [start:mark_dynamic]
torch._dynamo.reset()
graphs.clear()
print("dynamic=None, dimension 0 marked dynamic on every input:")
compiled = torch.compile(scale_rows, backend=recording_backend)
marked = run_sizes(compiled, shapes[:4], mark=0)
# --8<-- [end:mark_dynamic]
results["mark_dynamic"] = {"graphs": len(graphs), "after": marked,
                           "described": [describe(g) for g in graphs]}


# --8<-- [start:guards]
def size_guards(compiled, x):
    """The guards on x's sizes and strides, as TORCH_LOGS=guards prints them."""
    messages = logged("guards", lambda: compiled(x))
    tree = next(m for m in messages if "TREE_GUARD_MANAGER" in m).splitlines()
    found = []
    for line in tree:
        line = re.sub(r"\s+#.*$", "", line)  # drop the source-line comment
        match = re.search(r"TENSOR_MATCH: .*(size=\[.*?\], stride=\[.*?\])", line)
        if match:
            found.append(f"TENSOR_MATCH L['x']: {match.group(1)}")
        elif "LAMBDA_GUARD" in line and re.search(r"\.(size|stride)\(\)", line):
            found.append(line.split("LAMBDA_GUARD: ")[1])
    return found


x = torch.randn(8, 16, device=device)
guards_of = {}
for dynamic in (False, True):
    torch._dynamo.reset()
    compiled = torch.compile(scale_rows, backend="eager", dynamic=dynamic)
    guards_of[dynamic] = size_guards(compiled, x)
    print(f"dynamic={dynamic}: {len(guards_of[dynamic])} guard(s) on sizes and strides")
    for guard in guards_of[dynamic]:
        print(f"  {guard}")
# --8<-- [end:guards]
results["guards"] = {"static": guards_of[False], "dynamic": guards_of[True]}


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


# --8<-- [start:cost]
# Rows of 1,024 floats; 4,096 rows on a GPU, 64 on a CPU (4 MiB or 256 KiB).
rows = 4096 if device == "cuda" else 64
x = torch.randn(rows, 1024, device=device)
torch._dynamo.reset()
static = torch.compile(scale_rows, dynamic=False)  # Inductor: sizes baked in
dynamic = torch.compile(scale_rows, dynamic=True)  # Inductor: sizes as symbols
same = torch.allclose(static(x), dynamic(x))
timing = measure({"static": (static, x), "dynamic": (dynamic, x)})
print(f"x: {tuple(x.shape)}, static and dynamic agree: {same}")
for name, m in timing.items():
    print(f"{name:<8} median {m.median * 1e6:8.1f} us  IQR {m.iqr * 1e6:6.1f} us  "
          f"n={len(m.times)}")
# --8<-- [end:cost]
results["timing"] = timing
results["cost"] = {"rows": rows, "columns": 1024, "agree": same}
