"""When compiled output is wrong: ablation across the stack, then the bisector.

    python snippets/dissecting/wrong_output.py

A bug is planted in one of Inductor's decompositions (SiLU's, with the sign of the
exponent flipped), so that a small feed-forward layer compiles to wrong numbers. The
snippet finds it the two ways PyTorch's documentation describes: by hand, compiling
with each backend of the stack in turn (eager, aot_eager, aot_eager_decomp_partition,
inductor) and comparing each with eager; then with Inductor's compiler bisector,
which finds the backend, the subsystem and the one application of it that breaks
the result. Runs on CUDA when torch sees a GPU, else on the CPU.
"""

import contextlib
import io
import logging
import re
from logging.handlers import BufferingHandler
from unittest import mock

import torch
import torch.nn.functional as F
from functorch.compile import minifier
from torch._dynamo.debug_utils import AccuracyError
from torch._inductor import compile_fx
from torch._inductor.compiler_bisector import CompilerBisector
from torch.fx.experimental.proxy_tensor import make_fx
from torch.utils._pytree import tree_leaves

device = "cuda" if torch.cuda.is_available() else "cpu"
results = {"device": device}


def ops(gm):
    return sum(node.op == "call_function" for node in gm.graph.nodes)


# --8<-- [start:model]
def feed_forward(x, w_up, w_down):  # a transformer's MLP: up, SiLU, down
    return F.silu(x @ w_up) @ w_down


torch.manual_seed(0)
x = torch.randn(64, 128, device=device)
w_up = torch.randn(128, 512, device=device) / 128**0.5
w_down = torch.randn(512, 128, device=device) / 512**0.5
expected = feed_forward(x, w_up, w_down)  # eager: the reference
# --8<-- [end:model]


# --8<-- [start:bug]
def wrong_silu(x):  # SiLU is x * sigmoid(x) = x / (1 + exp(-x)); the minus is lost
    return x / (1 + torch.exp(x))


# Inductor and the aot_eager_decomp_partition backend ask this function for their
# table of decompositions: from here on, every compile that decomposes SiLU is wrong.
shipped = compile_fx.select_decomp_table
planted = mock.patch.object(compile_fx, "select_decomp_table", lambda: {
    **shipped(), torch.ops.aten.silu.default: wrong_silu})
planted.start()
# The compile caches key a graph by the graph, not by this table: a compile with the
# bug must be neither stored there nor found there by the compile after the fix.
torch._inductor.config.force_disable_caches = True
# --8<-- [end:bug]


# --8<-- [start:ablation]
def max_error(backend):
    torch._dynamo.reset()  # compile afresh with this backend
    got = torch.compile(feed_forward, backend=backend)(x, w_up, w_down)
    return (got - expected).abs().max().item()


TOLERANCE = 1e-4  # reordered float32 sums move the last bits; the bug moves more
errors = {}
for backend in ["eager", "aot_eager", "aot_eager_decomp_partition", "inductor"]:
    errors[backend] = max_error(backend)
    verdict = "matches eager" if errors[backend] < TOLERANCE else "WRONG"
    print(f"{backend:<27} max |compiled - eager| = {errors[backend]:.1e}  {verdict}")
# --8<-- [end:ablation]
results["errors"] = errors
results["tolerance"] = TOLERANCE


# --8<-- [start:bisect]
def matches_eager():  # the bisector's test: True when the compiled output is right
    torch._dynamo.reset()
    got = torch.compile(feed_forward)(x, w_up, w_down)
    return torch.allclose(got, expected, atol=TOLERANCE)


found = CompilerBisector.do_bisect(matches_eager)
print(f"backend:   {found.backend}\nsubsystem: {found.subsystem}\n"
      f"number:    {found.bisect_number} (the first application that breaks it)\n"
      f"culprit:   {found.debug_info}")
# --8<-- [end:bisect]
results["bisect"] = {"backend": found.backend, "subsystem": found.subsystem,
                     "number": found.bisect_number, "culprit": found.debug_info}

