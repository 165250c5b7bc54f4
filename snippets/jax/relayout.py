"""Relayout in JAX: XLA moves the heads of an einsum's (64, 4, 1024) operands first.

    python snippets/jax/relayout.py

The einsum's batch dimension (4 heads) sits in the middle of each operand. Prints the
StableHLO jax.jit hands to XLA (one dot_general, batch dimension 1), the HLO XLA
compiled (the transposes and copies it inserted, and the dot it runs on heads-first
operands), and the same einsum on operands that arrive heads-first. Runs on the GPU
when JAX sees one, else on the CPU.
"""

import re

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


# An instruction that moves data into another order, with its shape and layout:
# `%transpose.3 = f32[4,64,1024]{2,0,1} transpose(%param_0.4), dimensions={1,0,2}`.
RELAYOUT = r"= (\w+\[[\d,]*\]\{[\d,]*\}) (transpose|copy)\("


# A rank-3 array stored in any order but row-major ({2,1,0}): f32[4,64,1024]{2,0,1}.
OTHER_LAYOUT = r"\w+\[\d+,\d+,\d+\]\{(?!2,1,0\})[\d,]+\}"


def relayouts(hlo_text):
    return [f"{op} -> {shape}" for shape, op in re.findall(RELAYOUT, hlo_text)]


# --8<-- [start:einsum]
def scores(q, k):
    # Attention scores per head: for each head h, q[:, h, :] @ k[:, h, :].T.
    # h is a batch dimension (in both operands and the result, never summed),
    # d (1024) is contracted.
    return jnp.einsum("qhd,khd->hqk", q, k)


backend = jax.default_backend()  # "gpu" when JAX sees one: it then puts arrays there
device = "cuda" if backend == "gpu" else backend
key_q, key_k = jax.random.split(jax.random.key(0))
# (sequence 64, heads 4, features 1024): the heads sit between the other two.
q = jax.random.normal(key_q, (64, 4, 1024), jnp.float32)
k = jax.random.normal(key_k, (64, 4, 1024), jnp.float32)
print(f"device: {device}, jax {jax.__version__}; q and k {q.shape} float32, "
      f"scores {scores(q, k).shape}")
# --8<-- [end:einsum]
results["device"] = device
results["jax"] = jax.__version__

# --8<-- [start:before]
lowered = jax.jit(scores).lower(q, k)
before = lowered.as_text()  # StableHLO: the program jax.jit hands to XLA
print("\n".join(computations(before)["main"]))
batching = re.search(r"batching_dims = (\[\d+\] x \[\d+\])", before).group(1)
print(f"batch dimension of q and k: {batching} (the heads, in the middle)")
# --8<-- [end:before]
results["before"] = {"batching_dims": batching, "relayouts": relayouts(before)}

# --8<-- [start:after]
after = lowered.compile().as_text()  # HLO after XLA's passes
for lines in computations(after).values():
    print("\n".join(lines))
moved = relayouts(after)
print("XLA inserted:")
print("\n".join(f"  {line}" for line in moved))
# In a dot: lhs_batch_dims={0}; in a cuBLAS call's config: "lhs_batch_dimensions":["0"].
BATCH = r'lhs_batch_dims=\{(\d+)\}|"lhs_batch_dimensions":\["(\d+)"'
dot_batch = [a or b for a, b in re.findall(BATCH, after)]
print(f"the matmul's batch dimension in its first operand: {', '.join(dot_batch)}")
# --8<-- [end:after]
results["after"] = {
    "relayouts": moved,
    "relayout_count": len(moved),
    "transposes": sum(line.startswith("transpose") for line in moved),
    "dot_lhs_batch_dims": [int(d) for d in dot_batch],
    "heads_first": "[4,64,1024]" in after,
    # Rank-3 arrays stored in any order other than row-major ({2,1,0}).
    "other_layouts": sorted(set(re.findall(OTHER_LAYOUT, after))),
}

# --8<-- [start:batch_first]
# The same scores from operands that arrive heads-first, (4, 64, 1024): is q moved?
q_h, k_h = q.transpose(1, 0, 2), k.transpose(1, 0, 2)
after_h = jax.jit(lambda q, k: jnp.einsum("hqd,hkd->hqk", q, k)).lower(q_h, k_h)
moved_h = relayouts(after_h.compile().as_text())
print("heads-first operands; XLA inserted:")
print("\n".join(f"  {line}" for line in moved_h) or "  nothing")
same = bool(jnp.allclose(scores(q, k), jnp.einsum("hqd,hkd->hqk", q_h, k_h),
                         rtol=1e-4, atol=1e-3))
print(f"same scores: {same}")
# --8<-- [end:batch_first]
results["heads_first_input"] = {"relayouts": moved_h, "relayout_count": len(moved_h)}
results["allclose"] = same
