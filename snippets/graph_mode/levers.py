"""The levers a user reaches for first, each with what it changes.

    python snippets/graph_mode/levers.py

fullgraph=True, a print made reorderable, TORCH_LOGS (graph_breaks, recompiles,
fusion, output_code), the option sets behind mode=, mark_dynamic, torch.cond and
torch.compiler.set_stance, each tried on one small function and counted: graphs
compiled, breaks, log messages, errors. Then torch.set_float32_matmul_precision,
Inductor's freezing, torch.compiler.disable, options= and mode="lite", each shown in
a result, a graph count or the code Inductor wrote.
"""

import logging
import re
import textwrap
from logging.handlers import BufferingHandler

import torch
from torch._inductor.utils import run_and_get_code

device = "cuda" if torch.cuda.is_available() else "cpu"
results = {}
results["device"] = device
torch.manual_seed(0)


# --8<-- [start:function]
def block(x, w):
    h = torch.relu(x @ w)
    print("mean activation:", h.mean())  # a side effect Dynamo cannot put in a graph
    return torch.softmax(h, dim=-1)


x = torch.randn(8, 64, device=device)
w = torch.randn(64, 64, device=device)
# --8<-- [end:function]

graphs = []


def counting(gm, example_inputs):  # a backend that keeps each graph, run as traced
    graphs.append(gm)
    return gm.forward


def first_line(error):
    return (str(error).strip().splitlines() or [""])[0]


# --8<-- [start:fullgraph]
torch.compile(block, backend=counting)(x, w)  # the print splits the function in two
print(f"default: {len(graphs)} graphs")
torch._dynamo.reset()  # else the cached graphs of the first compile are reused
try:
    torch.compile(block, backend=counting, fullgraph=True)(x, w)
except torch._dynamo.exc.Unsupported as error:  # fullgraph: the break is an error
    print(f"fullgraph=True raised {type(error).__name__}: {first_line(error)}")
    raised = first_line(error)
# --8<-- [end:fullgraph]
results["fullgraph"] = {"graphs": len(graphs), "raised": raised}

# --8<-- [start:reorderable]
torch._dynamo.config.reorderable_logging_functions.add(print)
torch._dynamo.reset()
graphs.clear()
torch.compile(block, backend=counting, fullgraph=True)(x, w)
print(f"print reorderable, fullgraph=True: {len(graphs)} graph")
torch._dynamo.config.reorderable_logging_functions.discard(print)
# --8<-- [end:reorderable]
results["reorderable"] = {"graphs": len(graphs)}


# --8<-- [start:logs]
def caught(fn, **artifacts):
    """Run fn() with TORCH_LOGS artifacts on; return {artifact: [messages]}. An
    artifact's logger is <module>.__<artifact>; its records reach torch._dynamo or
    torch._inductor, which keep them (they do not propagate further)."""
    handler = BufferingHandler(capacity=100_000)
    loggers = [logging.getLogger(name) for name in ("torch._dynamo", "torch._inductor")]
    torch._logging.set_logs(**artifacts)
    for logger in loggers:
        logger.addHandler(handler)
    try:
        fn()
    finally:
        for logger in loggers:
            logger.removeHandler(handler)
        torch._logging.set_logs()  # back to the default: nothing logged
    found = {artifact: [] for artifact in artifacts}
    for record in dict.fromkeys(handler.buffer):  # once each, in order
        artifact = record.name.rpartition(".__")[2]
        if artifact in found:
            found[artifact].append(record.getMessage())
    return found


def two_sizes():
    compiled = torch.compile(block)  # Inductor
    compiled(x, w)
    compiled(torch.randn(16, 64, device=device), w)  # a new size: a recompile


torch._dynamo.reset()
with torch._inductor.config.patch(force_disable_caches=True):  # a cache hit skips
    logs = caught(two_sizes, graph_breaks=True, recompiles=True,  # fusion: no log
                  fusion=True, output_code=True)
for artifact, messages in logs.items():
    print(f"TORCH_LOGS={artifact}: {len(messages)} messages")
