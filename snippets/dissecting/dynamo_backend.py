"""Dynamo's side of torch.compile: a backend that prints every graph it is handed, and when it is handed one.

    python snippets/dissecting/dynamo_backend.py

A torch.compile backend is any callable taking (GraphModule, example inputs) and returning something to
run. This one prints the graph and returns its forward unchanged, so nothing is optimised: we only watch
what Dynamo extracts from the Python frame. Writes results.json to $SNIPPET_OUTPUT_DIR, or to a fresh
temporary folder.
"""

import json
import os
import tempfile
from pathlib import Path

import torch

OUT = Path(os.environ.get("SNIPPET_OUTPUT_DIR") or tempfile.mkdtemp(prefix="dynamo_backend-"))
device = "cuda" if torch.cuda.is_available() else "cpu"
results = {"device": device}


# --8<-- [start:backend]
graphs = []  # every graph a backend call received


def printing_backend(gm: torch.fx.GraphModule, example_inputs):
    graphs.append(gm)
    shapes = ", ".join(f"{tuple(t.shape)} {str(t.dtype).removeprefix('torch.')}" for t in example_inputs)
    print(f"backend call {len(graphs)}: a graph of {len(gm.graph.nodes)} nodes, inputs {shapes}")
    print(gm.code.strip())
    return gm.forward  # run the captured graph as it is
# --8<-- [end:backend]


# --8<-- [start:function]
def soft_sign_gate(a, b):
    x = a / (torch.abs(a) + 1)
    scale = sum(k * k for k in range(4))  # plain Python: run while tracing, a constant (14) in the graph
    return x * b * scale
# --8<-- [end:function]


# --8<-- [start:calls]
compiled = torch.compile(soft_sign_gate, backend=printing_backend)
a, b = torch.randn(8, device=device), torch.randn(8, device=device)
for call in range(1, 4):
    print(f"-- call {call}")
    out = compiled(a * call, b)  # same shapes and dtypes each time: Dynamo's guards pass after the first call
print(f"3 calls, {len(graphs)} graph(s) captured")
matches = torch.allclose(out, soft_sign_gate(a * 3, b))
print(f"compiled result matches eager: {matches}")
# --8<-- [end:calls]

ops = [node.target.__name__ for node in graphs[0].graph.nodes if node.op == "call_function"]
results.update(graphs=len(graphs), calls=3, matches=matches, ops=ops, code=graphs[0].code.strip())
(OUT / "results.json").write_text(json.dumps(results, indent=2))
