"""TorchDynamo and graph breaks: a `print` between layers splits the forward in two.

    python snippets/graph_mode/graph_breaks.py

`torch._dynamo.explain` traces the forward once and reports how many graphs Dynamo
captured, how many graph breaks split them and why. Then both versions (with and
without the print) are compiled and timed. Runs on CUDA when torch sees a GPU, else
on the CPU.
"""

import contextlib
import io

import torch
from torch.utils import benchmark

device = "cuda" if torch.cuda.is_available() else "cpu"
results = {"device": device}


# --8<-- [start:models]
class ChattyMLP(torch.nn.Module):
    """Three layers with a print in the middle: a print cannot go into a graph."""

    def __init__(self, width):
        super().__init__()
        self.linear1 = torch.nn.Linear(width, width)
        self.linear2 = torch.nn.Linear(width, width)
        self.linear3 = torch.nn.Linear(width, width)

    def forward(self, x):
        x = self.linear2(torch.relu(self.linear1(x)))  # graph 1
        print(f"after linear2: {tuple(x.shape)}")  # side effect: the graph ends here
        return torch.sigmoid(self.linear3(x))  # graph 2, traced from a resume function


class QuietMLP(ChattyMLP):
    """The same layers and weights, no print: one graph from input to output."""

    def forward(self, x):
        x = self.linear2(torch.relu(self.linear1(x)))
        return torch.sigmoid(self.linear3(x))
# --8<-- [end:models]


# --8<-- [start:explain]
# Small layers, so the fixed cost of leaving and re-entering compiled code is not
# hidden under the math.
width, batch = (256, 32) if device == "cuda" else (64, 16)
chatty = ChattyMLP(width).to(device).eval()
quiet = QuietMLP(width).to(device).eval()
quiet.load_state_dict(chatty.state_dict())
x = torch.randn(batch, width, device=device)

reports = {}
for name, model in [("with print", chatty), ("without print", quiet)]:
    torch._dynamo.reset()
    report = torch._dynamo.explain(model)(x)  # traces; runs the print once, as eager
    reports[name] = report
    # Chosen fields only: the whole report also lists every guard, with addresses.
    print(f"{name}: {report.graph_count} graph(s), "
          f"{report.graph_break_count} graph break(s)")
    for i, ops in enumerate(report.ops_per_graph):
        names = [getattr(op, "__name__", str(op)) for op in ops]
        print(f"  graph {i + 1}: {', '.join(names)}")
    for i, r in enumerate(report.break_reasons):
        frame = r.user_stack[-1] if r.user_stack else None
        where = f" at line {frame.lineno}: {frame.line.strip()}" if frame else ""
        print(f"  break {i + 1}{where}\n    reason: {r.reason.splitlines()[0]}")
# --8<-- [end:explain]
results["explain"] = {
    name.replace(" ", "_"): {
        "graph_count": r.graph_count,
        "graph_break_count": r.graph_break_count,
        "break_reasons": [b.reason.splitlines()[0] for b in r.break_reasons],
        "ops_per_graph": [[getattr(op, "__name__", str(op)) for op in ops]
                          for ops in r.ops_per_graph],
    }
    for name, r in reports.items()
}
# The FX graphs Dynamo captured around the print: one frame each in a diagram.
results["graphs_with_print"] = reports["with print"].graphs


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


# --8<-- [start:timing]
torch._dynamo.reset()
compiled_chatty = torch.compile(chatty)
compiled_quiet = torch.compile(quiet)
versions = {"eager, print": chatty, "eager, no print": quiet,
            "compiled, print (2 graphs)": compiled_chatty,
            "compiled, no print (1 graph)": compiled_quiet}
# While timing, the print writes to an in-memory buffer, not the terminal; its cost
# stays in.
with torch.no_grad(), contextlib.redirect_stdout(io.StringIO()):
    same = all(torch.allclose(fn(x), quiet(x), atol=1e-5) for fn in versions.values())
    timings = measure({name: (fn, x) for name, fn in versions.items()})
for name, m in timings.items():
    print(f"{name:<30} {m.median * 1e6:9.1f} us median "
          f"(IQR {m.iqr * 1e6:.1f} us, n = {len(m.times)})")
print(f"all four give the same result: {same}")
broken = timings["compiled, print (2 graphs)"].median
whole = timings["compiled, no print (1 graph)"].median
print(f"median with the break minus median without: {(broken - whole) * 1e6:+.1f} us")
# --8<-- [end:timing]
results["same_result"] = same
results["timing"] = {
    "eager_print": timings["eager, print"],
    "eager_no_print": timings["eager, no print"],
    "compiled_print": timings["compiled, print (2 graphs)"],
    "compiled_no_print": timings["compiled, no print (1 graph)"],
}
results["break_cost_us"] = (broken - whole) * 1e6
