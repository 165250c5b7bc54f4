"""Recompilation: Dynamo guards on input shapes, so a new shape can mean a new compile.

    python snippets/graph_mode/recompiles.py

The same function is called with five batch sizes under three settings of
torch.compile's `dynamic` argument. A counting backend records every graph Dynamo
hands to the backend (and runs it as traced), and the `recompiles` log (what
TORCH_LOGS=recompiles prints) says which guard failed. Then one function meets more
shapes than Dynamo's recompile limit allows, and, once an unrelated compile has
warmed the process, one compile with Inductor per setting is timed. Runs on CUDA when
torch sees a GPU, else on the CPU.
"""

import logging
import re
import time
from logging.handlers import BufferingHandler

import torch

device = "cuda" if torch.cuda.is_available() else "cpu"
results = {"device": device}


# --8<-- [start:function]
def gelu_mlp(x, w1, w2):
    return torch.nn.functional.gelu(x @ w1) @ w2


width = 256
w1 = torch.randn(width, 4 * width, device=device) / width**0.5
w2 = torch.randn(4 * width, width, device=device) / (4 * width) ** 0.5
batches = [8, 16, 32, 64, 8]  # four new batch sizes, then one seen before
# --8<-- [end:function]


def first_guard_failure(message):
    """The first failing guard of a recompile message ("tensor 'x' size ...")."""
    failure = re.search(r"^\s*- \S+: (.+)$", message, re.MULTILINE)
    return failure.group(1).strip() if failure else message.splitlines()[0]


# --8<-- [start:count]
def counting_backend(graphs):
    def backend(graph_module, example_inputs):
        # One entry per graph compiled: the shapes (or symbolic sizes) it takes.
        graphs.append([tuple(t.shape) if isinstance(t, torch.Tensor) else t
                       for t in example_inputs])
        return graph_module.forward  # run it as traced: no Inductor, so this is quick
    return backend


counts = {}
for dynamic in (None, False, True):  # None, the default: static first, then dynamic
    graphs = []
    collect = BufferingHandler(capacity=100_000)  # keeps the records, without a format
    dynamo_log = logging.getLogger("torch._dynamo")
    torch._logging.set_logs(recompiles=True)  # the same switch as TORCH_LOGS=recompiles
    dynamo_log.addHandler(collect)
    try:
        torch._dynamo.reset()
        backend = counting_backend(graphs)
        compiled = torch.compile(gelu_mlp, backend=backend, dynamic=dynamic)
        after_call = []
        for batch in batches:
            compiled(torch.randn(batch, width, device=device), w1, w2)
            after_call.append(len(graphs))
    finally:
        dynamo_log.removeHandler(collect)
        torch._logging.set_logs()
    messages = [r.getMessage() for r in collect.buffer]
    failures = [first_guard_failure(m) for m in messages if "Recompiling function" in m]
    counts[str(dynamic)] = {"compiles": len(graphs), "after_each_call": after_call,
                            "recompile_reasons": failures}
    print(f"dynamic={dynamic}: {len(graphs)} compile(s) for batches {batches}; "
          f"after each call: {after_call}")
    print(f"  inputs of the first graph: {graphs[0]}")
    for failure in failures:
        print(f"  recompiled because {failure}")
# --8<-- [end:count]
results["counts"] = counts

# --8<-- [start:batch_one]
# Dynamo specialises sizes 0 and 1 apart from the rest (a size-1 dimension broadcasts),
# so the dynamic graph made for batches of 8 and 16 does not serve a batch of 1.
graphs = []
torch._dynamo.reset()
compiled = torch.compile(gelu_mlp, backend=counting_backend(graphs))
for batch in (8, 16, 1):
    compiled(torch.randn(batch, width, device=device), w1, w2)
print(f"batches 8, 16, 1 under dynamic=None: {len(graphs)} compiles; "
      f"inputs of the last: {graphs[-1]}")
# --8<-- [end:batch_one]
results["batch_one"] = {"compiles": len(graphs), "last_inputs": graphs[-1]}

# --8<-- [start:limit]
# Under dynamic=False each new shape adds an entry to the function's cache of
# compiled code, up to Dynamo's limit; past it, the function runs eagerly.
limit = torch._dynamo.config.recompile_limit
graphs = []
torch._dynamo.reset()
compiled = torch.compile(gelu_mlp, backend=counting_backend(graphs), dynamic=False)
sizes = range(1, limit + 5)  # four more batch sizes than the limit
for batch in sizes:
    compiled(torch.randn(batch, width, device=device), w1, w2)
print(f"recompile limit: {limit}; {len(sizes)} batch sizes under dynamic=False "
      f"gave {len(graphs)} compiles, the rest ran eagerly")
# --8<-- [end:limit]
results["limit"] = {"recompile_limit": limit, "sizes": len(sizes),
                    "compiles": len(graphs)}


# --8<-- [start:inductor]
# The same sweep with Inductor: what each setting costs in compile time. The first
# Inductor compile in a process also pays one-time costs (imports, the precompiled C++
# header, compile workers) that a long-running program pays once. An unrelated compile
# pays them first, with the same caches, so that each setting pays for its own graphs.
# The FX graph and AOTAutograd caches are off, or graphs an earlier run compiled would
# be loaded instead. Inductor's kernel cache has no switch of its own (only
# force_disable_caches, which also throws the precompiled header away): a kernel whose
# source was built before, in this run or an earlier one, is loaded, not built again.
inductor, functorch = torch._inductor.config, torch._functorch.config
timed = {}
with inductor.patch(fx_graph_cache=False, autotune_local_cache=False), \
        functorch.patch(enable_autograd_cache=False):
    torch.compile(lambda a, b: torch.tanh(a @ b))(torch.randn(8, 16, device=device),
                                                  torch.randn(16, 4, device=device))
    off = inductor.force_disable_caches  # all off, the kernel cache too
    caches = {"FX graph": inductor.fx_graph_cache and not off,
              "AOTAutograd": functorch.enable_autograd_cache and not off,
              "Inductor's kernel": not off}
    print("process warmed by an unrelated compile first; caches: " + ", ".join(
        f"{name} {'on' if on else 'off'}" for name, on in caches.items()))
    for dynamic in (False, True):
        torch._dynamo.reset()
        compiled = torch.compile(gelu_mlp, dynamic=dynamic)
        start = time.perf_counter()
        for batch in batches:
            out = compiled(torch.randn(batch, width, device=device), w1, w2)
        if device == "cuda":
            torch.cuda.synchronize()
        sweep_s = time.perf_counter() - start
        x = torch.randn(64, width, device=device)
        ok = torch.allclose(compiled(x, w1, w2), gelu_mlp(x, w1, w2),
                            rtol=1e-3, atol=1e-3)
        timed[str(dynamic)] = {"first_sweep_s": sweep_s, "matches_eager": ok}
        print(f"dynamic={dynamic}: first pass over the five batch sizes took "
              f"{sweep_s:.2f} s, compiling included; matches eager: {ok}")
# --8<-- [end:inductor]
results["inductor"] = timed
results["caches"] = {"fx_graph": caches["FX graph"],
                     "aot_autograd": caches["AOTAutograd"],
                     "inductor_kernel": caches["Inductor's kernel"]}
