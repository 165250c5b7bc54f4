"""The forward and backward graphs torch.compile captures for sin(x * y).

    python snippets/dissecting/autograd_graphs.py

A custom backend hands Dynamo's graph to AOTAutograd, which traces it into an ATen-level
forward graph and a backward graph; the backend prints both. Which tensors the forward
graph saves for backward is the partitioner's choice: the default one, which a custom
backend gets, saves the product; Inductor's min-cut partitioner recomputes it.
"""

import functools

import torch
from functorch.compile import make_boxed_func, min_cut_rematerialization_partition
from torch._functorch.aot_autograd import aot_module_simplified

device = "cuda" if torch.cuda.is_available() else "cpu"
results = {}
results["device"] = device


# --8<-- [start:function]
def fn_of_x_op_y(x, y):
    # fn(x op y) with op = * and fn = sin: two ops forward, both to differentiate.
    return torch.sin(x * y)
# --8<-- [end:function]


# --8<-- [start:backend]
captured = {}  # "forward" / "backward" -> the FX GraphModule AOTAutograd produced


def keep(kind):
    def compiler(gm, example_inputs):
        captured[kind] = gm
        # Run the graph as it is. A boxed function takes its inputs as one list.
        return make_boxed_func(gm.forward)
    return compiler


def aot_printing_backend(gm, example_inputs):
    # Dynamo hands over a Torch-level graph; AOTAutograd traces it down to ATen ops and
    # splits it into the graph to run now (forward) and the one autograd runs later.
    return aot_module_simplified(
        gm, example_inputs, fw_compiler=keep("forward"), bw_compiler=keep("backward"))


def tidy(gm):
    # The generated code frees each value after its last use ("; a = None"): drop it.
    lines = (line.rstrip().split(";")[0] for line in gm.code.splitlines())
    return "\n".join(line for line in lines if line.strip())
# --8<-- [end:backend]


# --8<-- [start:forward]
x = torch.randn(8, device=device, requires_grad=True)
y = torch.randn(8, device=device, requires_grad=True)
compiled = torch.compile(fn_of_x_op_y, backend=aot_printing_backend)
z = compiled(x, y)  # the first call captures and compiles; only forward exists yet
print(tidy(captured["forward"]))
# --8<-- [end:forward]

# --8<-- [start:backward]
z.sum().backward()  # the backward graph is compiled the first time autograd needs it
print(tidy(captured["backward"]))
# --8<-- [end:backward]


# --8<-- [start:check]
# d/dx sin(x*y) = cos(x*y) * y and d/dy = cos(x*y) * x: what backward should compute.
with torch.no_grad():
    expected_dx, expected_dy = torch.cos(x * y) * y, torch.cos(x * y) * x
grads_match = (torch.allclose(x.grad, expected_dx)
               and torch.allclose(y.grad, expected_dy))
print(f"x.grad == cos(x*y)*y and y.grad == cos(x*y)*x: {grads_match}")
# --8<-- [end:check]


def ops(gm):
    return [str(node.target) for node in gm.graph.nodes if node.op == "call_function"]


def saved_inputs(bw):
    # The backward graph's inputs, less the incoming gradient: what forward saved.
    return [n.name for n in bw.graph.nodes
            if n.op == "placeholder" and not n.name.startswith("tangents")]


fw, bw = captured["forward"], captured["backward"]
results["forward_graph"], results["backward_graph"] = fw, bw
results["default"] = {"forward_ops": ops(fw), "backward_ops": ops(bw),
                      "saved_for_backward": saved_inputs(bw),
                      "saved_count": len(saved_inputs(bw))}
results["forward_op_count"], results["backward_op_count"] = len(ops(fw)), len(ops(bw))
results["grads_match"] = grads_match


# --8<-- [start:min_cut]
def min_cut_backend(gm, example_inputs):
    # The same backend with Inductor's partitioner: it saves as few bytes as it can, and
    # recomputes in backward what is cheap to recompute (here the product x * y).
    partition = functools.partial(min_cut_rematerialization_partition,
                                  compiler="inductor")
    return aot_module_simplified(gm, example_inputs, fw_compiler=keep("forward"),
                                 bw_compiler=keep("backward"), partition_fn=partition)


torch._dynamo.reset()  # forget the graph compiled above, so this backend compiles anew
torch.compile(fn_of_x_op_y, backend=min_cut_backend)(x, y).sum().backward()
print(tidy(captured["forward"]), tidy(captured["backward"]), sep="\n\n")
# --8<-- [end:min_cut]
fw_min_cut, bw_min_cut = captured["forward"], captured["backward"]
results["min_cut_forward_graph"] = fw_min_cut
results["min_cut_backward_graph"] = bw_min_cut
results["min_cut"] = {"forward_ops": ops(fw_min_cut), "backward_ops": ops(bw_min_cut),
                      "saved_for_backward": saved_inputs(bw_min_cut),
                      "saved_count": len(saved_inputs(bw_min_cut))}


# --8<-- [start:saved]
def saved_for_backward(fn):
    """Run fn(x, y) and name each tensor autograd keeps for backward."""
    names = {id(x): "x", id(y): "y"}
    saved = []

    def pack(tensor):  # called once for every tensor saved for backward
        saved.append(names.get(id(tensor), f"a new {tuple(tensor.shape)} tensor"))
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        fn(x, y)
    return saved


saved = {}
for label, backend in [("default_partition", aot_printing_backend),
                       ("min-cut partition", min_cut_backend),
                       ("inductor", "inductor")]:
    torch._dynamo.reset()
    saved[label] = saved_for_backward(torch.compile(fn_of_x_op_y, backend=backend))
saved["eager"] = saved_for_backward(fn_of_x_op_y)
for label, tensors in saved.items():
    print(f"{label:<18} saves {len(tensors)}: {', '.join(tensors)}")
# --8<-- [end:saved]
results["saved"] = {label.replace("-", "_").replace(" ", "_"): tensors
                    for label, tensors in saved.items()}
results["saved_count"] = {key: len(t) for key, t in results["saved"].items()}
