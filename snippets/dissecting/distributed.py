"""Distributed training, compiled: DDP's buckets split the graph; checkpointing.

    python snippets/dissecting/distributed.py

Two processes on this machine (gloo on 127.0.0.1, the loopback device: nothing leaves
the machine) train a small model with DistributedDataParallel, eagerly and compiled
with each `torch._dynamo.config.optimize_ddp` setting, and count the graphs the
backend is handed. Every compiled step must end with the parameters of the eager DDP
step. FSDP2 (`fully_shard`) is tried the same way. Then, in this process, a compiled
module that checkpoints its activations. The workers are forked (Linux): the snippet
runs top to bottom once and is not imported again by its workers. CPU only; nothing
here is timed.
"""

import os
import socket

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch._dynamo.backends.registry import lookup_backend
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.checkpoint import checkpoint

results = {"device": "cpu", "torch": torch.__version__.split("+")[0]}
WIDTH = 512  # a 512x512 float32 weight is 1 MiB: bucket caps (in MiB) count layers


# --8<-- [start:model]
def five_layers():
    torch.manual_seed(0)
    layers = []
    for _ in range(5):
        layers += [nn.Linear(WIDTH, WIDTH), nn.ReLU()]
    return nn.Sequential(*layers)


# DDPOptimizer (torch/_dynamo/backends/distributed.py) fills buckets from the end of
# the graph backwards, like DDP: the first bucket holds up to
# dist._DEFAULT_FIRST_BUCKET_BYTES (1 MiB), every other one bucket_cap_mb. It asserts
# the first is no larger than the others ("First bucket should be smaller/equal to
# other buckets"), so bucket_cap_mb must be at least 1. With 2, the last layer
# (1 MiB + its bias) fills the first bucket alone and the others go two by two.
BUCKET_CAP_MB = 2
# --8<-- [end:model]


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

    The model is compiled inside DDP, as DDP(torch.compile(model)): DDP's forward then
    marks the module as active, which is what DDPOptimizer looks for. ("compile DDP"
    compiles the wrapper instead, torch.compile(DDP(model)).)"""
    model = five_layers()
    graphs = []
    if setting is None:
        ddp = DDP(model, bucket_cap_mb=BUCKET_CAP_MB)
    elif setting == "compile DDP":
        torch._dynamo.reset()
        ddp = torch.compile(DDP(model, bucket_cap_mb=BUCKET_CAP_MB),
                            backend=counting_inductor(graphs))
    else:
        torch._dynamo.reset()
        torch._dynamo.config.optimize_ddp = setting
        ddp = DDP(torch.compile(model, backend=counting_inductor(graphs)),
                  bucket_cap_mb=BUCKET_CAP_MB)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    torch.manual_seed(1 + rank)  # each rank its own batches
    for _ in range(2):  # DDP rebuilds its buckets after the first step
        x, target = torch.randn(16, WIDTH), torch.randn(16, WIDTH)
        optimizer.zero_grad()
        nn.functional.mse_loss(ddp(x), target).backward()
        optimizer.step()
    wrapper = ddp if isinstance(ddp, DDP) else ddp._orig_mod
    buckets = wrapper._get_ddp_logging_data().get("bucket_sizes")
    return [p.detach().clone() for p in model.parameters()], graphs, buckets


def fsdp2_step(rank):
    """One SGD step with FSDP2: each layer's parameters sharded across the two ranks."""
    from torch.distributed.fsdp import fully_shard

    model = five_layers()
    for layer in model:
        if isinstance(layer, nn.Linear):
            fully_shard(layer)
    fully_shard(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    torch.manual_seed(1 + rank)
    for _ in range(2):
        x, target = torch.randn(16, WIDTH), torch.randn(16, WIDTH)
        optimizer.zero_grad()
        nn.functional.mse_loss(model(x), target).backward()
        optimizer.step()
    return [p.full_tensor().detach().clone() for p in model.parameters()]


def worker(rank, port, queue):
    os.environ["GLOO_SOCKET_IFNAME"] = "lo"  # gloo talks over the loopback device only
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}",
                            rank=rank, world_size=2)
    torch.set_num_threads(1)  # two processes on a small machine
    report = {}
    eager, _, buckets = ddp_step(rank, None)
    report["buckets_bytes"] = [int(size) for size in str(buckets).split(",")]
    for setting in (False, "ddp_optimizer", "compile DDP"):
        params, graphs, _ = ddp_step(rank, setting)
        same = all(torch.allclose(p, q, atol=1e-6) for p, q in zip(params, eager))
        report[str(setting)] = {"graphs": len(graphs), "ops": graphs, "same": same}
    torch._dynamo.config.optimize_ddp = True
    try:
        params = fsdp2_step(rank)
        same = all(torch.allclose(p, q, atol=1e-6) for p, q in zip(params, eager))
        report["fsdp2"] = {"ran": True, "same": same}
    except Exception as error:  # noqa: BLE001 (whether it runs here is the finding)
        message = f"{type(error).__name__}: {error}".splitlines()[0][:200]
        report["fsdp2"] = {"ran": False, "error": message}
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
print("DDP's own buckets after the two steps (bytes):", report["buckets_bytes"])
for setting in ("False", "ddp_optimizer"):
    run = report[setting]
    print(f"optimize_ddp={setting:14} graphs handed to Inductor: {run['graphs']}"
          f"  (ops each: {run['ops']})  same parameters as eager DDP: {run['same']}")
wrapped = report["compile DDP"]
print("torch.compile(DDP(model)) instead: graphs handed to Inductor:",
      f"{wrapped['graphs']}"
      f"  same parameters as eager DDP: {wrapped['same']}")
print("both ranks hold the same parameters:",
      reports[0]["first_param"] == reports[1]["first_param"])
# --8<-- [end:ddp]
results["ddp"] = {
    "buckets": len(report["buckets_bytes"]),
    "buckets_bytes": report["buckets_bytes"],
    "graphs_off": report["False"]["graphs"],
    "graphs_ddp_optimizer": report["ddp_optimizer"]["graphs"],
    "same_off": report["False"]["same"] and reports[1]["False"]["same"],
    "same_ddp_optimizer": (report["ddp_optimizer"]["same"]
                           and reports[1]["ddp_optimizer"]["same"]),
    "graphs_compile_ddp": report["compile DDP"]["graphs"],
    "same_compile_ddp": report["compile DDP"]["same"],
    "ranks_agree": reports[0]["first_param"] == reports[1]["first_param"],
}

# --8<-- [start:fsdp2]
fsdp2 = report["fsdp2"]
if fsdp2["ran"]:
    print("FSDP2 (fully_shard) on gloo: ran; same parameters as eager DDP:",
          fsdp2["same"])
else:
    print("FSDP2 (fully_shard) on gloo: failed:", fsdp2["error"])
# --8<-- [end:fsdp2]
results["fsdp2"] = fsdp2


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
# --8<-- [end:checkpoint]
results["checkpoint"] = {"graphs": explained.graph_count,
                         "breaks": explained.graph_break_count,
                         "ops": hops, "same": same}
