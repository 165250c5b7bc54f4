"""Precision first: bf16 autocast and set_float32_matmul_precision under torch.compile.

    python snippets/optimizations/precision.py

Compiles a transformer's MLP sublayer (layer norm, two matmuls, GELU, the residual) in
float32 and under torch.autocast(bfloat16). Prints the ATen graph Inductor lowered for
each (autocast's casts are ops in it), the kernels Inductor generated (where each cast
went), the largest error of each run against float64, eager autocast against compiled
autocast, and which set_float32_matmul_precision changes recompile. Times nothing.
Runs on CUDA when torch sees a GPU, else on the CPU.
"""

import copy
import functools
import logging
import math
import re
import textwrap
from collections import Counter
from logging.handlers import BufferingHandler

import torch
from torch._inductor.compile_fx import compile_fx
from torch._inductor.utils import run_and_get_code

device = "cuda" if torch.cuda.is_available() else "cpu"
results = {}
results["device"] = device


# --8<-- [start:sublayer]
def mlp_sublayer(x, w1, w2):
    h = torch.nn.functional.layer_norm(x, x.shape[-1:])
    h = torch.nn.functional.gelu(h @ w1)
    return x + h @ w2


# A small transformer's width on CUDA; a CPU gets 1/8 of each size.
tokens, width = (4096, 1024) if device == "cuda" else (512, 128)
g = torch.Generator(device=device).manual_seed(0)
x = torch.randn(tokens, width, generator=g, device=device)
w1 = torch.randn(width, 4 * width, generator=g, device=device) * width**-0.5
w2 = torch.randn(4 * width, width, generator=g, device=device) * (4 * width) ** -0.5
# --8<-- [end:sublayer]
results["sizes"] = {"tokens": tokens, "width": width}

# --8<-- [start:read]
lowered = []


def keep_lowered(graph):
    """Inductor calls this with the ATen graph after its passes, before codegen."""
    lowered.append(copy.deepcopy(graph))


def op_name(node):
    name = str(node.target).split(".")[1]  # aten.mm.default -> mm
    if name == "convert_element_type":  # a cast, as Inductor's decompositions write it
        name = "to " + str(node.args[1]).removeprefix("torch.")
    return name


def compile_and_read(autocast):
    """Compile mlp_sublayer fresh (caches off, so the passes run); return its output,
    the ops of the graph Inductor lowered, and the Python module it generated."""
    torch._dynamo.reset()
    lowered.clear()
    with torch._inductor.config.patch(post_grad_custom_post_pass=keep_lowered,
                                      fx_graph_cache=False), \
            torch._functorch.config.patch(enable_autograd_cache=False), \
            torch.autocast(device, dtype=torch.bfloat16, enabled=autocast):
        out, (code,) = run_and_get_code(torch.compile(mlp_sublayer), x, w1, w2)
    ops = [op_name(n) for n in lowered[0].nodes
           if isinstance(n.target, torch._ops.OpOverload)]  # not getitem
    return out, ops, code


def launches(code):
    """The kernels the generated call() runs, in order, each with the inputs of
    mlp_sublayer it reads: Inductor's own kernels, named after the ops fused into
    each, and the library calls (extern_kernels.*)."""
    body = code[code.index("def call("):]
    unpacked = re.search(r"^\s+(\w+(?:, \w+)*),? = args", body, re.MULTILINE)
    inputs = dict(zip(unpacked.group(1).split(", "), ("x", "w1", "w2")))
    launch = r"^\s+(extern_kernels\.\w+|(?:cpp|triton)_\w+)(?:\.run)?\((.*)\)"
    found = re.findall(launch, body, flags=re.MULTILINE)
    return [(name, [inputs[a] for a in re.findall(r"\w+", args) if a in inputs])
            for name, args in found]
# --8<-- [end:read]


# --8<-- [start:graph]
compiled = {}
for autocast in (False, True):
    out, ops, code = compile_and_read(autocast)
    compiled[autocast] = {"out": out, "ops": ops, "code": code}
    casts = [op for op in ops if op.startswith("to ")]
    print(f"autocast={autocast}: {len(ops)} ops, {len(casts)} of them casts "
          f"({', '.join(f'{n} {op}' for op, n in Counter(casts).items()) or 'none'})")
    print(textwrap.fill(" ".join(ops), 80, initial_indent="    ",
                        subsequent_indent="    "))
# --8<-- [end:graph]
results["graph"] = {}
for autocast, key in ((False, "fp32"), (True, "autocast")):
    ops = compiled[autocast]["ops"]
    casts = sum(op.startswith("to ") for op in ops)
    results["graph"][key] = {"ops": len(ops), "casts": casts}

