"""A compiled training step: functionalization, the joint graph, and the partitioner.

    python snippets/dissecting/training_step.py

First a small function with in-place ops, traced before and after functionalization.
Then one training step of a small MLP (forward, loss, backward, SGD step) compiled with
a backend that keeps every graph: the joint forward + backward graph AOTAutograd
traces, the forward and backward graphs the partitioner cuts it into, and the
optimizer's graph. The default partitioner and Inductor's min-cut partitioner are
compared by what they save for backward. Runs on CUDA when torch sees a GPU, else on
the CPU.
"""

import copy
import functools

import torch
from functorch.compile import (
    default_partition,
    make_boxed_func,
    min_cut_rematerialization_partition,
)
from torch._functorch.aot_autograd import aot_module_simplified
from torch._inductor.decomposition import select_decomp_table
from torch.fx.experimental.proxy_tensor import make_fx

device = "cuda" if torch.cuda.is_available() else "cpu"
results = {"device": device}


def tidy(gm):
    # The generated code frees each value after its last use ("; a = None"): drop it.
    lines = (line.rstrip().split(";")[0] for line in gm.code.splitlines())
    return "\n".join(line for line in lines if line.strip())


def ops(gm):
    """The ops of a graph, 'aten.mul.Tensor' -> 'mul'; Torch-level calls as named."""
    names = []
    for node in gm.graph.nodes:
        if node.op in ("call_function", "call_method"):
            target = node.target
            names.append(target if isinstance(target, str)
                         else getattr(target, "__name__", str(target)).split(".")[0])
    return names


def listing(gm):
    """One line per op, `name = op(arguments)`; in a joint graph, each marked bw
    when it depends on the incoming gradient (a tangents input), else fw."""
    backward, lines = set(), []
    joint = any(n.name.startswith("tangents") for n in gm.graph.nodes)
    for node in gm.graph.nodes:
        if node.op == "placeholder" and node.name.startswith("tangents"):
            backward.add(node)
        if node.op == "output":
            lines.append(f"{'    ' if joint else ''}return {node.args[0]}")
        if node.op not in ("call_function", "call_method"):
            continue
        if any(arg in backward for arg in node.all_input_nodes):
            backward.add(node)
        args = [str(a) for a in node.args]
        args += [f"{k}={v}" for k, v in node.kwargs.items()]
        target = node.target
        name = target if isinstance(target, str) else getattr(
            target, "__name__", str(target)).removesuffix(".default")
        mark = ("bw  " if node in backward else "fw  ") if joint else ""
        lines.append(f"{mark}{node.name} = {name}({', '.join(args)})")
    return "\n".join(lines)


def in_place(names):
    """In-place ops end in one underscore (add_, relu_); private ops begin with one."""
    return [name for name in names if name.endswith("_") and not name.endswith("__")]


# --8<-- [start:functionalize]
def scale_and_shift(x, bias):
    h = x * 2
    h.relu_()  # in place on an intermediate
    bias.add_(1)  # in place on an input: the caller sees bias change
    return h + bias


x, bias = torch.randn(4, device=device), torch.zeros(4, device=device)
traced = make_fx(scale_and_shift)(x, bias.clone())
functional = make_fx(torch.func.functionalize(scale_and_shift))(x, bias.clone())
print("traced as written:", tidy(traced), sep="\n")
print("functionalized:", tidy(functional), sep="\n")
# --8<-- [end:functionalize]
results["functionalize"] = {"traced_ops": ops(traced),
                            "functional_ops": ops(functional),
                            "traced_in_place": in_place(ops(traced)),
                            "functional_in_place": in_place(ops(functional))}


# --8<-- [start:model]
class MLP(torch.nn.Module):
    def __init__(self, d_in=32, d_hidden=128, d_out=8):
        super().__init__()
        self.fc1 = torch.nn.Linear(d_in, d_hidden)
        self.fc2 = torch.nn.Linear(d_hidden, d_out)

    def forward(self, x):
        h = torch.relu(self.fc1(x))
        h = torch.nn.functional.layer_norm(h, h.shape[-1:])  # each row: mean 0, var 1
        return self.fc2(h)


def make_step(model, optimizer):
    def train_step(x, target):
        loss = torch.nn.functional.mse_loss(model(x), target)
        loss.backward()
        optimizer.step()  # p -= lr * p.grad, in place, for every parameter
        optimizer.zero_grad()
        return loss
    return train_step


torch.manual_seed(0)
reference = MLP().to(device)
x = torch.randn(64, 32, device=device)
target = torch.randn(64, 8, device=device)


