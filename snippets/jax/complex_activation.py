"""The six-op activation in JAX: eager jax.numpy runs six XLA computations, jax.jit one.

    python snippets/jax/complex_activation.py

Prints the program jax.jit hands to XLA (StableHLO, before optimization), the HLO XLA
compiled from it (after optimization: one loop fusion), and times eager against jitted.
Runs on the GPU when JAX sees one, else on the CPU.
"""

import os
import re
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

# XLA writes what it compiles (HLO, LLVM IR, object code) into this folder when told
# so before JAX starts its backend; the machine-code section reads the object code.
DUMP = tempfile.TemporaryDirectory(prefix="xla-dump-")  # removed when done
os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} --xla_dump_to={DUMP.name}"

import jax  # noqa: E402  (after XLA_FLAGS)
from jax import numpy as jnp  # noqa: E402

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


# --8<-- [start:function]
def complex_activation(x, y):
    # Eager: each line is one XLA computation that reads its inputs from memory
    # and writes its output back: 15 passes over N values in all.
    a = jnp.sin(x)
    b = jnp.cos(y)
    c = a * b
    d = c + x
    e = d * y
    return jax.nn.relu(e)


# jax.jit traces the whole function once and hands XLA one program: it can fuse
# the six ops into one loop that reads x and y once and writes once (3 passes).
activation_jit = jax.jit(complex_activation)
# --8<-- [end:function]

# --8<-- [start:setup]
backend = jax.default_backend()  # "gpu" when JAX sees one: it then puts arrays there
device = "cuda" if backend == "gpu" else backend
# The PyTorch chapters' sizes: 64 * 2**20 fp32 values (256 MiB per array) on a GPU,
# 32 * 2**20 (128 MiB, 4x a 32 MiB L3) on a CPU.
N = 64 * 2**20 if device == "cuda" else 32 * 2**20
key_x, key_y = jax.random.split(jax.random.key(0))
x = jax.random.normal(key_x, (N,), jnp.float32)
y = jax.random.normal(key_y, (N,), jnp.float32)
print(f"device: {device} ({jax.devices()[0].device_kind}), jax {jax.__version__}, "
      f"N = {N:,} fp32 values")
# --8<-- [end:setup]
results["device"] = device
results["n"] = N
results["jax"] = jax.__version__

# --8<-- [start:before]
lowered = activation_jit.lower(x, y)
before = lowered.as_text()  # StableHLO: the program jax.jit hands to XLA
for lines in computations(before).values():
    print("\n".join(lines))
elementwise = re.findall(r"stablehlo\.(sine|cosine|multiply|add|maximum) ", before)
print(f"{len(elementwise)} element-wise ops: {', '.join(elementwise)}")
# --8<-- [end:before]
results["before"] = {"elementwise_ops": elementwise, "op_count": len(elementwise)}

# --8<-- [start:after]
compiled = lowered.compile()
after = compiled.as_text()  # HLO after XLA's passes: what runs on the device
hlo = computations(after)
for lines in hlo.values():
    print("\n".join(lines))
fusions = re.findall(r"= \S+ fusion\(.*kind=(\w+)", after)
# The computation each fusion calls holds the ops it runs in one pass over memory.
fused = [op for name, lines in hlo.items() if name.startswith("fused")
         for op in opcodes(lines) if op not in ("constant", "broadcast")]
print(f"{len(fusions)} fusion ({', '.join(fusions)}) running {len(fused)} ops: "
      f"{', '.join(fused)}")
print(f"the entry computation runs: {', '.join(opcodes(hlo['ENTRY']))}")
# --8<-- [end:after]
results["after"] = {
    "fusions": len(fusions),
    "fusion_kinds": fusions,
    "fused_ops": fused,
    "fused_op_count": len(fused),
    "entry_ops": opcodes(hlo["ENTRY"]),
}

# --8<-- [start:same]
eager_out = complex_activation(x, y)
jit_out = activation_jit(x, y)
# Not bit-identical: the fused loop may evaluate sin and cos with other instructions.
same = bool(jnp.allclose(eager_out, jit_out, rtol=1e-5, atol=1e-5))
print(f"jitted == eager (to 1e-5): {same}")
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
m_eager, m_jit = measure({"eager": (complex_activation, x, y),
                          "jit": (activation_jit, x, y)}).values()
for label, m in (("eager", m_eager), ("jax.jit", m_jit)):
    print(f"{label:<8} {m['median_us']:10,.0f} us median, "
          f"IQR {m['iqr_us']:8,.0f} us, n = {m['n']}")
# --8<-- [end:timing]
results["timing"] = {"eager": m_eager, "jit": m_jit}

# --8<-- [start:machine_code]
# How does XLA's CPU code compute sin and cos? Its object code for the fusion names
# the functions the loop calls. sinf and cosf are the C library's scalar routines,
# one value per call; Inductor's C++ kernel calls vectorised Sleef routines instead,
# on a whole vector of values per call.
objects = sorted(Path(DUMP.name).glob("*jit_complex_activation*.o"))
if device == "cpu" and objects and shutil.which("objdump"):
    code = subprocess.run(["objdump", "-d", "-r", str(objects[0])],
                          capture_output=True, text=True).stdout
    called = sorted(set(re.findall(r"R_\w+\s+([a-z]\w*)", code)))
    call_count = len(re.findall(r"\tcall", code))
    vector = re.findall(r"\b(v\w+ps)\s+.*%([xyz]mm)", code)
    widths = sorted({register for _, register in vector})
    print(f"the fusion's object code calls: {', '.join(called)}; "
          f"{call_count} call instructions; vector registers used: {', '.join(widths)}")
else:
    called, call_count, widths = [], None, []
    print("not read: XLA dumps object code only on a CPU, and objdump must be present")
# --8<-- [end:machine_code]
DUMP.cleanup()
results["machine_code"] = {"called": called, "calls": call_count,
                           "vector_registers": widths,
                           "libm": sorted({"sinf", "cosf"} & set(called))}
