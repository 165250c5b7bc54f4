"""The forward and backward graphs torch.compile captures for sin(x * y), drawn from the graphs themselves.

    python snippets/dissecting/autograd_graphs.py

A custom backend hands Dynamo's graph to AOTAutograd, which traces it into an ATen-level forward graph and
a backward graph; the backend prints both and turns their nodes into a Mermaid flowchart. Writes
autograd_graphs.mmd and results.json to $SNIPPET_OUTPUT_DIR, or to a fresh temporary folder.
"""

import inspect
import json
import os
import re
import tempfile
from pathlib import Path

import torch
from functorch.compile import make_boxed_func
from torch._functorch.aot_autograd import aot_module_simplified

OUT = Path(os.environ.get("SNIPPET_OUTPUT_DIR") or tempfile.mkdtemp(prefix="autograd_graphs-"))
device = "cuda" if torch.cuda.is_available() else "cpu"
results = {"device": device}


# --8<-- [start:function]
def fn_of_x_op_y(x, y):
    # fn(x op y) with op = * and fn = sin: two ops forward, and autograd must differentiate both.
    return torch.sin(x * y)
# --8<-- [end:function]


# --8<-- [start:backend]
captured = {}  # "forward" / "backward" -> the FX GraphModule AOTAutograd produced


def keep(kind):
    def compiler(gm, example_inputs):
        captured[kind] = gm
        # Run the graph as it is. A boxed function takes its inputs as one list, as AOTAutograd calls it.
        return make_boxed_func(gm.forward)
    return compiler


def aot_printing_backend(gm, example_inputs):
    # Dynamo hands over a Torch-level graph; AOTAutograd traces it down to ATen ops and splits it into the
    # graph to run now (forward) and the graph autograd runs later (backward).
    return aot_module_simplified(gm, example_inputs, fw_compiler=keep("forward"), bw_compiler=keep("backward"))


def tidy(gm):
    # The generated code frees each value after its last use ("; a = b = None"); drop that and blank lines.
    lines = (re.sub(r";\s+[\w\s=]+= None$", "", line.rstrip()) for line in gm.code.splitlines())
    return "\n".join(line for line in lines if line.strip())
# --8<-- [end:backend]


# --8<-- [start:forward]
x = torch.randn(8, device=device, requires_grad=True)
y = torch.randn(8, device=device, requires_grad=True)
compiled = torch.compile(fn_of_x_op_y, backend=aot_printing_backend)
z = compiled(x, y)  # the first call captures and compiles; only the forward graph exists yet
print(tidy(captured["forward"]))
# --8<-- [end:forward]

# --8<-- [start:backward]
z.sum().backward()  # the backward graph is compiled the first time autograd needs it
print(tidy(captured["backward"]))
# --8<-- [end:backward]


# --8<-- [start:check]
# d/dx sin(x*y) = cos(x*y) * y and d/dy = cos(x*y) * x: what the backward graph computed.
with torch.no_grad():
    expected_dx, expected_dy = torch.cos(x * y) * y, torch.cos(x * y) * x
grads_match = torch.allclose(x.grad, expected_dx) and torch.allclose(y.grad, expected_dy)
print(f"x.grad == cos(x*y)*y and y.grad == cos(x*y)*x: {grads_match}")
# --8<-- [end:check]


def ops(gm):
    return [str(node.target) for node in gm.graph.nodes if node.op == "call_function"]


fw, bw = captured["forward"], captured["backward"]
saved = [node.name for node in bw.graph.nodes if node.op == "placeholder" and not node.name.startswith("tangents")]
results.update(forward_ops=ops(fw), backward_ops=ops(bw), saved_for_backward=saved, grads_match=grads_match)
results.update(forward_op_count=len(ops(fw)), backward_op_count=len(ops(bw)), saved_count=len(saved))
results["forward_code"], results["backward_code"] = tidy(fw), tidy(bw)


# --8<-- [start:to_mermaid]
def to_mermaid(fw, bw, arg_names):
    """A Mermaid flowchart with one box per FX node and one arrow per use, forward and backward side by side."""
    fw_nodes, bw_nodes = list(fw.graph.nodes), list(bw.graph.nodes)
    fw_names = {node.name for node in fw_nodes}
    primals = [node.name for node in fw_nodes if node.op == "placeholder"]
    names = dict(zip(primals, arg_names))  # primals_1 -> x, primals_2 -> y
    # A backward placeholder named after a forward node is that node's value, saved for backward.
    saved = [node.name for node in bw_nodes if node.op == "placeholder" and node.name in fw_names]

    def box(side, node):
        ident = f"{side}_{node.name}"
        if node.op == "placeholder":
            text = f"{names[node.name]} ({node.name})" if node.name in names else f"grad of output ({node.name})"
            return f'{ident}(["{text}"])'
        if node.op == "output":
            return f'{ident}[/"{"output" if side == "fw" else "gradients"}"/]'
        return f'{ident}["{node.name}<br/>{node.target}"]'

    lines = ["flowchart LR", "  subgraph forward"]
    # The forward graph returns the function's result first, then the tensors it saves for backward.
    results_out = fw_nodes[-1].args[0][: len(fw_nodes[-1].args[0]) - len(saved)]
    for node in fw_nodes:
        lines.append(f"    {box('fw', node)}")
        inputs = results_out if node.op == "output" else node.all_input_nodes
        lines += [f"    fw_{arg.name} --> fw_{node.name}" for arg in inputs]
    lines += ["  end", "  subgraph backward"]
    for node in bw_nodes:
        if node.name in saved:
            continue  # drawn as a dotted link from the forward node instead
        lines.append(f"    {box('bw', node)}")
        if node.op == "output":  # one gradient per forward input, in order
            lines += [f'    bw_{g.name} -- "grad {names[p]}" --> bw_output' for g, p in zip(node.args[0], primals)]
        else:
            lines += [f"    bw_{a.name} --> bw_{node.name}" for a in node.all_input_nodes if a.name not in saved]
    lines.append("  end")
    for node in bw_nodes:
        lines += [f"  fw_{a.name} -. saved .-> bw_{node.name}" for a in node.all_input_nodes if a.name in saved]
    return "\n".join(lines)
# --8<-- [end:to_mermaid]


# --8<-- [start:mermaid]
diagram = to_mermaid(fw, bw, list(inspect.signature(fn_of_x_op_y).parameters))
(OUT / "autograd_graphs.mmd").write_text(diagram + "\n")
print(diagram)
# --8<-- [end:mermaid]
results["mermaid_lines"] = len(diagram.splitlines())

(OUT / "results.json").write_text(json.dumps(results, indent=2))
