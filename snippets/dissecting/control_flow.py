"""Data-dependent control flow, captured by torch.compile, torch.cond, torch.export,
and, for comparison, TorchScript (torch.jit.trace, torch.jit.script) and torch.fx.

    python snippets/dissecting/control_flow.py

The branch taken depends on the values in a tensor, not on its shape or dtype. Dynamo
splits the function at the branch (a graph break); torch.cond keeps both branches in
one graph; torch.export refuses the plain `if` and saves the torch.cond version whole,
also when its branches return different shapes. A tracer that records one run bakes
one branch in; TorchScript's compiler reads the source and keeps the `if`; FX's
symbolic tracer refuses.
"""

import re
import textwrap
import warnings

import torch
import torch.fx
from torch.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode

device = "cuda" if torch.cuda.is_available() else "cpu"
results = {}
results["device"] = device
# torch.jit.trace and torch.jit.script warn that they are deprecated: expected here.
warnings.filterwarnings("ignore", message=r".*torch\.jit\.\w+.* is deprecated",
                        category=DeprecationWarning)


# --8<-- [start:function]
def route(x, y):
    # Which branch runs depends on the *values* in x: its shape and dtype do not tell.
    if x.sum() > 0:
        return torch.sin(y)
    return torch.cos(y)


positive = torch.ones(4, device=device)    # takes the sin branch
negative = -torch.ones(4, device=device)   # takes the cos branch
y = torch.linspace(0, 1, 4, device=device)
# --8<-- [end:function]

# --8<-- [start:compile]
explained = torch._dynamo.explain(route)(negative, y)
print(f"graphs: {explained.graph_count}, graph breaks: {explained.graph_break_count}")
for reason in explained.break_reasons:
    print("break reason:", str(reason.reason).splitlines()[0])
compiled = torch.compile(route)
compile_right = all(torch.allclose(compiled(x, y), route(x, y))
                    for x in (positive, negative))
print(f"torch.compile correct on both branches: {compile_right}")
# --8<-- [end:compile]
results["compile"] = {"graphs": explained.graph_count,
                      "breaks": explained.graph_break_count,
                      "correct": compile_right}
results["compile_graphs"] = explained.graphs  # the graphs on either side of the break


# --8<-- [start:cond]
def route_cond(x, y):
    # Both branches become subgraphs; the predicate, a tensor, is evaluated at run time.
    return torch.cond(x.sum() > 0, torch.sin, torch.cos, (y,))


torch._dynamo.reset()
explained = torch._dynamo.explain(route_cond)(negative, y)
print(f"graphs: {explained.graph_count}, graph breaks: {explained.graph_break_count}")
compiled = torch.compile(route_cond, fullgraph=True)  # fullgraph: a break is an error
cond_right = all(torch.allclose(compiled(x, y), route(x, y))
                 for x in (positive, negative))
print(f"torch.cond correct on both branches: {cond_right}")
# --8<-- [end:cond]
results["cond"] = {"graphs": explained.graph_count,
                   "breaks": explained.graph_break_count,
                   "correct": cond_right}
results["cond_graph"] = explained.graphs[0]


# --8<-- [start:export_if]
class AsModule(torch.nn.Module):  # torch.export takes a module
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x, y):
        return self.fn(x, y)


try:
    torch.export.export(AsModule(route), (negative, y))
    export_error = None
except GuardOnDataDependentSymNode as error:  # the `if` asks for a value it lacks
    export_error = {"type": type(error).__name__,
                    "message": str(error).splitlines()[0]}
    print(textwrap.fill(f"{export_error['type']}: {export_error['message']}", 80))
# --8<-- [end:export_if]
results["export_if"] = export_error


# --8<-- [start:export_cond]
exported = torch.export.export(AsModule(route_cond), (negative, y))
for line in exported.graph_module.code.strip().splitlines():
    print(line.split(";  ")[0])  # without the "x = None" that frees each value
program = exported.module()  # runs the saved graph: no Python `if`, no Dynamo
export_right = all(torch.allclose(program(x, y), route(x, y))
                   for x in (positive, negative))
print(f"exported program correct on both branches: {export_right}")
# --8<-- [end:export_cond]
results["export_cond"] = {
    "correct": export_right,
    "cond_nodes": sum(n.target is torch.ops.higher_order.cond
                      for n in exported.graph.nodes)}
results["export_graph"] = exported.graph_module


# --8<-- [start:cond_shapes]
class FirstRows(torch.nn.Module):
    def forward(self, x, y):
        # Two rows on one branch, all four on the other: the size is a value too.
        return torch.cond(x.sum() > 0, lambda y: y[:2] * 2, lambda y: y * 3, (y,))


exported = torch.export.export(FirstRows(), (negative, y))
checks = re.findall(r"for expression (.+?) on node", exported.graph_module.code)
print(f"checks export added on the output's size: {checks}")  # u0: the size
shapes = [tuple(exported.module()(x, y).shape) for x in (positive, negative)]
compiled = torch.compile(FirstRows(), fullgraph=True)
compiled_shapes = [tuple(compiled(x, y).shape) for x in (positive, negative)]
print(f"output shapes, exported: {shapes}, compiled: {compiled_shapes}")
# --8<-- [end:cond_shapes]
results["cond_shapes"] = {
    "checks": checks,
    "exported": shapes, "compiled": compiled_shapes}

# --8<-- [start:jit_trace]
with warnings.catch_warnings():
    # Tracing warns that the bool() of a tensor is recorded as a constant
    # (TracerWarning): the warning this section is about, silenced to keep output short.
    warnings.filterwarnings("ignore", category=torch.jit.TracerWarning)
    traced = torch.jit.trace(route, (positive, y))  # one run, on the sin branch
trace_right = torch.allclose(traced(negative, y), route(negative, y))
print("traced code:", traced.code.strip().splitlines()[-1].strip())
print(f"negative x: traced gives {[round(v, 3) for v in traced(negative, y).tolist()]}")
print(f"            eager gives  {[round(v, 3) for v in route(negative, y).tolist()]}")
print(f"traced result correct: {trace_right}")
# --8<-- [end:jit_trace]
results["jit_trace"] = {
    "correct_on_other_branch": trace_right,
    "correct_on_traced_branch": torch.allclose(traced(positive, y), route(positive, y))}

# --8<-- [start:jit_script]
scripted = torch.jit.script(route)  # compiles the source: the `if` stays an `if`
print(scripted.code.strip())
script_right = all(torch.allclose(scripted(x, y), route(x, y))
                   for x in (positive, negative))
print(f"scripted result correct on both branches: {script_right}")
# --8<-- [end:jit_script]
results["jit_script"] = {"correct": script_right,
                         "keeps_branch": "prim::If" in str(scripted.graph)}

# --8<-- [start:fx]
try:
    torch.fx.symbolic_trace(route)
    fx_error = None
except torch.fx.proxy.TraceError as error:
    fx_error = {"type": f"{type(error).__module__}.{type(error).__name__}",
                "message": str(error).splitlines()[0]}
    print(f"{fx_error['type']}: {fx_error['message']}")
# --8<-- [end:fx]
results["fx_error"] = fx_error