def fresh():
    """A copy of the same initial model, and its optimizer (no foreach: one add_
    per parameter, the same on a CPU and a GPU)."""
    model = copy.deepcopy(reference)
    return model, torch.optim.SGD(model.parameters(), lr=0.1, foreach=False)
# --8<-- [end:model]


# --8<-- [start:backend]
def keeping_backend(partition_fn, kept):
    """A torch.compile backend that runs AOTAutograd with Inductor's decompositions
    and the given partitioner, and keeps every graph it sees in `kept`."""
    def keep(kind):
        def compiler(gm, example_inputs):
            kept.setdefault(kind, []).append(gm)
            # Run the graph as it is; disable(): Dynamo must not trace it again
            # when autograd calls it during loss.backward().
            return make_boxed_func(torch._dynamo.disable(gm.forward))
        return compiler

    def partition(joint, joint_inputs, **kwargs):
        kept.setdefault("joint", []).append(joint)  # forward and backward, as one
        return partition_fn(joint, joint_inputs, **kwargs)

    def backend(gm, example_inputs):
        kept.setdefault("dynamo", []).append(gm)  # Dynamo's graph, Torch-level
        return aot_module_simplified(
            gm, example_inputs, fw_compiler=keep("forward"),
            bw_compiler=keep("backward"), partition_fn=partition,
            decompositions=select_decomp_table())
    return backend
# --8<-- [end:backend]


def saved(backward):
    """The backward graph's inputs, less the incoming gradients: what forward saved,
    with its shape and size."""
    found = []
    for node in backward.graph.nodes:
        if node.op == "placeholder" and not node.name.startswith("tangents"):
            value = node.meta["val"]
            found.append({"name": node.name, "shape": list(value.shape),
                          "dtype": str(value.dtype).removeprefix("torch."),
                          "bytes": value.numel() * value.element_size()})
    return found


def new_activations(forward, saved_tensors):
    """The saved tensors forward made itself: not an input or parameter, nor a view of
    one, nor a view of a tensor already counted (an alias). Their bytes are what the
    step holds between forward and backward beyond the model and the batch."""
    nodes = {node.name: node for node in forward.graph.nodes}
    counted, found = set(), []
    for tensor in saved_tensors:
        base = nodes[tensor["name"]]
        while base.op == "call_function" and getattr(base.target, "is_view", False):
            base = base.args[0]  # a view shares its base's memory
        if base.op != "placeholder" and base.name not in counted:
            counted.add(base.name)
            found.append(tensor)
    return found


# --8<-- [start:step]
# Inductor's partitioner: it chooses what to save and what to recompute (below).
min_cut = functools.partial(min_cut_rematerialization_partition, compiler="inductor")
kept = {}
model, optimizer = fresh()
step = torch.compile(make_step(model, optimizer),
                     backend=keeping_backend(min_cut, kept))
loss = step(x, target)
print(f"Dynamo graphs: {len(kept['dynamo'])} "
      f"(the step breaks at loss.backward(): forward + loss, then the optimizer)")
for i, gm in enumerate(kept["dynamo"]):
    print(f"  graph {i}: {', '.join(ops(gm)) or '(parameter updates only)'}")
joint = kept["joint"][0]
print(f"joint graph: {len(ops(joint))} ops; inputs: "
      f"{', '.join(n.name for n in joint.graph.nodes if n.op == 'placeholder')}")
print(f"forward graph: {len(ops(kept['forward'][0]))} ops, "
      f"backward graph: {len(ops(kept['backward'][0]))} ops")
# --8<-- [end:step]
dynamo_forward, dynamo_optimizer = kept["dynamo"]
forward, optimizer_graph = kept["forward"]
(backward,) = kept["backward"]
results["graphs"] = {"joint": joint, "forward": forward, "backward": backward,
                     "optimizer": optimizer_graph}
results["dynamo_graphs"] = [ops(gm) for gm in kept["dynamo"]]
results["joint_ops"], results["forward_ops"] = ops(joint), ops(forward)
results["backward_ops"] = ops(backward)
results["op_count"] = {"joint": len(ops(joint)), "forward": len(ops(forward)),
                       "backward": len(ops(backward)),
                       "dynamo_graphs": len(kept["dynamo"])}

# --8<-- [start:joint]
print(listing(joint))
# --8<-- [end:joint]

