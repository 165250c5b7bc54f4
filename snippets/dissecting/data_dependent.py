"""Data-dependent shapes and the escape hatches: unbacked SymInts,
torch.library.custom_op and compiled autograd.

    python snippets/dissecting/data_dependent.py

Captures .item() and .nonzero(), whose results depend on a tensor's values, first as
graph breaks and then inside the graph as unbacked symbols; shows the error a branch on
such a symbol raises and the runtime assertion torch._check adds; compares mark_unbacked
with dynamic=True; wraps a NumPy function Dynamo cannot trace as a custom op; and
compiles a backward pass, hook included, with compiled autograd.
"""

import re

import numpy as np
import torch
from torch._inductor.utils import run_and_get_code

device = "cuda" if torch.cuda.is_available() else "cpu"
results = {}
results["device"] = device
torch.manual_seed(0)

graphs = []


def counting(gm, example_inputs):  # a backend that keeps each graph, run as traced
    graphs.append(gm)
    return gm.forward


def calls(gm):
    """The operations a graph calls, in order: its FX nodes less inputs and outputs."""
    return [getattr(node.target, "__name__", str(node.target))
            for node in gm.graph.nodes if node.op in ("call_function", "call_method")]


def first_line(error):
    return (str(error).strip().splitlines() or [""])[0]


# --8<-- [start:item]
x = torch.tensor([0.5, -1.0, 2.0, -0.25, 1.5, 3.0, -2.0, 0.75], device=device)


def scale_by_count(x):
    n = (x > 0).sum().item()  # a Python int whose value is in the tensor
    return x * n


report = torch._dynamo.explain(scale_by_count)(x)
print(f"default: {report.graph_count} graphs, break: "
      f"{first_line(report.break_reasons[0].reason)}")
torch._dynamo.config.capture_scalar_outputs = True  # keep .item() in the graph
torch.compile(scale_by_count, backend=counting, fullgraph=True)(x)
print(f"capture_scalar_outputs=True: {len(graphs)} graph calling {calls(graphs[-1])}")
# --8<-- [end:item]
results["item"] = {"graphs": report.graph_count,
                   "reason": first_line(report.break_reasons[0].reason),
                   "captured_graphs": len(graphs), "captured_calls": calls(graphs[-1])}


# --8<-- [start:guard]
def branch_on_count(x):
    n = (x > 0).sum().item()
    if n > 4:  # Python needs a bool, but n is only known when the graph runs
        return x * 2
    return x


torch._dynamo.reset()
try:
    torch.compile(branch_on_count, backend=counting, fullgraph=True)(x)
except torch._dynamo.exc.UserError as error:
    reason = next(line for line in str(error).splitlines() if "Could not guard" in line)
    print(f"fullgraph=True raised {type(error).__name__}: "
          f"{reason.split('(unhinted')[0].strip()}")
report = torch._dynamo.explain(branch_on_count)(x)  # without fullgraph: a break
print(f"without fullgraph: {report.graph_count} graphs")
# --8<-- [end:guard]
results["guard"] = {"error": reason.split("(unhinted")[0].strip(),
                    "graphs": report.graph_count}


# --8<-- [start:check]
def safe_mean(total, count):  # a helper that handles the empty case
    if count == 0:  # Python needs a bool: is the count zero?
        return torch.zeros_like(total)
    return total / count


def mean_of_positives(x):
    n = (x > 0).sum().item()
    return safe_mean(x.clamp(min=0).sum(), n)


def mean_of_positives_checked(x):
    n = (x > 0).sum().item()
    torch._check(n > 0)  # a fact the compiler may use, checked when the graph runs
    return safe_mean(x.clamp(min=0).sum(), n)
# --8<-- [end:check]


# --8<-- [start:check_calls]
torch._dynamo.reset()
try:
    torch.compile(mean_of_positives, backend=counting, fullgraph=True)(x)
except torch._dynamo.exc.UserError as error:
    unchecked = re.search(r"Could not guard on data-dependent expression .*?(?= \(unh)",
                          str(error)).group(0)
    print(f"without torch._check, fullgraph=True raised: {unchecked}")
graphs.clear()
checked = torch.compile(mean_of_positives_checked, backend=counting, fullgraph=True)
mean = checked(x)
asserts = list(dict.fromkeys(re.findall(r"expression (.+?) on node", graphs[-1].code)))
print(f"with torch._check: {len(graphs)} graph, mean {mean:.4f} "
      f"(eager {mean_of_positives(x):.4f}); the graph asserts {asserts}")
try:
    checked(-x.abs())  # no positive value: the fact is false for this input
except RuntimeError as error:
    broken = first_line(error)
    print(f"an input with no positive value: {broken}")
# --8<-- [end:check_calls]
results["check"] = {"unchecked_error": unchecked, "graphs": len(graphs),
                    "same": bool(torch.isclose(mean, mean_of_positives(x))),
                    "asserts": asserts, "broken": broken}


