"""Distributed training, compiled: DDP's buckets split the graph; FSDP2; checkpointing.

    python snippets/dissecting/distributed.py

Two processes on this machine (gloo on 127.0.0.1, the loopback device: nothing leaves
the machine) train a small model with DistributedDataParallel, eagerly and compiled
with each `torch._dynamo.config.optimize_ddp` setting, count the graphs the backend is
handed, and record the buckets DDP all-reduces (a comm hook). Every compiled step must
end with the parameters of the eager DDP step. FSDP2 (`fully_shard`) runs the same way,
eagerly and compiled. Then, in this process, a compiled module that checkpoints its
activations, with the matmuls of its forward and backward graphs counted. The workers
are forked (Linux): the snippet runs top to bottom once and is not imported again by
its workers. CPU only; nothing here is timed.
"""

import os
import socket

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from functorch.compile import make_boxed_func
from torch._dynamo.backends.common import aot_autograd
from torch._dynamo.backends.registry import lookup_backend
from torch._functorch.partitioners import min_cut_rematerialization_partition
from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.checkpoint import checkpoint

results = {"device": "cpu", "torch": torch.__version__.split("+")[0]}
WIDTH = 512  # a 512x512 float32 weight is 1 MiB: bucket caps (in MiB) count layers


# --8<-- [start:model]
class Block(nn.Module):
    """A linear layer and a ReLU, as a model's own code: Dynamo compiles a frame of
    torch.nn's code (nn.Linear's forward, nn.Sequential's) only when it traces it
    from a frame it compiles, never on its own."""

    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(WIDTH, WIDTH)

    def forward(self, x):
        return torch.relu(self.linear(x))