# --8<-- [start:partitioners]
compared = {}
for name, partition_fn in [("default", default_partition), ("min-cut", min_cut)]:
    kept = {}
    model, optimizer = fresh()
    torch._dynamo.reset()
    torch.compile(make_step(model, optimizer),
                  backend=keeping_backend(partition_fn, kept))(x, target)
    found = saved(kept["backward"][0])
    made = new_activations(kept["forward"][0], found)
    compared[name] = {"forward": kept["forward"][0], "backward": kept["backward"][0],
                      "saved": found, "new": made, "model": model}
    print(f"{name:<8} saves {len(found)} tensors, {sum(s['bytes'] for s in found):,} "
          f"bytes: " + ", ".join(f"{s['name']} {tuple(s['shape'])}" for s in found))
    print(f"         of which forward made {len(made)}, "
          f"{sum(s['bytes'] for s in made):,} bytes: "
          + ", ".join(s["name"] for s in made))
    print(f"         forward {len(ops(kept['forward'][0]))} ops, "
          f"backward {len(ops(kept['backward'][0]))} ops")
# --8<-- [end:partitioners]
results["saved"] = {name.replace("-", "_"): c["saved"] for name, c in compared.items()}
results["saved_count"] = {name.replace("-", "_"): len(c["saved"])
                          for name, c in compared.items()}
results["saved_bytes"] = {name.replace("-", "_"): sum(s["bytes"] for s in c["saved"])
                          for name, c in compared.items()}
results["new_activations"] = {name.replace("-", "_"): [s["name"] for s in c["new"]]
                              for name, c in compared.items()}
made_bytes = {name.replace("-", "_"): sum(s["bytes"] for s in c["new"])
              for name, c in compared.items()}
results["new_activation_bytes"] = made_bytes
results["new_activation_ratio"] = made_bytes["default"] / made_bytes["min_cut"]
masks = [t for t in compared["min-cut"]["saved"] if t["dtype"] == "bool"]
results["min_cut_mask"] = masks[0] if masks else None  # a saved bool tensor, if any
results["default_graphs"] = {"forward": compared["default"]["forward"],
                             "backward": compared["default"]["backward"]}
results["default_ops"] = {"forward": ops(compared["default"]["forward"]),
                          "backward": ops(compared["default"]["backward"])}
# The joint listing's ops that do not depend on the incoming gradient (marked fw), and
# how many of them the default partitioner runs in forward: the original forward's.
joint_fw = sum(line.startswith("fw  ") for line in listing(joint).splitlines())
default_forward = len(results["default_ops"]["forward"])
results["default_partition"] = {"joint_fw": joint_fw, "forward": default_forward,
                                "fw_in_backward": joint_fw - default_forward}


# --8<-- [start:optimizer]
# The optimizer's step as Dynamo captured it (in place, Torch-level), then as
# AOTAutograd functionalized it for the backend.
print("Dynamo's graph:", listing(dynamo_optimizer), sep="\n")
print("after AOTAutograd:", listing(optimizer_graph), sep="\n")
# --8<-- [end:optimizer]
results["optimizer"] = {"dynamo_ops": ops(dynamo_optimizer),
                        "dynamo_in_place": in_place(ops(dynamo_optimizer)),
                        "functional_ops": ops(optimizer_graph),
                        "functional_in_place": in_place(ops(optimizer_graph))}


# --8<-- [start:check]
# One eager step from the same initial weights: the compiled steps must agree.
model, optimizer = fresh()
eager_loss = make_step(model, optimizer)(x, target)
same = {name: all(torch.allclose(p, q, atol=1e-5) for p, q in
                  zip(model.parameters(), c["model"].parameters()))
        for name, c in compared.items()}
print(f"loss: eager {eager_loss.item():.6f}, compiled {loss.item():.6f}")
print(f"weights after one step match eager: {same}")
# --8<-- [end:check]
results["loss"] = {"eager": eager_loss.item(), "compiled": loss.item()}
results["weights_match"] = {name.replace("-", "_"): ok for name, ok in same.items()}


# --8<-- [start:inductor]
def saved_by_autograd(step_fn):
    """Count the tensors autograd keeps for backward during one step."""
    count = []
    with torch.autograd.graph.saved_tensors_hooks(
            lambda t: count.append(tuple(t.shape)) or t, lambda t: t):
        step_fn(x, target)
    return count


torch._dynamo.reset()
counted = {"eager": saved_by_autograd(make_step(*fresh())),
           "inductor": saved_by_autograd(torch.compile(make_step(*fresh())))}
for name, shapes in counted.items():
    print(f"{name:<8} keeps {len(shapes)} tensors for backward")
# --8<-- [end:inductor]
results["autograd_saved_count"] = {name: len(s) for name, s in counted.items()}