origins, decisions = {}, []
for message in logs["fusion"]:  # name the scheduler's nodes by the ops they came from
    if "attempting fusion (1/" in message:
        origins = {}  # a new graph: its nodes are numbered from op0 again
    for name, ops in re.findall(r"name='(op\d+)'\).*?origins=OrderedSet\(\[(.*?)\]\)",
                                message):
        origins.setdefault(name, f"{name} ({ops})")
    if message.startswith(("fusing", "cannot fuse")):
        named = re.sub(r"\bop\d+\b", lambda m, known=origins: known.get(m[0], m[0]),
                       message)
        decisions.append(named.strip())
for decision in dict.fromkeys(decisions):  # both sizes decide alike
    print(f"  {decision}")
# --8<-- [end:logs]
results["logs"] = {artifact: {"messages": len(messages)}
                   for artifact, messages in logs.items()}
results["logs"]["output_code"]["kernels"] = sorted(
    {line.split()[0] for m in logs["output_code"] for line in m.splitlines()
     if line.split() and "= async_compile." in line})
results["logs"]["fusion"]["decisions"] = list(dict.fromkeys(decisions))
results["logs"]["recompiles"]["reason"] = next(
    (line.strip() for m in logs["recompiles"] for line in m.splitlines()
     if "size mismatch" in line), None)

# --8<-- [start:modes]
modes = torch._inductor.list_mode_options()  # every mode this release knows
for mode, options in modes.items():  # mode= names a set of Inductor options
    settings = ", ".join(f"{name}={value}" for name, value in options.items())
    print(textwrap.fill(f"{mode}: {settings or '(none)'}", 80,
                        subsequent_indent="    "))
# --8<-- [end:modes]
results["modes"] = modes


# --8<-- [start:mark_dynamic]
def rows(x):
    return torch.softmax(x, dim=-1) * 2


batches = (8, 16, 32)
counts = {}
for mark in (False, True):
    torch._dynamo.reset()
    graphs.clear()
    compiled = torch.compile(rows, backend=counting)
    for batch in batches:
        xb = torch.randn(batch, 64, device=device)
        if mark:
            torch._dynamo.mark_dynamic(xb, 0)  # symbolic from the first compile
        compiled(xb)
    counts[mark] = len(graphs)
    print(f"mark_dynamic={mark}: batches {batches} compiled {len(graphs)} graph(s)")
# --8<-- [end:mark_dynamic]
results["mark_dynamic"] = {"unmarked": counts[False], "marked": counts[True]}


# --8<-- [start:cond]
def branchy(x):
    if x.sum() > 0:  # Python asks for the value: a graph break
        return x.sin()
    return x.cos()


def one_graph(x):
    return torch.cond(x.sum() > 0, torch.sin, torch.cos, (x,))  # both branches


cond_graphs = {}
for fn in (branchy, one_graph):
    torch._dynamo.reset()
    graphs.clear()
    compiled = torch.compile(fn, backend=counting)
    assert torch.allclose(compiled(x), fn(x)) and torch.allclose(compiled(-x), fn(-x))
    cond_graphs[fn.__name__] = len(graphs)
    print(f"{fn.__name__}: both signs compiled {len(graphs)} graph(s)")
# --8<-- [end:cond]
results["cond"] = cond_graphs

# --8<-- [start:set_stance]
torch._dynamo.reset()
graphs.clear()
compiled = torch.compile(rows, backend=counting, dynamic=False)
compiled(x)
with torch.compiler.set_stance("fail_on_recompile"):  # e.g. once warmed up
    try:
        compiled(torch.randn(9, 64, device=device))
    except RuntimeError as error:
        stance_error = first_line(error).split(". filename")[0]
        guard = next(line.strip() for line in str(error).splitlines() if "0/0" in line)
        print(f"fail_on_recompile raised: {stance_error}\n  {guard}")
with torch.compiler.set_stance("force_eager"):  # A/B the compiled code in place
    compiled(torch.randn(10, 64, device=device))
print(f"graphs compiled: {len(graphs)}")
# --8<-- [end:set_stance]
results["set_stance"] = {"error": stance_error, "guard": guard, "graphs": len(graphs)}