class FiveLayers(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.blocks = nn.ModuleList(Block() for _ in range(5))

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x


# DDPOptimizer (torch/_dynamo/backends/distributed.py) fills buckets from the end of
# the graph backwards, like DDP: the first bucket holds up to
# dist._DEFAULT_FIRST_BUCKET_BYTES (1 MiB), every other one bucket_cap_mb. It asserts
# the first is no larger than the others ("First bucket should be smaller/equal to
# other buckets"), so bucket_cap_mb must be at least 1. With 2, the last layer
# (1 MiB + its bias) fills the first bucket alone and the others go two by two.
# DDP's own first bucket is 1 MiB only when bucket_cap_mb is left at its default.
BUCKET_CAP_MB = 2
# --8<-- [end:model]


def five_layers(sequential=False):
    """The model; sequential=True builds the same layers as a bare nn.Sequential."""
    model = FiveLayers()
    if sequential:
        return nn.Sequential(*(m for block in model.blocks
                               for m in (block.linear, nn.ReLU())))
    return model


def recording_allreduce(sizes, bucket):
    """DDP's default all-reduce, noting each bucket's size in bytes as it goes."""
    sizes.append(bucket.buffer().numel() * bucket.buffer().element_size())
    return allreduce_hook(None, bucket)


def counting_inductor(graphs):
    """A backend that counts the graphs it is handed; Inductor compiles each."""
    inductor = lookup_backend("inductor")

    def backend(gm, example_inputs):
        graphs.append(len([n for n in gm.graph.nodes if n.op == "call_module"
                           or n.op == "call_function"]))
        return inductor(gm, example_inputs)

    return backend


def ddp_step(rank, setting):
    """Two SGD steps of DDP on this rank's batches: eager (setting None) or compiled.

    The model is compiled inside DDP, as DDP(torch.compile(model)), with each
    optimize_ddp setting; "compile DDP" compiles the wrapper instead,
    torch.compile(DDP(model)), and "compile DDP(Sequential)" the wrapper around the
    same layers as a bare nn.Sequential. Returns the parameters, the graphs the backend
    was handed (ops each), and the buckets DDP all-reduced in the last step (bytes)."""
    model = five_layers(sequential=setting == "compile DDP(Sequential)")
    graphs = []
    if setting is None:
        ddp = DDP(model, bucket_cap_mb=BUCKET_CAP_MB)
    elif setting in ("compile DDP", "compile DDP(Sequential)"):
        torch._dynamo.reset()
        ddp = DDP(model, bucket_cap_mb=BUCKET_CAP_MB)
    else:
        torch._dynamo.reset()
        torch._dynamo.config.optimize_ddp = setting
        ddp = DDP(torch.compile(model, backend=counting_inductor(graphs)),
                  bucket_cap_mb=BUCKET_CAP_MB)
    buckets = []
    ddp.register_comm_hook(buckets, recording_allreduce)
    step = ddp
    if setting in ("compile DDP", "compile DDP(Sequential)"):
        step = torch.compile(ddp, backend=counting_inductor(graphs))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    torch.manual_seed(1 + rank)  # each rank its own batches
    for _ in range(2):  # DDP rebuilds its buckets after the first step
        buckets.clear()
        x, target = torch.randn(16, WIDTH), torch.randn(16, WIDTH)
        optimizer.zero_grad()
        nn.functional.mse_loss(step(x), target).backward()
        optimizer.step()
    return [p.detach().clone() for p in model.parameters()], graphs, list(buckets)


def fsdp2_step(rank, compiled):
    """Two SGD steps with FSDP2: each block's parameters sharded across the two ranks;
    compiled=True compiles the whole sharded model, torch.compile(model)."""
    from torch.distributed.fsdp import fully_shard

    model = five_layers()
    for block in model.blocks:
        fully_shard(block)
    fully_shard(model)
    graphs = []
    step = model
    if compiled:
        torch._dynamo.reset()
        step = torch.compile(model, backend=counting_inductor(graphs))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    torch.manual_seed(1 + rank)
    for _ in range(2):
        x, target = torch.randn(16, WIDTH), torch.randn(16, WIDTH)
        optimizer.zero_grad()
        nn.functional.mse_loss(step(x), target).backward()
        optimizer.step()
    return [p.full_tensor().detach().clone() for p in model.parameters()], graphs


def worker(rank, port, queue):
    os.environ["GLOO_SOCKET_IFNAME"] = "lo"  # gloo talks over the loopback device only
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}",
                            rank=rank, world_size=2)
    torch.set_num_threads(1)  # two processes on a small machine
    report = {}
    eager, _, buckets = ddp_step(rank, None)
    report["buckets_bytes"] = buckets
    for setting in (False, "ddp_optimizer", "compile DDP", "compile DDP(Sequential)"):
        if setting in ("compile DDP", "compile DDP(Sequential)"):
            torch._dynamo.config.optimize_ddp = "ddp_optimizer"  # the default
        params, graphs, buckets = ddp_step(rank, setting)
        same = all(torch.allclose(p, q, atol=1e-6) for p, q in zip(params, eager))
        report[str(setting)] = {"graphs": len(graphs), "ops": graphs, "same": same,
                                "buckets_bytes": buckets}
    torch._dynamo.config.optimize_ddp = True
    for compiled in (False, True):
        name = "fsdp2_compiled" if compiled else "fsdp2"
        try:
            params, graphs = fsdp2_step(rank, compiled)
            same = all(torch.allclose(p, q, atol=1e-6) for p, q in zip(params, eager))
            report[name] = {"ran": True, "same": same, "graphs": len(graphs),
                            "ops": graphs}
        except Exception as error:  # noqa: BLE001 (whether it runs here is the finding)
            message = f"{type(error).__name__}: {error}".splitlines()[0][:200]
            report[name] = {"ran": False, "error": message}
    report["first_param"] = eager[0].flatten()[:4].tolist()
    queue.put((rank, report))
    dist.destroy_process_group()


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# --8<-- [start:ddp]
queue = mp.get_context("fork").SimpleQueue()
mp.start_processes(worker, args=(free_port(), queue), nprocs=2, start_method="fork")
reports = dict(queue.get() for _ in range(2))
report = reports[0]
print("eager DDP: the buckets it all-reduced in the second step (bytes):",
      report["buckets_bytes"])
runs = {"DDP(torch.compile(model)), optimize_ddp=False": "False",
        "DDP(torch.compile(model)), optimize_ddp=ddp_optimizer": "ddp_optimizer",
        "torch.compile(DDP(model))": "compile DDP",
        "torch.compile(DDP(nn.Sequential(...)))": "compile DDP(Sequential)"}
for name, key in runs.items():
    run = report[key]
    print(f"{name}\n    graphs handed to Inductor: {run['graphs']} (ops each: "
          f"{run['ops']}); same parameters as eager DDP: {run['same']}")
    if key == "ddp_optimizer":
        print("    the buckets DDP all-reduced in the second step (bytes):",
              run["buckets_bytes"])
print("both ranks hold the same parameters:",
      reports[0]["first_param"] == reports[1]["first_param"])
# --8<-- [end:ddp]
both = {key: report[key]["same"] and reports[1][key]["same"]
        for key in ("False", "ddp_optimizer", "compile DDP", "compile DDP(Sequential)")}
