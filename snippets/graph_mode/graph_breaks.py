"""TorchDynamo and graph breaks: a `print` between layers splits the forward into two graphs.

    python snippets/graph_mode/graph_breaks.py

`torch._dynamo.explain` traces the forward once and reports how many graphs Dynamo captured, how many
graph breaks split them and why. Then both versions (with and without the print) are compiled and timed.
Runs on CUDA when torch sees a GPU, else on the CPU; writes results.json to $SNIPPET_OUTPUT_DIR or to a
fresh temporary folder.
"""

import contextlib
import io
import json
import os
import tempfile
from pathlib import Path

import torch
from torch.utils import benchmark

OUT = Path(os.environ.get("SNIPPET_OUTPUT_DIR") or tempfile.mkdtemp(prefix="graph_breaks-"))
device = "cuda" if torch.cuda.is_available() else "cpu"
results = {"device": device}


# --8<-- [start:models]
class ChattyMLP(torch.nn.Module):
    """Three layers with a print in the middle: Dynamo cannot put a print into a graph."""

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
# Small layers, so the fixed cost of leaving and re-entering compiled code is not hidden under the math.
width, batch = (256, 32) if device == "cuda" else (64, 16)
chatty = ChattyMLP(width).to(device).eval()
quiet = QuietMLP(width).to(device).eval()
quiet.load_state_dict(chatty.state_dict())
x = torch.randn(batch, width, device=device)

explained = {}
for name, model in [("with print", chatty), ("without print", quiet)]:
    torch._dynamo.reset()
    report = torch._dynamo.explain(model)(x)  # traces; runs the print once, as eager would
    # Print chosen fields only: the whole report also lists every guard, with object addresses.
    ops = [[getattr(op, "__name__", str(op)) for op in graph_ops] for graph_ops in report.ops_per_graph]
    reasons = [r.reason.splitlines()[0] for r in report.break_reasons]
    print(f"{name}: {report.graph_count} graph(s), {report.graph_break_count} graph break(s)")
    for i, graph_ops in enumerate(ops):
        print(f"  graph {i + 1}: {', '.join(graph_ops)}")
    for i, (reason, r) in enumerate(zip(reasons, report.break_reasons)):
        frame = r.user_stack[-1] if r.user_stack else None
        where = f" at line {frame.lineno}: {frame.line.strip()}" if frame else ""
        print(f"  break {i + 1}{where}\n    reason: {reason}")
    # Each captured graph, for the diagram on the page (scripts/render_assets.py draws *.fxgraph.txt).
    (OUT / f"{name.replace(' ', '_')}.fxgraph.txt").write_text("".join(str(g.graph) for g in report.graphs))
    explained[name] = {
        "graph_count": report.graph_count,
        "graph_break_count": report.graph_break_count,
        "break_reasons": reasons,
        "ops_per_graph": ops,
    }
# --8<-- [end:explain]
results["explain"] = explained


# --8<-- [start:timing]
torch._dynamo.reset()
compiled_chatty = torch.compile(chatty)
compiled_quiet = torch.compile(quiet)
timings = {}
# The print writes to an in-memory buffer while timing, so the terminal is not flooded; its cost stays in.
with torch.no_grad(), contextlib.redirect_stdout(io.StringIO()):
    for fn in (compiled_chatty, compiled_quiet):
        for _ in range(3):
            fn(x)  # compile (two graphs for the chatty model, one for the quiet one), then warm up
    same = torch.allclose(compiled_chatty(x), compiled_quiet(x)) and torch.allclose(compiled_quiet(x), quiet(x), atol=1e-5)
    for name, fn in [("eager, print", chatty), ("eager, no print", quiet),
                     ("compiled, print (2 graphs)", compiled_chatty), ("compiled, no print (1 graph)", compiled_quiet)]:
        t = benchmark.Timer("fn(x)", globals={"fn": fn, "x": x}).blocked_autorange(min_run_time=0.3)
        timings[name] = {"median_us": t.median * 1e6, "iqr_us": t.iqr * 1e6, "timings": len(t.times)}
for name, t in timings.items():
    print(f"{name:<30} {t['median_us']:9.1f} us median (IQR {t['iqr_us']:.1f} us, {t['timings']} timings)")
print(f"all four give the same result: {same}")
broken = timings["compiled, print (2 graphs)"]["median_us"]
whole = timings["compiled, no print (1 graph)"]["median_us"]
print(f"two graphs minus one graph: {broken - whole:+.1f} us per call ({broken / whole:.2f}x the one-graph time)")
# --8<-- [end:timing]
results["timing"] = {"same_result": bool(same), "break_cost_us": broken - whole, "break_ratio": broken / whole,
                     **{k.split(" (")[0].replace(", ", "_").replace(" ", "_"): v for k, v in timings.items()}}

(OUT / "results.json").write_text(json.dumps(results, indent=2))