# --8<-- [start:nonzero]
def positive_positions(x):
    return (x > 0).nonzero().squeeze(1)  # how many: known only from the values


torch._dynamo.reset()
report = torch._dynamo.explain(positive_positions)(x)
print(f"default: {report.graph_count} graphs, break: "
      f"{first_line(report.break_reasons[0].reason)}")
torch._dynamo.config.capture_dynamic_output_shape_ops = True
torch._dynamo.reset()
graphs.clear()
positions = torch.compile(positive_positions, backend=counting, fullgraph=True)(x)
nonzero_asserts = re.findall(r"expression (.+?) on node", graphs[-1].code)
print(f"captured in {len(graphs)} graph: {positions.tolist()}; "
      f"it asserts {nonzero_asserts}")
# --8<-- [end:nonzero]
results["nonzero"] = {"graphs": report.graph_count,
                      "reason": first_line(report.break_reasons[0].reason),
                      "captured_graphs": len(graphs), "positions": positions.tolist(),
                      "asserts": nonzero_asserts}


# --8<-- [start:mark_unbacked]
def double(x):
    return x * 2


sizes = (8, 1, 0, 5)
compiled_for = {}
for how in ("dynamic=True", "mark_unbacked"):
    torch._dynamo.reset()
    graphs.clear()
    compiled = torch.compile(double, backend=counting,
                             dynamic=True if how == "dynamic=True" else None)
    for size in sizes:
        v = torch.randn(size, device=device)
        if how == "mark_unbacked":
            torch._dynamo.decorators.mark_unbacked(v, 0)  # no hint, no 0/1 special case
        compiled(v)
    compiled_for[how] = len(graphs)
    print(f"{how:<13} sizes {sizes}: {len(graphs)} graph(s)")
# --8<-- [end:mark_unbacked]
results["mark_unbacked"] = {"dynamic": compiled_for["dynamic=True"],
                           "unbacked": compiled_for["mark_unbacked"]}

# --8<-- [start:opaque]
XS = np.linspace(-3, 3, 13)
TABLE = np.tanh(XS)  # a lookup table, interpolated by NumPy


def lookup(x):
    return torch.from_numpy(np.interp(x.cpu().numpy(), XS, TABLE)).float().to(x.device)


def activation(x):
    return lookup(x * 2) + 1


report = torch._dynamo.explain(activation)(x)
print(f"plain function: {report.graph_count} graphs, break: "
      f"{first_line(report.break_reasons[0].reason)}")
# --8<-- [end:opaque]
results["opaque"] = {"graphs": report.graph_count,
                     "breaks": report.graph_break_count,
                     "reason": first_line(report.break_reasons[0].reason)}


# --8<-- [start:custom_op]
@torch.library.custom_op("site::lookup", mutates_args=())
def lookup_op(x: torch.Tensor) -> torch.Tensor:
    return torch.from_numpy(np.interp(x.cpu().numpy(), XS, TABLE)).float().to(x.device)


@lookup_op.register_fake
def _(x):  # what the compiler needs: the output's shape, dtype and device
    return torch.empty_like(x)


def activation_op(x):
    return lookup_op(x * 2) + 1


torch._dynamo.reset()
graphs.clear()
torch.compile(activation_op, backend=counting, fullgraph=True)(x)
print(f"custom op: {len(graphs)} graph calling {calls(graphs[-1])}")
out, (code, *_) = run_and_get_code(torch.compile(activation_op), x)  # Inductor
launches = [line.strip() for line in code.splitlines()  # kernel calls and the op's call
            if line.strip().startswith(("cpp_fused", "triton_"))
            and "async_compile" not in line or "= torch.ops.site.lookup" in line]
print("Inductor's call():", *launches, sep="\n  ")
same = torch.allclose(out, activation(x))
print(f"same as eager: {same}")
# --8<-- [end:custom_op]
results["custom_op"] = {"graphs": len(graphs), "calls": calls(graphs[-1]),
                        "launches": launches, "same": same}

# --8<-- [start:compiled_autograd]
layer = torch.nn.Linear(16, 16, device=device)
layer.weight.register_hook(lambda grad: grad.clamp(-0.01, 0.01))  # runs in backward
inputs = torch.randn(4, 16, device=device)


def step(inputs):
    loss = layer(inputs).relu().sum()
    loss.backward()
    return loss


backward_ops = {}
for enabled in (False, True):
    torch._dynamo.config.compiled_autograd = enabled
    torch._dynamo.reset()
    graphs.clear()
    layer.zero_grad()
    torch.compile(step, backend=counting)(inputs)
    ops = [op for op in calls(graphs[-1]) if op not in ("getitem", "validate_outputs")]
    backward_ops[enabled] = ops
    print(f"compiled_autograd={enabled}: {len(graphs)} graphs; the last calls {ops}")
torch._dynamo.config.compiled_autograd = False
# --8<-- [end:compiled_autograd]
results["compiled_autograd"] = {"off": backward_ops[False], "on": backward_ops[True]}