# --8<-- [start:precision]
a, b = (torch.randn(256, 256, device=device) for _ in range(2))
exact = a.double() @ b.double()  # the reference, in float64
highest = a @ b
precision = {}
for setting in ("highest", "high", "medium"):
    torch.set_float32_matmul_precision(setting)
    out = a @ b
    precision[setting] = {
        "same_as_highest": torch.equal(out, highest),
        "error": (out.double() - exact).abs().max().item(),
        "cuda.matmul.allow_tf32": torch.backends.cuda.matmul.allow_tf32,
        "mkldnn.matmul.fp32_precision": torch.backends.mkldnn.matmul.fp32_precision}
    print(f"{setting}: same as highest: {torch.equal(out, highest)}, error against "
          f"float64: {precision[setting]['error']:.1e}\n    cuda.matmul.allow_tf32="
          f"{torch.backends.cuda.matmul.allow_tf32}, mkldnn.matmul.fp32_precision="
          f"{torch.backends.mkldnn.matmul.fp32_precision}")
torch.set_float32_matmul_precision("highest")  # back to the default
# --8<-- [end:precision]
results["precision"] = precision
# What bfloat16 inputs would cost: the same product of the inputs rounded to bfloat16.
rounded = a.bfloat16().float() @ b.bfloat16().float()
results["precision_bf16_inputs_error"] = (rounded.double() - exact).abs().max().item()


# --8<-- [start:freezing]
def inductor_code(fn, *args, **options):
    """The Python module Inductor wrote for fn's graph (caches off: a fresh compile)."""
    torch._dynamo.reset()
    with torch._inductor.config.patch(force_disable_caches=True, **options):
        _, (code, *_) = run_and_get_code(torch.compile(fn), *args)
    return code


layer = torch.nn.Linear(64, 64, device=device).eval()
frozen = {}
with torch.no_grad():  # freezing is for inference
    for freezing in (False, True):
        code = inductor_code(lambda x: torch.relu(layer(x)), x, freezing=freezing)
        body = code[code.index("def call("):]
        wanted = ("= args", "extern_kernels.", "= torch.ops")  # inputs, matmul calls
        lines = [textwrap.shorten(line.split(";  ")[0], 76)
                 for line in body.splitlines() if any(w in line for w in wanted)]
        frozen[freezing] = {"lines": lines, "constants": len(
            set(re.findall(r"_frozen_param\d+", code)))}
        print(f"freezing={freezing}:", *lines, sep="\n    ")
# --8<-- [end:freezing]
results["freezing"] = {str(k): v for k, v in frozen.items()}


# --8<-- [start:disable]
@torch.compiler.disable  # always runs eagerly, called from compiled code or not
def eager_helper(x):
    return x * 2


def with_helper(x):
    return torch.relu(eager_helper(torch.sin(x)))


torch._dynamo.reset()
graphs.clear()
torch.compile(with_helper, backend=counting)(x)
reason = torch._dynamo.explain(with_helper)(x).break_reasons[0].reason
print(f"{len(graphs)} graphs, one each side of the call; break: "
      f"{first_line(reason)}")
# --8<-- [end:disable]
results["disable"] = {"graphs": len(graphs), "reason": first_line(reason)}


# --8<-- [start:options]
def doubled_relu(x):
    return torch.relu(x) * 2


vectorised, kernels = {}, {}
for options in ({}, {"cpp.simdlen": 1}):  # simdlen 1: one element per instruction
    code = inductor_code(doubled_relu, x, **options)
    vectorised[str(options)] = code.count("at::vec::Vectorized")
    kernels[str(options)] = sorted(set(re.findall(r"\b(?:cpp_fused|triton)_\w+", code)))
    print(f"options={options}: {vectorised[str(options)]} uses of at::vec::Vectorized")
try:
    torch.compile(doubled_relu, mode="max-autotune", options={"cpp.simdlen": 1})
except RuntimeError as error:
    both = first_line(error)
    print(f"mode= and options= together: {both}")
# --8<-- [end:options]
results["options"] = {"vectorized": vectorised, "kernels": kernels,
                      "mode_and_options": both}

# --8<-- [start:lite]
torch._dynamo.reset()
with torch._inductor.config.patch(force_disable_caches=True):
    _, (code, *_) = run_and_get_code(torch.compile(doubled_relu, mode="lite"), x)
calls = [line.strip() for line in code.splitlines() if re.match(r"\s*buf\d+ = ", line)]
print("mode='lite' wrote:", *calls, sep="\n    ")
# --8<-- [end:lite]
results["lite"] = {"calls": calls, "fused_kernels": code.count("cpp_fused_")
                   + code.count("triton_")}