# --8<-- [start:minify]
def block(x, gamma, w_up, w_down, w_head):  # a norm, the MLP with a residual, a head
    h = F.layer_norm(x, gamma.shape, gamma)
    h = x + F.silu(h @ w_up) @ w_down
    return torch.softmax(h @ w_head, dim=-1)


w_head = torch.randn(128, 32, device=device) / 128**0.5
inputs = [x, torch.ones(128, device=device), w_up, w_down, w_head]
graph = make_fx(block)(*inputs)  # its ATen ops, the graph AOTAutograd starts from


def fails(gm, inputs):  # the minifier's test: True when compiling gm changes it
    torch._dynamo.reset()
    got = torch.compile(gm, backend="aot_eager_decomp_partition")(*inputs)
    return not all(torch.allclose(a, b, atol=TOLERANCE)
                   for a, b in zip(tree_leaves(got), tree_leaves(gm(*inputs))))


log = io.StringIO()
with contextlib.redirect_stderr(log):  # it narrates every cut it tries
    small, small_inputs = minifier(graph, inputs, fails,
                                   dump_state=lambda gm, inputs: None)
tried = int(re.search(r"Made (\d+) queries", log.getvalue()).group(1))
print(f"{ops(graph)} ops, still wrong with {ops(small)} after {tried} tries:")
print(small.code.strip())
# --8<-- [end:minify]
results["minified"] = {"ops_before": ops(graph), "ops_after": ops(small),
                       "tries": tried, "code": small.code.strip(),
                       "inputs": [list(t.shape) for t in small_inputs]}


# --8<-- [start:repro_after]
skips = BufferingHandler(capacity=100)  # where the accuracy check logs a graph it skips
logging.getLogger("torch._dynamo.debug_utils").addHandler(skips)
torch._dynamo.config.repro_level = 4  # TORCHDYNAMO_REPRO_LEVEL=4: check accuracy
checks = {}
for after in ("aot", "dynamo"):  # TORCHDYNAMO_REPRO_AFTER: which graph it checks
    torch._dynamo.config.repro_after = after
    torch._dynamo.reset()
    skips.buffer.clear()
    try:
        got = torch.compile(feed_forward)(x, w_up, w_down)
        error = (got - expected).abs().max().item()
        verdict = f"no AccuracyError, max |compiled - eager| = {error:.1e}"
    except AccuracyError:
        verdict = "AccuracyError"
    skipped = [f"{type(r.exc_info[1]).__name__}: {r.exc_info[1]}" for r in skips.buffer]
    checks[after] = {"verdict": verdict, "skipped": skipped}
    print(f"REPRO_AFTER={after:<7} {verdict}")
    for reason in skipped:  # a graph the check gave up on, and why
        print(f"  the check skipped the graph: {reason}")
torch._dynamo.config.repro_after = None
# --8<-- [end:repro_after]
results["repro_after"] = checks


# --8<-- [start:checked]
flagged = []  # (ops, error) of each graph whose compiled output differs from eager


def checked_inductor(gm, example_inputs):  # a backend: Inductor, checked against eager
    want = gm(*example_inputs)  # the graph Dynamo captured, run as traced
    compiled = compile_fx.compile_fx(gm, example_inputs)  # what torch.compile runs
    got = compiled(*example_inputs)
    error = max((a - b).abs().max().item()
                for a, b in zip(tree_leaves(got), tree_leaves(want)))
    if error > TOLERANCE:
        flagged.append((ops(gm), error))
        print(f"a graph of {ops(gm)} ops differs from eager by {error:.1e}:")
        print(gm.code.strip())
    return compiled


torch._dynamo.reset()
torch.compile(feed_forward, backend=checked_inductor)(x, w_up, w_down)
# --8<-- [end:checked]
results["checked"] = [{"ops": n, "error": error} for n, error in flagged]


# --8<-- [start:fixed]
planted.stop()  # the table as torch ships it
fixed = max_error("inductor")
print(f"without the planted bug: inductor max |compiled - eager| = {fixed:.1e}")
# --8<-- [end:fixed]
results["fixed_error"] = fixed