results["ddp"] = {
    "buckets": len(report["buckets_bytes"]),
    "buckets_bytes": report["buckets_bytes"],
    "layer_bytes": (WIDTH * WIDTH + WIDTH) * 4,  # a weight and its bias, float32
    "graphs_off": report["False"]["graphs"],
    "graphs_ddp_optimizer": report["ddp_optimizer"]["graphs"],
    "ops_ddp_optimizer": report["ddp_optimizer"]["ops"],
    "buckets_bytes_ddp_optimizer": report["ddp_optimizer"]["buckets_bytes"],
    "same_off": both["False"],
    "same_ddp_optimizer": both["ddp_optimizer"],
    "graphs_compile_ddp": report["compile DDP"]["graphs"],
    "ops_compile_ddp": report["compile DDP"]["ops"],
    "same_compile_ddp": both["compile DDP"],
    "graphs_compile_ddp_sequential": report["compile DDP(Sequential)"]["graphs"],
    "same_compile_ddp_sequential": both["compile DDP(Sequential)"],
    "ranks_agree": reports[0]["first_param"] == reports[1]["first_param"],
}

# --8<-- [start:fsdp2]
for name, key in (("FSDP2 (fully_shard), eager", "fsdp2"),
                  ("FSDP2, torch.compile(model)", "fsdp2_compiled")):
    run = report[key]
    if not run["ran"]:
        print(f"{name}: failed: {run['error']}")
        continue
    print(f"{name}: same parameters as eager DDP: {run['same']}"
          + (f"; graphs handed to Inductor: {run['graphs']} (ops each: {run['ops']})"
             if key == "fsdp2_compiled" else ""))
# --8<-- [end:fsdp2]
results["fsdp2"] = {key: report[key] for key in ("fsdp2", "fsdp2_compiled")}


# --8<-- [start:checkpoint]
class CheckpointedMLP(nn.Module):
    """Two blocks; checkpointed, each block's activations are recomputed in backward."""

    def __init__(self, use_checkpoint):
        super().__init__()
        torch.manual_seed(0)
        self.blocks = nn.ModuleList(
            nn.Sequential(nn.Linear(64, 256), nn.GELU(), nn.Linear(256, 64))
            for _ in range(2))
        self.use_checkpoint = use_checkpoint

    def forward(self, x):
        for block in self.blocks:
            if self.use_checkpoint:
                x = x + checkpoint(block, x, use_reentrant=False)
            else:
                x = x + block(x)
        return x


def gradients(model, x):
    model.zero_grad()
    model(x).square().mean().backward()
    return [p.grad.clone() for p in model.parameters()]


def counting_matmuls(counts):
    """A backend that runs AOTAutograd with Inductor's partitioner and counts the
    matmuls (mm, addmm) of the forward and the backward graph it makes."""
    def count(kind):
        def compiler(gm, example_inputs):
            counts[kind] = sum(node.target in (torch.ops.aten.mm.default,
                                               torch.ops.aten.addmm.default)
                               for node in gm.graph.nodes)
            return make_boxed_func(gm.forward)  # run the graph as it is
        return compiler
    return aot_autograd(fw_compiler=count("forward"), bw_compiler=count("backward"),
                        partition_fn=min_cut_rematerialization_partition)


x = torch.randn(32, 64)
reference = gradients(CheckpointedMLP(use_checkpoint=False), x)
checkpointed = CheckpointedMLP(use_checkpoint=True)
torch._dynamo.reset()
explained = torch._dynamo.explain(checkpointed)(x)
nodes = [node for graph in explained.graphs for node in graph.graph.nodes]
hops = sorted({str(node.target) for node in nodes if "checkpoint" in str(node.target)})
torch._dynamo.reset()
compiled = gradients(torch.compile(checkpointed), x)
same = all(torch.allclose(a, b, atol=1e-6) for a, b in zip(compiled, reference))
print(f"checkpointed, compiled: {explained.graph_count} graph, "
      f"{explained.graph_break_count} breaks")
print("  the checkpointed blocks in Dynamo's graph:", hops)
print("  same gradients as without checkpointing:", same)
matmuls = {}
for use_checkpoint in (False, True):
    torch._dynamo.reset()
    matmuls[use_checkpoint] = {}
    gradients(torch.compile(CheckpointedMLP(use_checkpoint),
                            backend=counting_matmuls(matmuls[use_checkpoint])), x)
    print(f"checkpoint={use_checkpoint!s:5}: matmuls in the forward graph "
          f"{matmuls[use_checkpoint]['forward']}, in the backward graph "
          f"{matmuls[use_checkpoint]['backward']}")
# --8<-- [end:checkpoint]
results["checkpoint"] = {"graphs": explained.graph_count,
                         "breaks": explained.graph_break_count,
                         "ops": hops, "same": same,
                         "matmuls": {"plain": matmuls[False],
                                     "checkpointed": matmuls[True]}}
