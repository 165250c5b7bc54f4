"""How Inductor's scheduler chooses what to fuse: the pairs it considers, the score
it gives each, and what it fuses, for four of the chapters' functions.

    python snippets/dissecting/fusion_scores.py

Lowering has already inlined every element-wise op it could into the loop of the
op that reads it. What reaches the scheduler are the buffers it had to keep: the
output of a reduction, a value read twice. The scheduler fuses them in rounds. Each
round lists the pairs it may legally fuse (can_fuse), sorts them by a score whose
main term is the bytes the two nodes share (score_fusion_memory), and fuses down
the list. The snippet wraps three private scheduler methods to keep each round's
nodes, candidates, scores, fusions and refusals; they may change with any release.
"""

import dataclasses

import torch
from torch._inductor import scheduler
from torch._inductor.scheduler import Scheduler

device = "cuda" if torch.cuda.is_available() else "cpu"
results = {"device": device}


# --8<-- [start:functions]
def complex_activation(x, y):  # the Eager mode chapter's six element-wise ops
    return torch.relu((torch.sin(x) * torch.cos(y) + x) * y)


def softmax(x):  # a max, then exp(x - max) and its sum, then a division
    return torch.softmax(x, dim=-1)


def row_stats(x):  # two reductions of the same rows, then one add
    return x.sum(dim=1) + x.amax(dim=1)


def row_and_column_sums(x):  # two reductions of the same tensor, across each other
    return x.sum(dim=1), x.sum(dim=0)


x = torch.randn(256, 1024, device=device)  # 1 MiB of float32
y = torch.randn(256, 1024, device=device)
# --8<-- [end:functions]


# --8<-- [start:spy]
def ops(node):
    """A scheduler node named by the graph's ops it computes: 'exp+sub'."""
    return "+".join(origin.name for inner in node.get_nodes()
                    for origin in inner.node.origins if origin.op == "call_function")


rounds, names = [], {}  # names: the scheduler's node names ('op3') to their ops


def get_possible_fusions(self, nodes, *args, **kwargs):
    """One round: the nodes, then the legal pairs, best first, each with its score."""
    rounds.append({"nodes": [ops(n) for n in nodes], "legal": [], "candidates": [],
                   "fused": [], "refused": []})
    names.update({n.get_name(): ops(n) for n in nodes})
    pairs = original["get_possible_fusions"](self, nodes, *args, **kwargs)
    for a, b in pairs:
        score = self.score_fusion_key((a, b))
        rounds[-1]["candidates"].append({
            "pair": [ops(a), ops(b)],
            "shared_bytes": self.score_fusion_memory(a, b),  # the score's memory term
            "score": (dataclasses.asdict(score) if dataclasses.is_dataclass(score)
                      else list(score))})
    return pairs


def highest_priority(self, pairs, *args, **kwargs):
    """Each legal pair has a priority from the backend; a round keeps the best class."""
    for a, b in pairs:
        priority = self.get_backend(a.get_device()).get_fusion_pair_priority(a, b)
        rounds[-1]["legal"].append({"pair": [ops(a), ops(b)],
                                    "priority": int(priority)})
    return original["highest_priority"](self, pairs, *args, **kwargs)


def fuse_two_nodes(self, a, b, *args, **kwargs):
    rounds[-1]["fused"].append([ops(a), ops(b)])
    fused = original["fuse_two_nodes"](self, a, b, *args, **kwargs)
    names[fused.get_name()] = ops(fused)
    return fused


def why_no_fuse(self, reason, *args):  # can_fuse said no, and why
    if rounds:
        rounds[-1]["refused"].append([names.get(self.name1, self.name1),
                                      names.get(self.name2, self.name2),
                                      reason % args])
    original["why_no_fuse"](self, reason, *args)


original = {"get_possible_fusions": Scheduler.get_possible_fusions,
            "highest_priority": Scheduler.get_possible_fusions_with_highest_priority,
            "fuse_two_nodes": Scheduler.fuse_two_nodes,
            "why_no_fuse": scheduler.WhyNoFuse.__call__}
Scheduler.get_possible_fusions = get_possible_fusions
Scheduler.get_possible_fusions_with_highest_priority = highest_priority
Scheduler.fuse_two_nodes = fuse_two_nodes
scheduler.WhyNoFuse.__call__ = why_no_fuse
# --8<-- [end:spy]


def decided(fn, *args):
    """Compile fn with Inductor, caches off (a cache hit skips the scheduler), and
    return the scheduler's rounds."""
    rounds.clear()
    torch._dynamo.reset()
    with torch._inductor.config.patch(force_disable_caches=True, compile_threads=1):
        torch.compile(fn)(*args)
    return [r for r in rounds if r["nodes"]]


# --8<-- [start:decide]
examples = {"complex_activation": (complex_activation, x, y),
            "softmax": (softmax, x), "row_stats": (row_stats, x),
            "row_and_column_sums": (row_and_column_sums, x)}
decisions = {}
for name, (fn, *args) in examples.items():
    decisions[name] = decided(fn, *args)
    print(f"{name}: {len(decisions[name][0]['nodes'])} nodes "
          f"{decisions[name][0]['nodes']}")
    for number, round_ in enumerate(decisions[name], 1):
        for legal in round_["legal"]:
            if legal["priority"] > min(p["priority"] for p in round_["legal"]):
                print(f"  round {number}: {' with '.join(legal['pair'])}: legal, "
                      f"priority {legal['priority']}: left for a later round")
        for c in round_["candidates"]:
            print(f"  round {number}: {' with '.join(c['pair'])}: "
                  f"{c['shared_bytes']:,} bytes shared")
        for a, b in round_["fused"]:
            print(f"  round {number}: fused {a} with {b}")
        for a, b, why in dict.fromkeys(map(tuple, round_["refused"])):
            print(f"  round {number}: cannot fuse {a} with {b}: {why}")
    left = len(decisions[name][-1]["nodes"])  # each node left is one kernel
    print(f"  {left} node{'s' * (left != 1)} left: {left} kernel{'s' * (left != 1)}")
# --8<-- [end:decide]
results["examples"] = {
    name: {"rounds": found, "nodes": found[0]["nodes"], "kernels": found[-1]["nodes"]}
    for name, found in decisions.items()}
for found in decisions.values():  # for the chart: KiB read by fewer passes
    for c in (c for r in found for c in r["candidates"]):
        c["shared_kib"] = c["shared_bytes"] / 1024
results["tensor_bytes"] = x.numel() * x.element_size()
results["rows"] = x.shape[0]
