"""Common graph-break triggers, each in a tiny function, and the log that finds them.

    python snippets/graph_mode/break_triggers.py

For every case, `torch._dynamo.explain` reports the graphs and breaks, and a counting
backend (it counts the graphs Dynamo hands it and runs them as they are) says how
many graphs were compiled over three calls with fresh random inputs. Then breaks are
found through the `graph_breaks` log (what TORCH_LOGS=graph_breaks prints). Runs on
CUDA when torch sees a GPU, else on the CPU.
"""

import contextlib
import io
import logging
import re
from logging.handlers import BufferingHandler
from pathlib import Path

import numpy as np
import torch

device = "cuda" if torch.cuda.is_available() else "cpu"
results = {"device": device}


# --8<-- [start:cases]
def uses_print(x):
    y = torch.relu(x)
    print("relu done")  # I/O is a side effect Dynamo will not replay inside a graph
    return y * 2


def branches_on_data(x):
    if x.sum() > 0:  # the branch depends on values, not on shapes Dynamo can guard on
        return x * 2
    return x - 1


def calls_numpy_tanh(x):
    # Dynamo rewrites many NumPy calls on tensors into torch ops (torch._numpy).
    y = np.tanh(torch.relu(x).cpu().numpy())
    return torch.from_numpy(y).to(x.device) + 1


def calls_numpy_interp(x):
    # np.interp has no torch._numpy model: Dynamo must leave the graph to run it.
    y = np.interp(torch.relu(x).cpu().numpy(), [0.0, 1.0], [0.0, 10.0])
    return torch.from_numpy(y).to(x.device) * 2


def calls_item(x):
    scale = x.abs().max().item()  # a Python float, not a tensor
    return x / scale


def calls_tolist(x):
    y = x * 2  # graph 1 ends here: Dynamo cannot trace .tolist() on floats
    # The Python floats go on to the resume function's graph, as constants at first.
    return torch.tensor([max(row) for row in y.tolist()], device=x.device) + x[:, 0]


def starts_with_tolist(x):
    # The same break, with nothing before it: the graph before it is empty.
    return torch.tensor([max(row) for row in x.tolist()], device=x.device) + x[:, 0]


def list_comprehension(x):
    # A comprehension over a tensor's rows: Dynamo unrolls it, 4 rows, 4 relus.
    return torch.stack([torch.relu(row) * 2 for row in x]).sum(0)
# --8<-- [end:cases]


def first_lines(reason):
    """The reason's first line and its 'Explanation:' line, addresses made stable."""
    lines = [line.strip() for line in reason.splitlines() if line.strip()]
    explanation = next((line for line in lines if line.startswith("Explanation:")), "")
    clean = lambda s: re.sub(r" at 0x[0-9a-f]+", "", s)  # noqa: E731
    return clean(lines[0]), clean(explanation.removeprefix("Explanation: "))


# --8<-- [start:table]
def counting_backend(graphs):
    def backend(graph_module, example_inputs):
        graphs.append(graph_module)  # one entry per graph Dynamo compiles
        return graph_module.forward  # run it as traced: no Inductor, so this is quick
    return backend


cases = [
    ("print", uses_print, {}),
    ("if x.sum() > 0", branches_on_data, {}),
    ("np.tanh on .numpy()", calls_numpy_tanh, {}),
    ("np.interp on .numpy()", calls_numpy_interp, {}),
    (".item()", calls_item, {}),
    (".item(), capture_scalar_outputs", calls_item, {"capture_scalar_outputs": True}),
    (".tolist()", calls_tolist, {}),
    (".tolist() first", starts_with_tolist, {}),
    ("list comprehension", list_comprehension, {}),
]
torch.manual_seed(0)
inputs = [torch.randn(4, 4, device=device) for _ in range(3)]
reports, compiled_graphs = {}, {}
print(f"{'trigger':<33} {'graphs':>6} {'breaks':>6} {'compiled':>8}  reason")
for name, fn, config in cases:
    # The cases' own output ("relu done") goes to a buffer, not into the table.
    quiet = contextlib.redirect_stdout(io.StringIO())
    with torch._dynamo.config.patch(**config), quiet:
        torch._dynamo.reset()
        report = torch._dynamo.explain(fn)(inputs[0])
        torch._dynamo.reset()
        graphs = []
        compiled = torch.compile(fn, backend=counting_backend(graphs))
        for x in inputs:  # three calls, fresh values each time, same shape
            compiled(x)
    reports[name], compiled_graphs[name] = report, graphs
    reason = "-"
    if report.break_reasons:
        reason = first_lines(report.break_reasons[0].reason)[0]
    print(f"{name:<33} {report.graph_count:>6} {report.graph_break_count:>6} "
          f"{len(graphs):>8}  {reason}")
# --8<-- [end:table]
table = {}  # keyed by the function's name ("calls_item_captured" with the config)
for name, fn, config in cases:
    report = reports[name]
    reasons = [first_lines(r.reason) for r in report.break_reasons]
    key = fn.__name__ + ("_captured" if config else "")
    table[key] = {"case": name, "graph_count": report.graph_count,
                   "graph_break_count": report.graph_break_count,
                   "graphs_compiled_for_3_inputs": len(compiled_graphs[name]),
                   "reasons": [r[0] for r in reasons],
                   "explanations": [r[1] for r in reasons]}
results["table"] = table
# The two graphs Dynamo captured around .tolist(): before the break, and after it.
results["graphs_tolist"] = reports[".tolist()"].graphs


# --8<-- [start:logs]
collect = BufferingHandler(capacity=100_000)  # keeps the records, without a format
dynamo_log = logging.getLogger("torch._dynamo")  # the graph_breaks log is under it
torch._logging.set_logs(graph_breaks=True)  # the same switch as TORCH_LOGS=graph_breaks
dynamo_log.addHandler(collect)
try:
    for fn in (uses_print, calls_item, calls_tolist, starts_with_tolist):
        torch._dynamo.reset()
        with contextlib.redirect_stdout(io.StringIO()):
            torch.compile(fn, backend="eager")(inputs[0])
finally:
    dynamo_log.removeHandler(collect)
    torch._logging.set_logs()  # back to the defaults, so later code logs as before

logged = []
for message in (record.getMessage() for record in collect.buffer):
    where = re.search(r"Graph break in user code at (.+):(\d+)", message)
    if not where:
        continue
    # The message: where, "Graph Break Reason: ...", the gist, an explanation, hints.
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    gist = lines[2] if lines[1].startswith("Graph Break Reason") else lines[1]
    explanation = next(
        (line for line in lines if line.startswith("Explanation:")), "")
    logged.append((Path(where.group(1)).name, int(where.group(2)), gist, explanation))
    print(f"graph break in {Path(where.group(1)).name}:{where.group(2)}: {gist}")
    print(f"  {explanation}")
print(f"{len(logged)} graph breaks logged")
# --8<-- [end:logs]
results["logs"] = [{"file": f, "line": n, "gist": g, "explanation": e}
                   for f, n, g, e in logged]
