"""Dynamo's side of torch.compile: a backend that prints every graph it is handed.

    python snippets/dissecting/dynamo_backend.py

A torch.compile backend is any callable taking (GraphModule, example inputs) and
returning something to run. This one prints the graph and returns its forward unchanged,
so nothing is optimised: we only watch what Dynamo extracts from the Python frame.
"""

import torch

device = "cuda" if torch.cuda.is_available() else "cpu"
results = {}
results["device"] = device


# --8<-- [start:backend]
graphs = []  # every graph a backend call received


def printing_backend(gm: torch.fx.GraphModule, example_inputs):
    graphs.append(gm)
    shapes = ", ".join(f"{tuple(t.shape)} {str(t.dtype).removeprefix('torch.')}"
                       for t in example_inputs)
    print(f"backend call {len(graphs)}: a graph of {len(gm.graph.nodes)} nodes, "
          f"inputs {shapes}")
    print(gm.code.strip())
    return gm.forward  # run the captured graph as it is
# --8<-- [end:backend]


# --8<-- [start:function]
def soft_sign_gate(a, b):
    x = a / (torch.abs(a) + 1)
    scale = sum(k * k for k in range(4))  # plain Python, run while tracing: 14
    return x * b * scale
# --8<-- [end:function]


# --8<-- [start:calls]
compiled = torch.compile(soft_sign_gate, backend=printing_backend)
a, b = torch.randn(8, device=device), torch.randn(8, device=device)
for call in range(1, 4):
    print(f"-- call {call}")
    out = compiled(a * call, b)  # same shapes and dtypes: the guards pass after call 1
print(f"3 calls, {len(graphs)} graph(s) captured")
matches = torch.allclose(out, soft_sign_gate(a * 3, b))
print(f"compiled result matches eager: {matches}")
# --8<-- [end:calls]
results["graph"] = graphs[0]
results.update(graph_count=len(graphs), calls=3, matches=matches,
               ops=[n.target.__name__ for n in graphs[0].graph.nodes
                    if n.op == "call_function"],
               code=graphs[0].code.strip())

graphs_before = len(graphs)


# --8<-- [start:loops]
def sum_of_squares(xs):
    squares = [x * x for x in xs]  # a list comprehension over tensors
    total = squares[0]
    for square in squares[1:]:     # a Python loop over them
        total = total + square
    return total


xs = [torch.randn(8, device=device) for _ in range(3)]
# Dynamo runs the comprehension and the loop as it traces, so it unrolls them: one
# mul per tensor and one add per loop step, all in one graph.
explained = torch._dynamo.explain(sum_of_squares)(xs)
print(f"explain: {explained.graph_count} graph(s), "
      f"{explained.graph_break_count} graph break(s)")
out = torch.compile(sum_of_squares, backend=printing_backend)(xs)
print(f"compiled result matches eager: {torch.allclose(out, sum_of_squares(xs))}")
# --8<-- [end:loops]
loop_ops = [n.target.__name__ for n in graphs[-1].graph.nodes
            if n.op == "call_function"]
results["loops_graph"] = graphs[-1]
results["loops"] = {"graph_count": len(graphs) - graphs_before,
                    "explain_graphs": explained.graph_count,
                    "explain_breaks": explained.graph_break_count,
                    "ops": loop_ops, "items": len(xs),
                    "matches": torch.allclose(out, sum_of_squares(xs))}
