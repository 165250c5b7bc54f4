"""Dead-code elimination in JAX: a matmul whose result nobody reads never runs.

    python snippets/jax/dead_code.py

Follows an MLP with one unused matmul through jax.jit: the jaxpr JAX traces (three
matmuls), the StableHLO it hands to XLA (two: JAX drops dead code itself), the same with
keep_unused=True (three reach XLA), and the HLO XLA compiled (two). Times eager against
jitted. Runs on the GPU when JAX sees one, else on the CPU.
"""

import os
import re
import statistics
import time

import jax
from jax import numpy as jnp

results = {}


# The first line of a computation: `ENTRY %main.2 (x.1: f32[8]) -> f32[8] {` in HLO,
# `func.func public @main(%arg0: tensor<8xf32>) -> ... {` in StableHLO.
HEADER = r"\s*(ENTRY )?%?([\w.\-]+) \(.*\{$|\s*func\.func \w+ @([\w.]+)\("


def computations(text):
    """{name: lines} for each computation in HLO or StableHLO text ("ENTRY" for the
    HLO entry), leaving out what XLA attaches to each line for its own use: metadata
    (op names, source lines) and backend configs (kept: the fusion kind, if named)."""
    found, name = {}, None
    for line in text.splitlines():
        header = re.match(HEADER, line)
        if header and not line.startswith(("HloModule", "module")):
            name = "ENTRY" if header.group(1) else header.group(2) or header.group(3)
            found[name] = []
        if name is None:
            continue
        kind = re.search(r'backend_config=.*?"kind":"(\w+)"', line)
        line = re.sub(r", (metadata|frontend_attributes)=\{[^}]*\}", "", line)
        line = re.sub(r", backend_config=.*$|, precision = \[\w+, \w+\]", "", line)
        found[name].append(line + (f"  /*{kind.group(1)}*/" if kind else ""))
        if line.strip() == "}":
            name = None
    return found


def opcodes(lines):
    """The HLO opcode of each instruction line but parameters:
    `%a = f32[8]{0} sine(%b)` -> sine."""
    ops = [re.search(r"= \S+ ([\w\-]+)\(", line) for line in lines]
    return [op.group(1) for op in ops if op and op.group(1) != "parameter"]


# A matmul in HLO after optimization: a `dot` (on its own or inside a fusion) or a
# call into cuBLAS on a GPU.
MATMUL = r"\bdot\(|custom_call_target=\"__cublas"


# --8<-- [start:mlp]
def mlp(x, gating0, gating1, linear):
    h = x @ gating0
    unused = x @ gating1  # computed, then never read: no output depends on it
    h = jax.nn.relu(h)
    return h @ linear


backend = jax.default_backend()  # "gpu" when JAX sees one: it then puts arrays there
device = "cuda" if backend == "gpu" else backend
# The batch, model and hidden sizes of a small transformer MLP on a GPU; a CPU gets
# 1/8 of each.
b, d = (512, 2048) if device == "cuda" else (64, 256)
f = 2 * d
dtype = jnp.bfloat16 if device == "cuda" else jnp.float32
keys = jax.random.split(jax.random.key(0), 4)
x = jax.random.normal(keys[0], (b, d), dtype)
gating0 = jax.random.normal(keys[1], (d, f), dtype) / d**0.5
gating1 = jax.random.normal(keys[2], (d, f), dtype) / d**0.5
linear = jax.random.normal(keys[3], (f, d), dtype) / f**0.5
args = (x, gating0, gating1, linear)
print(f"device: {device}, jax {jax.__version__}; x {x.shape}, gating0 and gating1 "
      f"{gating0.shape}, linear {linear.shape}, {jnp.dtype(dtype).name}")
# --8<-- [end:mlp]
results["device"] = device
results["jax"] = jax.__version__

# --8<-- [start:jaxpr]
# What JAX traced: every line of mlp, the unused matmul included (its result is `_`:
# nothing reads it). Printed: the top-level equations, one line each.
jaxpr = str(jax.make_jaxpr(mlp)(*args))
print("\n".join(line for line in jaxpr.splitlines()
                if re.match(r"\{ lambda|    \S+ = |  in ", line)))
print(f"matmuls traced: {jaxpr.count('dot_general[')}")
# --8<-- [end:jaxpr]
results["traced_matmuls"] = jaxpr.count("dot_general[")

# --8<-- [start:before]
# What jax.jit hands to XLA, as StableHLO (the main function's header and matmuls).
for keep_unused in (False, True):
    before = jax.jit(mlp, keep_unused=keep_unused).lower(*args).as_text()
    main = computations(before)["main"]
    print(f"keep_unused={keep_unused}:")
    shown = [line for line in main if re.search(r"func\.func|dot_general", line)]
    print("\n".join(shown))
    matmuls = len(re.findall(r"stablehlo\.dot_general", before))
    arguments = len(re.findall(r"%arg\d+: tensor", main[0]))
    print(f"  {matmuls} matmuls, {arguments} arguments reach XLA")
