"""Common graph-break triggers, each in a tiny function, and two ways to find breaks in your own code.

    python snippets/graph_mode/break_triggers.py

For every case, `torch._dynamo.explain` reports the graphs and breaks, and a counting backend (it only
counts the graphs Dynamo hands it and runs them as they are) says how many graphs were compiled over three
calls with fresh random inputs. Then the same breaks are found through the `graph_breaks` log
(what TORCH_LOGS=graph_breaks prints). Runs on CUDA when torch sees a GPU, else on the CPU; writes
results.json to $SNIPPET_OUTPUT_DIR or to a fresh temporary folder.
"""

import contextlib
import io
import json
import logging
from logging.handlers import BufferingHandler
import os
import re
import tempfile
from pathlib import Path

import numpy as np
import torch

OUT = Path(os.environ.get("SNIPPET_OUTPUT_DIR") or tempfile.mkdtemp(prefix="break_triggers-"))
device = "cuda" if torch.cuda.is_available() else "cpu"
results = {"device": device}


# --8<-- [start:cases]
def uses_print(x):
    y = torch.relu(x)
    print("relu done")  # I/O is a side effect Dynamo will not replay inside a graph
    return y * 2


def branches_on_data(x):
    if x.sum() > 0:  # which branch runs depends on the values, not on shapes Dynamo can guard on
        return x * 2
    return x - 1


def calls_numpy_tanh(x):
    # Dynamo rewrites many NumPy calls on tensors into torch ops (torch._numpy), so this stays in the graph.
    return torch.from_numpy(np.tanh(torch.relu(x).cpu().numpy())).to(x.device) + 1


def calls_numpy_interp(x):
    # np.interp has no torch._numpy model: Dynamo must leave the graph to let NumPy run it.
    y = np.interp(torch.relu(x).cpu().numpy(), [0.0, 1.0], [0.0, 10.0])
    return torch.from_numpy(y).to(x.device) * 2


def calls_item(x):
    scale = x.abs().max().item()  # a Python float: a value the graph cannot hold as a tensor
    return x / scale


def calls_tolist(x):
    # Each row's maximum becomes a Python float that Dynamo bakes into the graph as a constant.
    return torch.tensor([max(row) for row in x.tolist()], device=x.device) + x[:, 0]
# --8<-- [end:cases]


def first_lines(reason):
    """The reason's first line, and its 'Explanation:' line if it has one, with addresses made stable."""
    lines = [line.strip() for line in reason.splitlines() if line.strip()]
    explanation = next((line for line in lines if line.startswith("Explanation:")), "")
    clean = lambda s: re.sub(r" at 0x[0-9a-f]+", "", s)  # noqa: E731
    return clean(lines[0]), clean(explanation.removeprefix("Explanation: "))


# --8<-- [start:table]
def counting_backend(counter):
    def backend(graph_module, example_inputs):
        counter.append(graph_module)  # one entry per graph Dynamo captured and compiled
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
]
torch.manual_seed(0)
inputs = [torch.randn(4, 4, device=device) for _ in range(3)]
table = {}
print(f"{'trigger':<35} {'graphs':>6} {'breaks':>6} {'compiled':>8}  first line of the reason")
for name, fn, config in cases:
    # The cases' own output ("relu done") goes to a buffer, so it does not land in the table.
    with torch._dynamo.config.patch(**config), contextlib.redirect_stdout(io.StringIO()):
        torch._dynamo.reset()
        report = torch._dynamo.explain(fn)(inputs[0])
        torch._dynamo.reset()
        graphs = []
        compiled = torch.compile(fn, backend=counting_backend(graphs))
        for x in inputs:  # three calls, fresh values each time, same shape
            compiled(x)
    reasons = [first_lines(r.reason) for r in report.break_reasons]
    row = {"graph_count": report.graph_count, "graph_break_count": report.graph_break_count,
           "graphs_compiled_for_3_inputs": len(graphs), "reasons": [r[0] for r in reasons],
           "explanations": [r[1] for r in reasons]}
    table[name] = row
    first = reasons[0][0] if report.graph_break_count else "-"
    print(f"{name:<35} {row['graph_count']:>6} {row['graph_break_count']:>6} {len(graphs):>8}  {first}")
    for _, explanation in reasons[: report.graph_break_count]:
        if explanation:
            print(f"{'':<60}{explanation[:80]}")
# --8<-- [end:table]
results["table"] = table


# --8<-- [start:logs]
collect = BufferingHandler(capacity=100_000)  # keeps the records, without stderr's format
dynamo_log = logging.getLogger("torch._dynamo")  # the graph_breaks artifact logs under it
torch._logging.set_logs(graph_breaks=True)  # the same switch as TORCH_LOGS=graph_breaks
dynamo_log.addHandler(collect)
try:
    torch._dynamo.reset()
    with contextlib.redirect_stdout(io.StringIO()):
        torch.compile(uses_print, backend="eager")(inputs[0])
    torch.compile(calls_item, backend="eager")(inputs[0])
finally:
    dynamo_log.removeHandler(collect)
    torch._logging.set_logs()  # back to the defaults, so later code logs as before

breaks_logged = []
for message in (record.getMessage() for record in collect.buffer):
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    where = re.search(r"Graph break in user code at (.+):(\d+)", message)
    if not where:
        continue
    reason = next((line for line in lines if line.startswith("Explanation:")), lines[1])
    entry = {"file": Path(where.group(1)).name, "line": int(where.group(2)), "explanation": reason}
    breaks_logged.append(entry)
    print(f"graph break in {entry['file']}:{entry['line']}\n  {reason[:110]}")
print(f"{len(breaks_logged)} graph breaks logged")
# --8<-- [end:logs]
results["logs"] = breaks_logged

(OUT / "results.json").write_text(json.dumps(results, indent=2))