# --8<-- [start:kernels]
# A cast in generated C++ is a convert to or from BFloat16; in Triton, a .to().
cast = re.compile(r"convert<(?:at::|c10::)?(?:BFloat16|float)\b"
                  r"|\.to\(tl\.(?:bfloat16|float32)\)")
for autocast in (False, True):
    code = compiled[autocast]["code"]
    sources = dict(re.findall(r"^(\w+) = async_compile\.\w+\(.*?'''(.*?)'''", code,
                              flags=re.MULTILINE | re.DOTALL))
    compiled[autocast]["launches"] = launches(code)
    compiled[autocast]["casts"] = {k: len(cast.findall(s)) for k, s in sources.items()}
    print(f"autocast={autocast}: the kernels call() runs, with the inputs each reads")
    for name, reads in compiled[autocast]["launches"]:
        casts = compiled[autocast]["casts"].get(name, 0)
        print(f"    {name}({', '.join(reads)})"
              + (f": {casts} cast{'s' * (casts > 1)}" if casts else ""))
# --8<-- [end:kernels]
results["kernels"] = {}
for autocast, key in ((False, "fp32"), (True, "autocast")):
    ran = [name for name, _ in compiled[autocast]["launches"]]
    own = [k for k in ran if not k.startswith("extern_kernels")]
    results["kernels"][key] = {
        "launches": ran, "generated": len(own), "library": len(ran) - len(own),
        "reads": {name: reads for name, reads in compiled[autocast]["launches"]},
        "casts_in_code": compiled[autocast]["casts"],
        "with_cast": [k for k in own if compiled[autocast]["casts"].get(k)]}

# --8<-- [start:error]
with torch.no_grad():
    reference = mlp_sublayer(x.double(), w1.double(), w2.double())  # float64
    with torch.autocast(device, dtype=torch.bfloat16):
        eager_autocast = mlp_sublayer(x, w1, w2)
    runs = {"eager float32": mlp_sublayer(x, w1, w2),
            "compiled float32": compiled[False]["out"],
            "eager autocast": eager_autocast,
            "compiled autocast": compiled[True]["out"]}
errors = {}
for name, out in runs.items():
    errors[name] = (out.double() - reference).abs().max().item()
    print(f"{name:18} {str(out.dtype):14} largest error against float64: "
          f"{errors[name]:.1e}")
apart = (compiled[True]["out"] - eager_autocast).abs().max().item()
largest = reference.abs().max().item()
step = torch.finfo(torch.bfloat16).eps * 2 ** math.floor(math.log2(largest))
print(f"compiled autocast against eager autocast: largest difference {apart:.1e}\n"
      f"bitwise equal: {torch.equal(compiled[True]['out'], eager_autocast)}\n"
      f"bfloat16's step between values near the largest output, {largest:.1f}: "
      f"{step:.1e}")
# --8<-- [end:error]
results["error"] = {name.replace(" ", "_"): e for name, e in errors.items()}
results["error"].update(
    compiled_vs_eager_autocast=apart, bf16_step=step, largest=largest,
    bitwise_equal=torch.equal(compiled[True]["out"], eager_autocast),
    ratio=errors["compiled autocast"] / errors["compiled float32"])
results["dtypes"] = {name.replace(" ", "_"): str(o.dtype) for name, o in runs.items()}


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


# --8<-- [start:matmul_precision]
graphs, outs = [], {}


def inductor_counting(graph_module, example_inputs):
    graphs.append(graph_module)  # one per compile
    return compile_fx(graph_module, example_inputs)


def call_at(setting):
    torch.set_float32_matmul_precision(setting)
    outs[setting] = sublayer(x, w1, w2)


torch._dynamo.reset()
sublayer = torch.compile(mlp_sublayer, backend=inductor_counting)
recompiled = {}
for setting in ("highest", "high", "medium"):
    reasons = logged("recompiles", functools.partial(call_at, setting))
    recompiled[setting] = [line.strip(" -") for m in reasons
                           for line in m.splitlines() if "GLOBAL_STATE" in line]
    print(f"{setting:8} graphs compiled: {len(graphs)}, same as highest: "
          f"{torch.equal(outs[setting], outs['highest'])}"
          + "".join(f"\n    recompiled: {r}" for r in recompiled[setting]))
torch.set_float32_matmul_precision("highest")  # back to the default
# --8<-- [end:matmul_precision]
results["matmul_precision"] = {
    "graphs": len(graphs), "recompiled": recompiled,
    "high_same": torch.equal(outs["high"], outs["highest"]),
    "medium_same": torch.equal(outs["medium"], outs["highest"])}