# --8<-- [end:before]
lowered_default = jax.jit(mlp).lower(*args).as_text()
results["lowered_matmuls"] = {
    "default": len(re.findall(r"stablehlo\.dot_general", lowered_default)),
    "keep_unused": matmuls,
}

# --8<-- [start:after]
# Given all three matmuls (keep_unused=True), what does XLA keep?
compiled = jax.jit(mlp, keep_unused=True).lower(*args).compile()
after = compiled.as_text()
hlo = computations(after)
for name, lines in hlo.items():
    if name == "ENTRY" or any(re.search(MATMUL, line) for line in lines):
        print("\n".join(lines))
# Is the third parameter, gating1, an operand of anything in the entry computation?
entry = "\n".join(hlo["ENTRY"])
gating1_name = re.search(r"(%\S+) = \S+ parameter\(2\)", entry).group(1)
gating1_used = bool(re.search(re.escape(gating1_name) + r"[,)]", entry))
print(f"matmuls after optimization: {len(re.findall(MATMUL, after))}; "
      f"gating1 ({gating1_name}) used: {gating1_used}")
# --8<-- [end:after]
results["compiled_matmuls"] = len(re.findall(MATMUL, after))
results["gating1_used"] = gating1_used
results["entry_ops"] = opcodes(hlo["ENTRY"])

# --8<-- [start:same]
mlp_jit = jax.jit(mlp)
tolerance = 2e-2 if dtype == jnp.bfloat16 else 1e-4
same = bool(jnp.allclose(mlp(*args), mlp_jit(*args), rtol=tolerance, atol=tolerance))
print(f"jitted == eager: {same}")
# --8<-- [end:same]
results["allclose"] = same


# --8<-- [start:measure]
def measure(candidates, rounds=10):
    """The site's one method, for JAX. `candidates` maps a name to (fn, *args). Each is
    warmed up (its first call traces and compiles) and given a block of calls lasting
    10 ms at least; then one block of each is timed in turn, round after round (A, B,
    A, B, ...), so a burst of load from elsewhere hits all alike. JAX returns before
    the device is done, so every block ends with block_until_ready(), as torch's Timer
    syncs CUDA. Returns name -> timing, per call, in microseconds."""
    def block(fn, args, number):  # seconds per call, over `number` calls
        start = time.perf_counter()
        for _ in range(number):
            out = fn(*args)
        jax.block_until_ready(out)
        return (time.perf_counter() - start) / number

    def work(fn, args):  # what was timed: "jax.jit f(float32[1024], ...)"
        kind = "jax.jit " if hasattr(fn, "lower") else "jax "  # jitted ones lower
        shapes = ", ".join(f"{a.dtype}{list(a.shape)}" for a in args)
        return f"{kind}{getattr(fn, '__name__', type(fn).__name__)}({shapes})"

    # XLA's CPU client runs a computation on a pool of one thread per CPU this process
    # may run on (its affinity mask, which can be fewer than os.cpu_count()), unless
    # the PJRT_NPROC or NPROC variables say otherwise: XLA's DefaultThreadPoolSize().
    threads = len(os.sched_getaffinity(0))
    calls = {}
    for name, (fn, *args) in candidates.items():
        jax.block_until_ready(fn(*args))  # first call: traces and compiles
        number, warm_until = 1, time.perf_counter() + 0.2
        while time.perf_counter() < warm_until:  # warm-up; picks the calls per block
            if block(fn, args, number) * number < 0.01:
                number *= 2
        calls[name] = number
    times = {name: [] for name in candidates}
    for _ in range(rounds):
        for name, (fn, *args) in candidates.items():
            times[name].append(block(fn, args, calls[name]))
    timings = {}
    for name, (fn, *args) in candidates.items():
        q1, median, q3 = statistics.quantiles(times[name], n=4, method="inclusive")
        timings[name] = {"work": work(fn, args), "threads": threads,
                         "median_us": median * 1e6, "iqr_us": (q3 - q1) * 1e6,
                         "q1_us": q1 * 1e6, "q3_us": q3 * 1e6, "n": len(times[name]),
                         "times_us": [t * 1e6 for t in times[name]]}
    return timings
# --8<-- [end:measure]


# --8<-- [start:timing]
# Eager runs all three matmuls, one XLA computation each; the jitted mlp runs two.
m_eager, m_jit = measure({"eager": (mlp, *args), "jit": (mlp_jit, *args)}).values()
for label, m in (("eager", m_eager), ("jax.jit", m_jit)):
    print(f"{label:<8} {m['median_us']:10,.0f} us median, "
          f"IQR {m['iqr_us']:8,.0f} us, n = {m['n']}")
# --8<-- [end:timing]
results["timing"] = {"eager": m_eager, "jit": m_jit}
