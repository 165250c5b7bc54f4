"""Guards: the checks Dynamo runs before reusing a graph, and what makes them fail.

    python snippets/dissecting/dynamo_guards.py

Prints the guards of the function the TorchDynamo page compiles, from TORCH_LOGS=guards
(captured from the logger, normalised) and counted by kind, then counts compilations as
the dtype, the shape and requires_grad of an input change, with the guard that failed
each time (TORCH_LOGS=recompiles).
"""

import collections
import inspect
import logging
import re
from logging.handlers import BufferingHandler

import torch
import torch._dynamo.testing

device = "cuda" if torch.cuda.is_available() else "cpu"
results = {}
results["device"] = device


# --8<-- [start:function]
def soft_sign_gate(a, b):
    x = a / (torch.abs(a) + 1)
    scale = sum(k * k for k in range(4))  # plain Python, run while tracing: 14
    return x * b * scale
# --8<-- [end:function]
results["function_source"] = inspect.getsource(soft_sign_gate)


# --8<-- [start:capture]
def logged(artifact, fn):
    """Run fn() with TORCH_LOGS=<artifact> on; return the messages, kept off stderr."""
    # The logger Dynamo writes that artifact to.
    logger = logging.getLogger(f"torch._dynamo.guards.__{artifact}")
    handler, propagate = BufferingHandler(capacity=100_000), logger.propagate
    torch._logging.set_logs(**{artifact: True})
    logger.addHandler(handler)
    logger.propagate = False  # keep the messages off torch's stderr handler
    try:
        fn()
    finally:
        logger.propagate = propagate
        logger.removeHandler(handler)
        torch._logging.set_logs()  # back to the default: nothing logged
    return [record.getMessage() for record in handler.buffer]
# --8<-- [end:capture]


# --8<-- [start:guards]
a, b = torch.randn(8, device=device), torch.randn(8, device=device)
compiled = torch.compile(soft_sign_gate, backend="eager")
messages = logged("guards", lambda: compiled(a, b))
tree = [line for line in next(m for m in messages if "TREE_GUARD_MANAGER" in m)
        .splitlines() if line.startswith(("+-", "|"))]  # the tree, not its title
kind = re.compile(r"\+- ([A-Z_]+):")
kinds = collections.Counter(m.group(1) for m in map(kind.search, tree) if m)
for line in tree:
    line = re.sub(r"\s+#.*$", "", line)  # drop the source-line comment
    line = re.sub(r"(source=[^,]*),.*", r"\1", line)  # drop accessor details
    line = re.sub(r", \d+\)(, type=.*)?$", ")", line)  # drop object ids and types
    line = re.sub(r"(___check_global_state\(\)) against \{.*\}",
                  r"\1 against {grad_mode, autocast, ...}", line)
    print(line)
print(f"{sum(kinds.values())} checks in all: "
      + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())))
# --8<-- [end:guards]
results["guard_kinds"], results["guard_count"] = dict(kinds), sum(kinds.values())
results["guards_of_a"] = [re.sub(r"\s+#.*$", "", line.split("+- ", 1)[1])
                          for line in tree if "(L['a']" in line and kind.search(line)]
results["identity_checked"] = [re.search(r"_check_obj_id\((.*?), \d+\)", line).group(1)
                               for line in tree if "+- ID_MATCH:" in line]

# --8<-- [start:recompiles]
torch._dynamo.reset()
counter = torch._dynamo.testing.CompileCounter()  # a backend that counts its graphs
# dynamic=False: every new shape gets its own graph (automatic dynamic shapes below).
compiled = torch.compile(soft_sign_gate, backend=counter, dynamic=False)
calls = [  # (key, what changed, the call)
    ("first", "float32, size 8", lambda: compiled(a, b)),
    ("new_values", "float32, size 8, new values", lambda: compiled(a + 1, b)),
    ("dtype", "float64, size 8", lambda: compiled(a.double(), b.double())),
    ("shape", "float32, size 16", lambda: compiled(a.repeat(2), b.repeat(2))),
    ("requires_grad", "float32, size 8, requires_grad",
     lambda: compiled(a.clone().requires_grad_(), b)),
    ("again", "float32, size 8 again", lambda: compiled(a, b)),
]
rows = {}
print(f"{'call':<32} {'graphs':>6}  why: the guard of graph 0 that failed")
for key, label, call in calls:
    before = counter.frame_count
    # One message per recompilation, listing every guard that failed.
    reasons = logged("recompiles", call)
    if reasons:
        failed = re.search(r"- 0/0: (.*)", reasons[0]).group(1)
    else:
        first = counter.frame_count > before
        failed = "(first call: nothing to reuse)" if first else "(none: graph reused)"
    rows[key] = {"call": label, "graphs": counter.frame_count, "reason": failed}
    print(f"{label:<32} {counter.frame_count:>6}  {failed}")
# --8<-- [end:recompiles]
results["recompiles"] = rows

# --8<-- [start:automatic_dynamic]
torch._dynamo.reset()
counter = torch._dynamo.testing.CompileCounter()
compiled = torch.compile(soft_sign_gate, backend=counter)  # the default: dynamic=None
graphs_after = {}
for n in (8, 16, 32, 64):
    compiled(torch.randn(n, device=device), torch.randn(n, device=device))
    graphs_after[n] = counter.frame_count
    print(f"size {n:>2}: {counter.frame_count} graph(s) compiled so far")
# --8<-- [end:automatic_dynamic]
results["automatic_dynamic"] = graphs_after
results["recompile_limit"] = torch._dynamo.config.recompile_limit
