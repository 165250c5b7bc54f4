"""A graph-break atlas: the breaks users meet most, each caused, counted, and fixed.

    python snippets/graph_mode/break_atlas.py

Every case is a pair of small functions: one that breaks the graph, and its fix. Each
is compiled with the "eager" backend (Dynamo only, no Inductor, so it is quick) and
called once; the graph breaks are what TORCH_LOGS=graph_breaks prints, one message per
break. The first message of each case is kept as the release printed it, with paths,
addresses and line numbers taken out. Then each fix is proven to compute the same: the
fix, compiled, against the original run eagerly, on the same inputs (outputs,
gradients, the exception raised, what was printed, logged or warned). A fix that must
change what the program does says so. Runs on CUDA when torch sees a GPU, else on
the CPU.
"""

import collections
import contextlib
import copy
import dataclasses
import datetime
import functools
import gc
import hashlib
import inspect
import io
import itertools
import logging
import os
import pickle
import random
import re
import sys
import threading
import time
import typing
import warnings
import zlib

import numpy as np
import torch

device = "cuda" if torch.cuda.is_available() else "cpu"
results = {"device": device, "atlas_kind": "graph_break"}
log = logging.getLogger("atlas")
log.setLevel(logging.INFO)
config = torch._dynamo.config


# --8<-- [start:count]
class BreakLog(logging.Handler):
    """Keeps what TORCH_LOGS=graph_breaks prints: one message per graph break."""

    def __init__(self):
        super().__init__()
        self.messages = []

    def emit(self, record):
        message = record.getMessage()
        if message.startswith("Graph break in user code"):
            self.messages.append(message)


def graph_breaks(fn, args, settings, around=None):
    """Compile fn with Dynamo only, call it once (through around, the code that
    calls it, where the fix moved work out of it), return the break messages."""
    torch._dynamo.reset()  # forget what earlier cases compiled
    found = BreakLog()
    dynamo_log = logging.getLogger("torch._dynamo")  # graph_breaks logs under it
    torch._logging.set_logs(graph_breaks=True)  # the switch TORCH_LOGS uses
    dynamo_log.addHandler(found)
    try:
        with config.patch(**settings):
            compiled = torch.compile(fn, backend="eager")
            (around or call)(compiled, *args)
    finally:
        dynamo_log.removeHandler(found)
        torch._logging.set_logs()  # back to the defaults
    return found.messages


def call(fn, *args):
    return fn(*args)
# --8<-- [end:count]


# --8<-- [start:same]
class Lines(logging.Handler):
    """Keeps what a logger wrote."""

    def __init__(self):
        super().__init__()
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage())


def outcome(program, args, state, seed=0, written=False):
    """What one call does, all of it: its outputs (and which are an input, or a view
    of one, and whether each takes an in-place write), the exception it raises (type
    and message), the gradients its backward leaves on the inputs, on outputs that
    keep theirs and on the modules' parameters, what it printed, logged and warned,
    the inputs as it left them, the random generators' states, the modules'
    state_dicts, which global tensors are shared, the state it changed and the grad
    and autocast modes it left on. The generators start from seed. written: the
    inputs that need a gradient reach the call as a layer's output would (not
    leaves), and the caller writes into them in place before the backward (x *= 1),
    as a next step may: a tensor the call saved for its backward then raises there."""
    state.reset()
    before = modes()
    weights = parameters()
    for p in weights:
        p.grad = None
    torch.manual_seed(seed), random.seed(seed), np.random.seed(seed)
    printed, logged = io.StringIO(), Lines()
    log.addHandler(logged)
    try:
        with contextlib.redirect_stdout(printed), warnings.catch_warnings(
                record=True) as warned:
            warnings.simplefilter("always")
            out, raised, outs = None, None, []
            try:  # the call, then a backward that reaches inputs and weights
                given = tuple(a * 1 if written and torch.is_tensor(a)
                              and a.requires_grad else a for a in args)
                out = program(*given)
                outs = [t for t in flat(out) if torch.is_tensor(t)]
                aliases = [aliased(t, given) for t in outs]
                for a, b in zip(given, args):
                    if a is not b:
                        a.mul_(1)  # the same values, a new version of the tensor
                backward = [t for t in outs if t.requires_grad]
                if backward:
                    sum(t.sum() for t in backward).backward()
                aliases = [(where, writable(t)) for where, t in zip(aliases, outs)]
            except Exception as error:  # compared by its type and message
                raised = (type(error).__name__, str(error),
                          [kind.__name__ for kind in type(error).__mro__])
            leaves = [a for a in args if torch.is_tensor(a) and a.requires_grad]
    finally:
        log.removeHandler(logged)
        after = modes()
        put_modes(before)  # so that no case runs in the modes another left on
    return {"out": out, "raised": raised, "alias": aliases if outs else [],
            "grads": [a.grad for a in leaves] + [t.grad for t in outs
                                                 if t.retains_grad],
            "params": [p.grad for p in weights],
            "printed": printed.getvalue(), "logged": logged.lines,
            "warned": [f"{w.category.__name__}: {w.message}" for w in warned
                       if not COMPILER.search(w.filename)],
            "inputs": [a.detach().clone() for a in args if torch.is_tensor(a)],
            "rng": generators(), "modules": module_state(),
            "state": (state.read(), after)}


# A warning torch gives once a process (TORCH_WARN_ONCE) is given at every call here,
# so the second of the two runs sees it too.
torch.set_warn_always(True)
# Warnings the compiler itself raises (the fix is compiled, the original not).
COMPILER = re.compile(r"torch[/\\]_(dynamo|inductor|functorch|higher_order_ops)")


def aliased(t, args):  # the input t is, or shares memory with, and where it starts
    for i, a in enumerate(args):
        if t is a:
            return i, "is"
        with contextlib.suppress(RuntimeError, NotImplementedError):  # sparse, nested
            if t.numel() and t.untyped_storage().data_ptr() == (
                    a.untyped_storage().data_ptr() if torch.is_tensor(a) else None):
                return i, t.storage_offset()
    return None


def writable(t):
    """Whether t takes an in-place write (its own values written back): a view of a
    leaf that needs a gradient, one of the views unbind returns, an expanded tensor
    refuse it, a new tensor takes it. The exception's type where it refuses."""
    try:
        t.copy_(t.detach().clone())
        return True
    except Exception as error:  # what writing into it would raise
        return type(error).__name__


def modes():  # the grad mode and autocast's, as a caller's next line would find them
    return (torch.is_grad_enabled(), torch.is_inference_mode_enabled(),
            [(torch.is_autocast_enabled(kind), torch.get_autocast_dtype(kind))
             for kind in ("cpu", "cuda")])


def put_modes(saved):
    grad, _, autocast = saved
    torch.set_grad_enabled(grad)
    for kind, (enabled, dtype) in zip(("cpu", "cuda"), autocast):
        torch.set_autocast_enabled(kind, enabled)
        torch.set_autocast_dtype(kind, dtype)


def parameters():  # every parameter of the modules this file made
    found = {id(p): p for m in modules() for p in m.parameters()}
    return list(found.values())


def modules():
    return [m for m in list(globals().values()) if isinstance(m, torch.nn.Module)]


def module_state():  # what a checkpoint holds, and which global tensors are shared
    return ([{k: v.detach().clone() if torch.is_tensor(v) else v
              for k, v in m.state_dict().items()} for m in modules()],
            [t.is_shared() for t in list(globals().values()) if torch.is_tensor(t)])


def generators():  # where each random stream stands
    states = [torch.get_rng_state(), repr(random.getstate()),
              np.random.get_state()[1].tolist()]
    if torch.cuda.is_available():
        states.append(torch.cuda.get_rng_state())
    return states


def flat(value):
    if isinstance(value, (list, tuple)):
        return [v for item in value for v in flat(item)]
    return [value]


def same(a, b, exact=False):
    """Equal values: tensors of one dtype, shape, strides, device, layout and
    requires_grad, close to float rounding (bit for bit where exact, and for zeros,
    their sign too, and subnormals always); containers item by item; other objects
    of one type."""
    if torch.is_tensor(a) and torch.is_tensor(b):
        if (a.dtype, a.shape, a.device, a.layout, a.requires_grad) != (
                b.dtype, b.shape, b.device, b.layout, b.requires_grad):
            return False
        if a.layout == torch.strided and a.numel() and a.stride() != b.stride():
            return False  # (no element: no layout to see)
        a, b = (t.detach().cpu() for t in (a, b))
        if a.layout != torch.strided:
            a, b = a.to_dense(), b.to_dense()
        if a.is_complex():
            a, b = torch.view_as_real(a), torch.view_as_real(b)
        if not a.is_floating_point():
            return bool((a == b).all())
        # Bit for bit: the sign of a zero too (-0.0 == 0.0 is True), and NaN as NaN.
        bits = ((a == b) & (a.signbit() == b.signbit())) | (a.isnan() & b.isnan())
        if exact:
            return bool(bits.all())
        # Zeros and subnormals bit for bit even where rounding is allowed elsewhere.
        tiny = torch.finfo(a.dtype).tiny
        small = (a.abs() < tiny) | (b.abs() < tiny)
        return bool(bits[small].all()) and torch.allclose(
            a, b, rtol=1e-5, atol=1e-6, equal_nan=True)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(
            same(x, y, exact) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k], exact) for k in a)
    if isinstance(a, (int, float, str, bool, type(None))):
        return a == b
    return type(a) is type(b)


def fresh(args):  # new leaves where inputs need gradients; the others shared
    return tuple(a.detach().clone().requires_grad_()
                 if torch.is_tensor(a) and a.requires_grad else a for a in args)


def put_back(args, saved):  # undo what a run wrote into the shared inputs
    for a, value in zip([a for a in args if torch.is_tensor(a)], saved):
        if not same(a.detach(), value, exact=True):
            with torch.inference_mode(a.is_inference()), torch.no_grad():
                a.copy_(value)


def computes_the_same(broken, fixed, settings, around, probes, state):
    """The fix, compiled, against the original run eagerly, on each probe's inputs,
    and on the variants of the first (where the original raises on a variant, the
    fix must raise what the original's except would catch: the message is compared
    on the probes and the input that needs a gradient only), then once more with the
    generators started from another seed than the cases set. Returns the parts that
    differ (none: the fix computes the same) and the parts equal only to float
    rounding."""
    torch._dynamo.reset()
    differs, rounded = set(), set()
    more = variants(probes[0])
    runs = [(make, 0, True, False) for make in probes] + [
        (make, 0, kind == "grad", False) for kind, make in more.items()]
    # Written into after the call: every probe's inputs, and one element's.
    for make in [*probes, more.get("one")]:
        if make and "grad" in (needing := variants(make)):
            runs.append((needing["grad"], 0, False, True))
    # Every variant may recompile: past the limit the fix would run eagerly, unproven.
    limits = has(("recompile_limit", 1000), ("accumulated_recompile_limit", 10000))
    with config.patch(**settings, **limits):
        compiled = torch.compile(fixed, backend="eager")
        for make, seed, always, written in [*runs, (probes[0], 1, True, False)]:
            args = make()
            saved = [a.detach().clone() for a in args if torch.is_tensor(a)]
            want = outcome(broken, fresh(args), state, seed, written)
            put_back(args, saved)
            got = outcome(lambda *a: (around or call)(compiled, *a), fresh(args),
                          state, seed, written)
            put_back(args, saved)
            catches(want, got, always)
            differs |= {part for part in want if not same(want[part], got[part])}
            rounded |= {part for part in want
                        if not same(want[part], got[part], exact=True)}
    return sorted(differs), sorted(rounded - differs)
# --8<-- [end:same]


def catches(want, got, always):
    """The exceptions as compared: on a case's own inputs, their types and messages;
    on a variant, whether the original's type would catch the fix's (compiled, an
    error inside may come wrapped as a TorchRuntimeError, which is a RuntimeError:
    an except RuntimeError catches both, an except IndexError does not)."""
    mine, theirs = want["raised"], got["raised"]
    want["raised"] = mine and (mine[:2] if always else mine[0])
    got["raised"] = theirs and (theirs[:2] if always else (
        mine[0] if mine and mine[0] in theirs[2] else theirs[0]))


def variants(make):
    """The same probes for every case: its first inputs with each float tensor made to
    need a gradient (and, in computes_the_same, written into after the call), not
    contiguous (transposed; a vector, every other element of a longer one), with a NaN
    that is not first, with a huge value, zeros of both signs, made integer (int64 and
    int32), bool, half, bfloat16 and complex; and each vector empty, 0-d (float and
    int32), of one element, 2-D and 2-D transposed."""
    def changed(change):
        def made():
            return tuple(change(a.detach()) if torch.is_tensor(a)
                         and a.is_floating_point() else a for a in make())
        return made

    def put(index, value):
        def change(a):
            a = a.contiguous().clone()
            if a.numel() > index:
                a.view(-1)[index] = value(a.dtype)
            return a
        return change

    def transpose(a):
        return torch.stack([a, a], -1)[..., 0] if a.dim() == 1 else (
            a.mT.contiguous().mT)

    def vector(change):  # a change of a vector's shape; other tensors kept
        return changed(lambda a: change(a) if a.dim() == 1 and len(a) else a)

    if not any(torch.is_tensor(a) and a.is_floating_point() for a in make()):
        return {}
    return {"grad": changed(lambda a: a.clone().requires_grad_()),
            "transposed": changed(transpose),
            "nan": changed(put(1, lambda dtype: float("nan"))),
            "huge": changed(put(0, lambda dtype: torch.finfo(dtype).max * 0.9)),
            "integer": changed(lambda a: (a * 4).round().long()),
            "bool": changed(lambda a: a > 0),
            "half": changed(lambda a: a.half()),
            "bfloat16": changed(lambda a: a.bfloat16()),
            "int32": changed(lambda a: (a * 4).round().int()),
            "complex": changed(lambda a: a.to(torch.complex64)),
            "signed zeros": changed(lambda a: torch.zeros_like(a).copysign(
                (torch.arange(a.numel(), device=a.device) % 2 - 0.5).view(a.shape))),
            "empty": vector(lambda a: a[:0]),
            "0-d": vector(lambda a: a[0].clone()),
            "0-d int32": vector(lambda a: (a[0] * 4).round().int()),
            "one": vector(lambda a: a[:1].clone()),
            "2-D": vector(lambda a: torch.stack([a, -a * 2])),
            "2-D transposed": vector(lambda a: torch.stack([a, -a * 2]).t())}


class State:
    """Module-level state a case changes: put back before each run, read after."""

    def __init__(self, reset=lambda: None, read=lambda: None):
        self.reset, self.read = reset, read


def x3():
    return (torch.randn(3, device=device),)


def grad3():
    return (torch.randn(3, device=device, requires_grad=True),)


def scaled(factor, base=x3):  # the same inputs, times factor: other branches
    return lambda: tuple(a * factor for a in base())


def zeros3():
    return (torch.zeros(3, device=device),)


def with_nan():
    return (torch.tensor([1.0, float("nan"), 3.0], device=device),)


def with_inf():
    return (torch.tensor([1.0, float("inf"), 3.0], device=device),)


def a_view():  # three elements of a storage of ten
    return (torch.randn(10, device=device)[:3],)


def transposed():  # strides (1, 3): not contiguous
    return (torch.randn(3, 3, device=device).t(),)


def doubles():
    return (torch.randn(3, device=device, dtype=torch.float64),)


BRANCHES = (x3, scaled(-1), scaled(100), zeros3)
# Two 0-d tensors promote: a 0-d int32 x times a 0-d int64 count is int64.
NARROW_0D = ("A 0-d x of an integer dtype narrower than int64 (int32, int16, int8, "
             "uint8) gives an int64 result, where the Python int kept x's dtype.")
cases = {}
KINDS = ("rewrite", "move_out", "config", "where_or_cond", "custom_op", "none_needed")


def add(name, what, broken, fix, fixed, kind, settings=None, around=None,
        inputs=x3, probes=(), changes=None, state=None):
    """A case: what it does, the function that breaks, the fix (in words and as a
    function), the kind of fix, the config the fix sets, around: the code that calls
    the compiled fix (where work moved out of it), the inputs of its first call,
    more inputs the fix is proven on, and what the fix changes, if it must."""
    assert kind in KINDS and name not in cases, name
    cases[name] = {"what": what, "broken": broken, "fix": fix, "fixed": fixed,
                   "kind": kind, "settings": settings or {}, "around": around,
                   "inputs": inputs, "probes": (inputs, *probes),
                   "changes": changes, "state": state or State()}


def has(*names):  # the config settings this release knows, of those named
    return {name: value for name, value in names if hasattr(config, name)}


# --8<-- [start:cases]
# Data-dependent control flow: Python needs a bool now, the tensor holds it later.
def if_on_tensor(x):
    if x.sum() > 0:
        return x * 2
    return x - 1


def if_on_tensor_fixed(x):
    # Both branches become subgraphs; the choice is made inside the graph. cond keeps
    # its operands for the backward: a copy, so that a caller's later in-place write
    # into x does not make that backward raise (neither branch keeps x).
    return torch.cond(x.sum() > 0, lambda t: t * 2, lambda t: t - 1, (x.clone(),))


add("if_on_tensor", "if on a tensor's value", if_on_tensor, "torch.cond",
    if_on_tensor_fixed, "where_or_cond", probes=BRANCHES)
# --8<-- [end:cases]


def while_on_tensor(x):
    while x.abs().max() > 1:
        x = x / 2
    return x


def while_on_tensor_fixed(x):
    # The number of halvings, as a tensor: max = mantissa * 2**exponent, mantissa in
    # [0.5, 1), so the loop halves exponent times, once less where the max is a power
    # of 2, none where it is at most 1 or NaN (exponent 0); frexp in float64, which
    # holds integers exactly. ldexp makes 2**-halvings, where 2.0**halvings overflows
    # float32 past 2**127 (and ldexp(x, ...) gives x no gradient on torch 2.13). One
    # scaling rounds once, where the loop rounds at each halving: results that become
    # subnormal may differ in their last bits. An integer x becomes the default
    # float dtype, as x / 2 makes it, and its max is counted as rounded to it there
    # (2**24 + 1 in float32 is 2**24).
    dtype = x.dtype if x.is_floating_point() else torch.get_default_dtype()
    mantissa, exponent = torch.frexp(x.abs().max().to(dtype).double())
    halvings = (exponent - (mantissa == 0.5).int()).clamp(min=0)
    return x * torch.ldexp(torch.ones((), dtype=dtype, device=x.device), -halvings)


def near_powers():  # a max just above 2**20, where a float32 log2 rounds to 20
    return (torch.tensor([2.0**20 + 0.125, 1.0, -3.0], device=device),)


def small_integers():  # none above 1: the original returns x, int64
    return (torch.tensor([1, 0, -1], device=device),)


def integers():  # halved: float32, as x / 2 makes them
    return (torch.tensor([4, 1], device=device),)


def big_integers():  # 2**24 + 1: float32 rounds it to 2**24, a power of 2
    return (torch.tensor([2**24 + 1, 3], device=device),)


def powers():  # a max of exactly 2**20
    return (torch.tensor([2.0**20, 1.0, -3.0], device=device),)


def subnormals():  # 5 * 2**-149 halved three times: rounded thrice, or once
    return (torch.tensor([5.0, 5 * 2.0**-149, 1.0], device=device),)


add("while_on_tensor", "while on a tensor's value", while_on_tensor,
    "compute the loop count as a tensor (torch.frexp), scale once (torch.ldexp)",
    while_on_tensor_fixed, "rewrite",
    probes=(*BRANCHES, with_nan, near_powers, powers, small_integers, integers,
            big_integers, subnormals),
    changes="The result is a new tensor, where the original returned x itself (an "
            "integer x unconverted) when no value was above 1; a result that becomes "
            "subnormal is rounded once, where the loop rounded at each halving, so its "
            "last bits may differ (5 * 2**-149 halved three times: 2**-149, not 0).")


def raise_on_tensor(x):
    if (x > 100).any():
        raise ValueError("too large")
    return x + 1


def plus_one(x):
    return x + 1


def check_first(fn, x):  # the check, in Python, before the compiled call
    if (x > 100).any():
        raise ValueError("too large")
    return fn(x)


add("raise_on_tensor", "raise if a tensor's value is bad", raise_on_tensor,
    "check before the call (torch._assert_async raises RuntimeError instead)",
    plus_one, "move_out", around=check_first, probes=(scaled(1000),))


def mask_check(x):  # as Hugging Face models check an attention mask
    mask = x > 0
    if (mask == 0).all():
        raise ValueError("the attention mask masks everything")
    return x * mask


def mask_check_first(fn, x):
    if ((x > 0) == 0).all():
        raise ValueError("the attention mask masks everything")
    return fn(x)


add("mask_check", "raise if a mask is all zeros, (mask == 0).all()", mask_check,
    "check before the call", lambda x: x * (x > 0), "move_out",
    around=mask_check_first, probes=(zeros3,))


def clamp_if(x):
    if (x > 1).any():
        x = x.clamp(max=1)
    return x * 2


def clamp_where(x):
    # Not clamp always (the hint): clamp(max=1) passes no gradient at exactly 1 on
    # torch 2.15, so a clamp nothing needed would change the gradient. clamp keeps its
    # input for the backward: a copy, so x * 2 alone keeps nothing, as in the original.
    return torch.where((x > 1).any(), x.clone().clamp(max=1), x) * 2


def at_one():  # a value exactly 1, none above: its gradient too
    return (torch.tensor([1.0, 0.5], device=device, requires_grad=True),)


def over_one():  # one value above 1: the branch runs
    return (torch.tensor([0.5, 2.0, -3.0], device=device),)


add("clamp_if", "if any value is too large, clamp", clamp_if,
    "torch.where on (x > 1).any() (branchless)", clamp_where, "where_or_cond",
    inputs=over_one, probes=(*BRANCHES, at_one),
    changes="Where the original clamped, a caller's in-place write into x before the "
            "backward makes that backward raise (clamp kept x); the fix clamps a copy, "
            "and its backward runs.")


def nan_if(x):
    if torch.isnan(x).any():
        x = torch.nan_to_num(x)
    return x + 1


def nan_always(x):
    # nan_to_num also replaces infinities: only where a NaN is, as the branch did. It
    # keeps its input for the backward: a copy, so x + 1 alone keeps nothing.
    return torch.where(torch.isnan(x).any(), torch.nan_to_num(x.clone()), x) + 1


add("nan_to_num_if", "if any value is NaN, torch.nan_to_num", nan_if,
    "torch.where on isnan(x).any() (branchless)", nan_always, "where_or_cond",
    inputs=with_nan, probes=(x3, with_inf),
    changes="Where the original replaced a NaN, a caller's in-place write into x "
            "before the backward makes that backward raise (nan_to_num kept x); the "
            "fix works on a copy, and its backward runs.")


def bool_of_tensor(x):
    return x * 2 if bool(x.any()) else x


def bool_of_tensor_fixed(x):
    # any() of a uint8 x is uint8, which where() refuses as a condition when compiled.
    return torch.where(x.any().bool(), x * 2, x)


def bytes_3():  # a uint8 x, as image data and older masks are
    return (torch.tensor([1, 0, 3], device=device, dtype=torch.uint8),)


def all_false():
    return (torch.zeros(3, device=device, dtype=torch.bool),)


add("bool_of_tensor", "bool(tensor)", bool_of_tensor, "torch.where",
    bool_of_tensor_fixed, "where_or_cond", probes=(*BRANCHES, all_false, bytes_3),
    changes="The result is a new tensor, where the original returned x itself (a bool "
            "x stayed bool) when x was all zeros.")


def where_by_mask_sum(x):
    if (x > 0).sum() > 1:
        return x.relu()
    return x


def where_by_mask_sum_fixed(x):
    return torch.where((x > 0).sum() > 1, x.relu(), x)


add("if_on_count", "if on a count of elements", where_by_mask_sum, "torch.where",
    where_by_mask_sum_fixed, "where_or_cond", probes=BRANCHES,
    changes="The result is a new tensor (contiguous where x is not dense), where the "
            "original returned x itself when at most one value was positive, else "
            "x.relu() in x's layout (a bool x raises, where the original returned it).")

# Tensor values as Python numbers.
CAPTURE = {"capture_scalar_outputs": True}
SHAPES = {"capture_dynamic_output_shape_ops": True}


def item(x):
    return x / x.abs().max().item()


def item_fixed(x):
    # Stays a tensor; detached, as .item() is: no gradient through the max.
    return x / x.abs().max().detach()


add("item", "Tensor.item() as a divisor", item, "keep it a tensor, detached",
    item_fixed, "rewrite", probes=(grad3,))


def item_captured(x):
    return x * x.mean().item()


add("item_captured", "Tensor.item() as a scale", item_captured,
    "capture_scalar_outputs=True", item_captured, "config", CAPTURE,
    changes="On torch 2.15, where x is an integer or bool tensor, mean() raises "
            "NotImplementedError in both, but compiled as a TorchRuntimeError.")


def float_of_tensor(x):
    return x * float(x.mean())


add("float_of_tensor", "float(tensor)", float_of_tensor,
    "capture_scalar_outputs=True", float_of_tensor, "config", CAPTURE,
    changes="Where x needs a gradient, the original warns as it makes it a number; "
            "compiled, nothing warns. On torch 2.15, where x is an integer or bool "
            "tensor, mean() raises NotImplementedError in both, but compiled as a "
            "TorchRuntimeError.")


def int_index(x):
    return x[int(x.argmax())]


def int_index_fixed(x):
    return x.index_select(0, x.argmax().view(1))[0]  # the index stays a tensor


add("int_index", "int(tensor) as an index", int_index, "index with the tensor",
    int_index_fixed, "rewrite",
    changes="The result is a copy, where x[i] was a view: writing into it wrote "
            "into x. Where x is empty (on torch 2.11 also 0-d), both raise, the "
            "original an IndexError, compiled a TorchRuntimeError.")


def size_from_value(x):
    return x.new_zeros(int(x.abs().sum().ceil()) + 1)


def size_first(fn, x):  # the size, a Python int, computed before the call
    return fn(x, int(x.abs().sum().ceil()) + 1)


add("size_from_value", "a new tensor's size from a value, int(x.sum())",
    size_from_value, "compute the size before the call, pass it in",
    lambda x, n: x.new_zeros(n), "move_out", around=size_first)


def tolist(x):
    return torch.tensor([v * 2 for v in x.tolist()])


def tolist_fixed(x):
    if x.dim() == 0:  # a shape, known when compiling: tolist() gave one number
        raise TypeError(f"'{type(x.tolist()).__name__}' object is not iterable")
    return x * 2


add("tolist", "Tensor.tolist() in a comprehension", tolist, "a tensor op",
    tolist_fixed, "rewrite", probes=(grad3,),
    changes="For a 1-D x only: the result keeps x's gradient, device and dtype, where "
            "torch.tensor() of the list made a new CPU tensor without one (float32, or "
            "int64 for ints, but float32 for no values). For a 2-D x the original "
            "repeats each row (a list times 2) and the fix doubles the values.")


def max_of_tolist(x):
    return x * max(x.tolist())


def max_of_tolist_fixed(x):
    # Shapes, known when compiling: raise as max() of no values, of one number, and
    # x times a list (what max() of rows returns) raise.
    if x.dim() and not len(x):
        raise ValueError("max() iterable argument is empty")
    if x.dim() == 0:
        raise TypeError(f"'{type(x.tolist()).__name__}' object is not iterable")
    if x.dim() > 1:
        raise TypeError("only integer tensors of a single element can be converted "
                        "to an index")
    values = x.detach()
    if len(values) == 1:  # max() of one value compares nothing: it is that value, a
        return x * values[0].clone()  # copy, as a number is: x's later writes miss it
    if values.is_complex():
        raise TypeError("'>' not supported between instances of 'complex' and "
                        "'complex'")
    if not values.is_floating_point():  # integers and bools: no NaN
        return x * values.max()
    # max() keeps a NaN only where it comes first (a NaN compares false), and the first
    # of equal values (-0.0 before 0.0): argmax takes the first too.
    first = values[0]
    rest = values.masked_fill(values.isnan(), -torch.inf)
    largest = rest.index_select(0, rest.argmax().view(1))[0]
    return x * torch.where(first.isnan(), first, largest)


def zeros_first_negative():  # the largest is a zero of both signs: -0.0 comes first
    return (torch.tensor([-0.0, 0.0, -1.0], device=device),)


add("max_of_tolist", "max() of Tensor.tolist()", max_of_tolist,
    "Tensor.max(), detached as a Python number is, NaNs skipped as max() skips them",
    max_of_tolist_fixed, "rewrite", probes=(grad3, with_nan, zeros_first_negative))


def sorted_by_tensor(x):
    rows = sorted([x, x * 2, -x], key=lambda t: t.sum().item())
    return rows[0]


def sorted_by_tensor_fixed(x):
    if x.is_complex():  # sorted() compares the keys: complex numbers have no order
        raise TypeError("'<' not supported between instances of 'complex' and "
                        "'complex'")
    rows = [x, x * 2, -x]
    first = torch.stack([t.sum() for t in rows]).argmin()
    # Picked elementwise, so the result keeps x's layout, as each row has it.
    return torch.where(first == 0, rows[0], torch.where(first == 1, rows[1], rows[2]))


add("sorted_by_tensor", "sorted() keyed on tensor values", sorted_by_tensor,
    "stack and argmin", sorted_by_tensor_fixed, "rewrite", probes=BRANCHES[:2],
    changes="The result is a new tensor, where the original returned x itself when x "
            "came first.")


# Shapes that depend on values.
def nonzero(x):
    return x.nonzero()


add("nonzero", "Tensor.nonzero()", nonzero, "capture_dynamic_output_shape_ops=True",
    nonzero, "config", SHAPES)


def boolean_mask(x):
    return x[x > 0]


add("boolean_mask", "x[x > 0]", boolean_mask, "capture_dynamic_output_shape_ops=True",
    boolean_mask, "config", SHAPES)


def boolean_mask_sum(x):
    return x[x > 0].sum()


def boolean_mask_sum_fixed(x):
    return torch.where(x > 0, x, 0).sum()  # same sum, fixed shape


add("boolean_mask_sum", "x[x > 0].sum()", boolean_mask_sum, "torch.where, same sum",
    boolean_mask_sum_fixed, "where_or_cond", probes=BRANCHES[1:])


def unique(x):
    return torch.unique(x.round())


add("unique", "torch.unique", unique, "capture_dynamic_output_shape_ops=True",
    unique, "config", SHAPES)


def len_of_nonzero(x):
    return x * len(x.nonzero())


add("len_of_nonzero", "len(x.nonzero())", len_of_nonzero,
    "count with (x != 0).sum()", lambda x: x * (x != 0).sum(), "rewrite",
    probes=(zeros3,), changes=NARROW_0D)


# Copies, user classes.
def deepcopy_list(x):
    pair = copy.deepcopy([x, x + 1])
    return pair[0] + pair[1]


def deepcopy_list_fixed(x):
    pair = [t.detach().clone() for t in [x, x + 1]]  # as deepcopy: no gradient to x
    return pair[0] + pair[1]


add("deepcopy_list", "copy.deepcopy of tensors", deepcopy_list,
    "Tensor.detach().clone()", deepcopy_list_fixed, "rewrite", probes=(grad3,),
    changes="Where x needs a gradient, the original raises (deepcopy copies only "
            "leaves) and the fix returns a result without one.")
layer = torch.nn.Linear(3, 3).to(device)


def deepcopy_module(x):
    return copy.deepcopy(layer)(x)


def layer_itself(x):
    return layer(x)


add("deepcopy_module", "copy.deepcopy of a module", deepcopy_module,
    "call the module itself: the copy had its weights", layer_itself, "rewrite",
    changes="Gradients reach the module's own parameters, not a copy's that the "
            "original threw away.")


def copy_module(x):
    return copy.copy(layer)(x)


add("copy_module", "copy.copy of a module", copy_module,
    "call the module itself: a shallow copy shares its parameters", layer_itself,
    "rewrite")


@dataclasses.dataclass
class Settings:
    factor: float = 2.0


def dataclass_inside(x):
    return x * Settings().factor


SETTINGS = Settings()


add("dataclass_inside", "a dataclass made in forward", dataclass_inside,
    "make it once, outside", lambda x: x * SETTINGS.factor, "move_out")
Pair = collections.namedtuple("Pair", "first second")


def namedtuple_inside(x):
    pair = Pair(x, x + 1)
    return pair.first * pair.second


add("namedtuple_inside", "a namedtuple made in forward", namedtuple_inside,
    "none needed", namedtuple_inside, "none_needed")


class Config:
    def __init__(self):
        self.values = {"scale": 2.0}

    def __getattr__(self, name):  # config.scale reads self.values["scale"]
        return self.values[name]


options = Config()


def getattr_hook(x):
    return x * options.scale


add("getattr_hook", "a class with __getattr__", getattr_hook,
    "read the value directly", lambda x: x * options.values["scale"], "rewrite")


def class_inside(x):
    class Out:
        pass
    out = Out()
    out.y = x + 1
    return out.y


class Out:
    pass


def class_inside_fixed(x):
    out = Out()  # the class defined once, at module level
    out.y = x + 1
    return out.y


add("class_inside", "a class defined inside", class_inside,
    "define it at module level", class_inside_fixed, "move_out")


def object_output(x):
    return [x + 1, object()]


def object_after(fn, x):  # the object made outside the compiled call
    return [*fn(x), object()]


add("object_output", "an object() among the outputs", object_output,
    "return tensors; add the object outside", lambda x: [x + 1], "move_out",
    around=object_after)


# Context managers.
class Timer:
    def __enter__(self):
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.seconds = time.perf_counter() - self.start


def timer_context(x):
    with Timer():
        return x + 1


def timed_outside(fn, x):
    with Timer():
        return fn(x)


add("timer_context", "a timing context manager in forward", timer_context,
    "enter it around the call", plus_one, "move_out", around=timed_outside)


@contextlib.contextmanager
def section(name):
    yield name


def contextlib_context(x):
    with section("forward"):
        return x + 1


add("contextlib_context", "a @contextlib.contextmanager", contextlib_context,
    "none needed", contextlib_context, "none_needed")


def no_grad_inside(x):
    with torch.no_grad():
        y = x * 2
    return y + x


add("no_grad_inside", "with torch.no_grad() inside", no_grad_inside, "none needed",
    no_grad_inside, "none_needed", inputs=grad3)


def autocast_inside(x):
    with torch.autocast(device, dtype=torch.bfloat16):
        return x[:, None] @ x[None, :]


add("autocast_inside", "with torch.autocast inside", autocast_inside, "none needed",
    autocast_inside, "none_needed",
    changes="On torch 2.11, compiled: where the matmul raises inside the block (a "
            "bool x), autocast stays on after the call; where x is 0-d, x[:, None] "
            "raises IndexError, compiled a TorchRuntimeError.")


# torch.autograd.Function.
class Double(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.factor = 2  # a Python value on ctx
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.factor


def autograd_function(x):
    return Double.apply(x)


add("autograd_function", "an autograd.Function with a ctx attribute",
    autograd_function, "none needed", autograd_function, "none_needed", inputs=grad3)


class ScaleBySum(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.scale = x.sum().item()  # a Python float
        return x * ctx.scale

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.scale


class ScaleBySumTensor(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        scale = x.sum()  # kept a tensor
        ctx.save_for_backward(scale)
        return x * scale

    @staticmethod
    def backward(ctx, grad):
        (scale,) = ctx.saved_tensors
        return grad * scale


add("autograd_function_item", "Tensor.item() in an autograd.Function's forward",
    lambda x: ScaleBySum.apply(x), "keep it a tensor, ctx.save_for_backward",
    lambda x: ScaleBySumTensor.apply(x), "rewrite", inputs=grad3, changes=NARROW_0D)


class Once(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 3

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad):
        return grad * 3


add("once_differentiable", "an autograd.Function with once_differentiable",
    lambda x: Once.apply(x), "none needed", lambda x: Once.apply(x), "none_needed",
    inputs=grad3)


# Exceptions.
def try_except(x):
    try:
        return x + {}["missing"]
    except KeyError:
        return x + 1


add("try_except", "try/except KeyError", try_except, "none needed", try_except,
    "none_needed")


def stop_iteration(x):
    return x + next(iter([]), 1)


add("stop_iteration", "next() on an exhausted iterator", stop_iteration,
    "none needed", stop_iteration, "none_needed")


# hasattr, getattr, isinstance.
def hasattr_tensor(x):
    return x * 2 if hasattr(x, "names") else x


add("hasattr_tensor", "hasattr on a tensor", hasattr_tensor, "none needed",
    hasattr_tensor, "none_needed")


def isinstance_parameter(x):
    return x * 2 if isinstance(x, torch.nn.Parameter) else x + 1


add("isinstance_parameter", "isinstance(x, nn.Parameter)", isinstance_parameter,
    "none needed", isinstance_parameter, "none_needed")


# inspect and typing.
def signature_inside(x):
    return x + len(inspect.signature(plus_one).parameters)


ARITY = len(inspect.signature(plus_one).parameters)


add("inspect_signature", "inspect.signature", signature_inside,
    "compute it once, outside", lambda x: x + ARITY, "move_out")


def type_hints(x: torch.Tensor) -> torch.Tensor:
    return x + len(typing.get_type_hints(type_hints))


HINTS = len(typing.get_type_hints(type_hints))


add("type_hints", "typing.get_type_hints", type_hints, "compute it once, outside",
    lambda x: x + HINTS, "move_out")


# functools and itertools.
@functools.lru_cache
def table_size(n):
    return n * 2


def lru_cache(x):
    return x * table_size(3)


add("lru_cache", "a functools.lru_cache function", lru_cache, "none needed",
    lru_cache, "none_needed")


class Blend(torch.nn.Module):
    def mix(self, x, weight):
        return x * weight

    def forward(self, x):
        return functools.partial(self.mix, weight=0.5)(x)


blend = Blend()


add("partial_method", "functools.partial of a method", lambda x: blend(x),
    "none needed", lambda x: blend(x), "none_needed")


def itertools_product(x):
    return sum(x * a * b for a, b in itertools.product([1, 2], [3, 4]))


add("itertools_product", "itertools.product", itertools_product, "none needed",
    itertools_product, "none_needed")


def defaultdict_inside(x):
    groups = collections.defaultdict(list)
    groups["a"].append(x)
    return groups["a"][0] + 1


add("defaultdict", "collections.defaultdict", defaultdict_inside, "none needed",
    defaultdict_inside, "none_needed")


def set_of_tensors(x):
    return x + len({x, x + 1})


add("set_of_tensors", "a set of tensors", set_of_tensors, "none needed",
    set_of_tensors, "none_needed")


def filter_builtin(x):
    return sum(filter(lambda t: t is not None, [x, None, x]))


add("filter_builtin", "filter() over tensors", filter_builtin, "none needed",
    filter_builtin, "none_needed")


# Printing, logging, warnings, text.
REORDER = {"reorderable_logging_functions": {print}}


def print_text(x):
    print("step")
    return x + 1


add("print_text", "print('...')", print_text,
    "reorderable_logging_functions={print}: printed after the graph", print_text,
    "config", REORDER)


def print_tensor(x):
    print(x)
    return x + 1


add("print_tensor", "print(tensor)", print_tensor,
    "reorderable_logging_functions={print} (a tensor changed later prints changed)",
    print_tensor, "config", REORDER)


def print_then_mutate(x):
    y = x + 1
    print(y)
    y.mul_(2)
    return y


add("print_then_mutate", "print(tensor), then the tensor changed in place",
    print_then_mutate, "reorderable_logging_functions={print}", print_then_mutate,
    "config", REORDER,
    changes="The print runs after the graph, so it shows the tensor as the graph "
            "left it, doubled (the config's own caveat).")


def logger_info(x):
    log.info("shape %s", tuple(x.shape))
    return x + 1


def log_first(fn, x):
    log.info("shape %s", tuple(x.shape))
    return fn(x)


IGNORE = has(("ignore_logging_functions", {log.info}),
             ("ignore_logger_methods", {log.info}))
add("logger_info", "logging.Logger.info", logger_info,
    "ignore_logging_functions={log.info}" if IGNORE else "log before the call",
    logger_info if IGNORE else plus_one, "config" if IGNORE else "move_out",
    dict(list(IGNORE.items())[:1]), around=None if IGNORE else log_first,
    changes="The line is not logged: the config skips the call." if IGNORE else None)


def logger_outside(x):
    log.info("shape %s", tuple(x.shape))
    return x + 1


add("logger_outside", "logging.Logger.info, kept", logger_outside,
    "log before the call", plus_one, "move_out", around=log_first)


def warn(x):
    warnings.warn("check the input", stacklevel=1)
    return x + 1


def warn_first(fn, x):
    warnings.warn("check the input", stacklevel=1)
    return fn(x)


add("warnings_warn", "warnings.warn", warn, "warn before the call", plus_one,
    "move_out", around=warn_first)


def str_of_tensor(x):
    text = str(x)  # noqa: F841 (built for a message, never used here)
    return x + 1


add("str_of_tensor", "str(tensor)", str_of_tensor, "format outside", plus_one,
    "move_out")


def repr_of_tensor(x):
    text = repr(x)  # noqa: F841
    return x + 1


add("repr_of_tensor", "repr(tensor)", repr_of_tensor, "format outside", plus_one,
    "move_out")


def fstring_of_tensor(x):
    text = f"value {x}"  # noqa: F841
    return x + 1


add("fstring_of_tensor", "an f-string of a tensor", fstring_of_tensor,
    "format outside", plus_one, "move_out")


def percent_of_tensor(x):
    text = "value %s" % x  # noqa: F841, UP031
    return x + 1


add("percent_of_tensor", "'%s' % tensor", percent_of_tensor, "format outside",
    plus_one, "move_out")


def forward_hook(module, args):
    print("forward")


hooked = torch.nn.Linear(3, 3).to(device)
hooked.register_forward_pre_hook(forward_hook)


def forward_hook_prints(x):
    return hooked(x)


def hook_outside(fn, x):  # the hook's print, in the caller
    print("forward")
    return fn(x)


add("forward_hook_print", "a forward hook that prints", forward_hook_prints,
    "print in the caller; call the layer without its hook", lambda x: torch.nn.
    functional.linear(x, hooked.weight, hooked.bias), "move_out", around=hook_outside)
add("forward_hook_print_reordered", "a forward hook that prints, print reordered",
    forward_hook_prints, "reorderable_logging_functions={print}", forward_hook_prints,
    "config", REORDER,
    changes="The hook's print does not run at all: nothing is printed.")


# Builtins, the standard library, C extensions.
def time_time(x):
    started = time.time()  # noqa: F841 (a timer left in a forward)
    return x + 1


def time_around(fn, x):
    started = time.time()  # noqa: F841
    return fn(x)


add("time_time", "time.time()", time_time, "time around the call", plus_one,
    "move_out", around=time_around)


now = datetime.datetime.now  # (torch 2.11 crashes on datetime.datetime.now() inside)


def datetime_now(x):
    stamp = now()  # noqa: F841
    return x + 1


add("datetime_now", "datetime.datetime.now()", datetime_now, "call it outside",
    plus_one, "move_out")


def crc32(x):
    return x + zlib.crc32(b"weights") % 7


CRC = zlib.crc32(b"weights") % 7  # of a constant: computed once, outside


add("zlib_crc32", "a C extension of a constant (zlib.crc32)", crc32,
    "compute it once, outside", lambda x: x + CRC, "move_out")


def checksum(x):  # a C extension reading the tensor's bytes
    return x + zlib.crc32(x.detach().cpu().numpy().tobytes()) % 7


@torch.library.custom_op("atlas::checksum", mutates_args=())
def checksum_op(x: torch.Tensor) -> torch.Tensor:
    crc = zlib.crc32(x.detach().cpu().numpy().tobytes()) % 7
    return torch.tensor(crc, device=x.device)


@checksum_op.register_fake
def _(x):
    return x.new_empty((), dtype=torch.int64)


add("c_extension", "a C extension of a tensor's bytes (zlib.crc32)", checksum,
    "wrap it in a torch.library.custom_op", lambda x: x + checksum_op(x),
    "custom_op", changes=NARROW_0D)


def md5(x):
    return x + int(hashlib.md5(b"weights").hexdigest(), 16) % 7


MD5 = int(hashlib.md5(b"weights").hexdigest(), 16) % 7


add("hashlib_md5", "hashlib.md5", md5, "compute it once, outside",
    lambda x: x + MD5, "move_out")


def pickle_dumps(x):
    return x + len(pickle.dumps({"lr": 0.1})) % 5


PICKLED = len(pickle.dumps({"lr": 0.1})) % 5


add("pickle_dumps", "pickle.dumps", pickle_dumps, "compute it once, outside",
    lambda x: x + PICKLED, "move_out")


def getpid(x):
    return x + os.getpid() % 2


def pid_first(fn, x):  # read at every call: right after a fork too
    return fn(x, os.getpid() % 2)


add("os_getpid", "os.getpid()", getpid, "read it at the call, pass it in",
    lambda x, pid: x + pid, "move_out", around=pid_first)


def collect_garbage(x):
    gc.collect()
    return x + 1


def collect_first(fn, x):
    gc.collect()
    return fn(x)


add("gc_collect", "gc.collect()", collect_garbage, "collect before the call",
    plus_one, "move_out", around=collect_first)


def rng_state(x):
    state = torch.get_rng_state()  # noqa: F841 (saved for a replay)
    return x + 1


def state_first(fn, x):
    state = torch.get_rng_state()  # noqa: F841
    return fn(x)


add("get_rng_state", "torch.get_rng_state()", rng_state, "save it before the call",
    plus_one, "move_out", around=state_first)


def device_count(x):
    return x + torch.cuda.device_count()


def count_first(fn, x):
    return fn(x, torch.cuda.device_count())


add("cuda_device_count", "torch.cuda.device_count()", device_count,
    "read it before the call, pass it in", lambda x, n: x + n, "move_out",
    around=count_first)
lock = threading.Lock()


def lock_inside(x):
    with lock:
        return x + 1


def locked_call(fn, x):
    with lock:
        return fn(x)


add("lock_context", "with threading.Lock()", lock_inside,
    "take the lock around the call", plus_one, "move_out", around=locked_call)


def retain_grad(x):
    y = x * 2
    y.retain_grad()
    return y


def retain_after(fn, x):
    y = fn(x)
    y.retain_grad()
    return y


add("retain_grad", "Tensor.retain_grad() inside", retain_grad,
    "call it on the output, after the call", lambda x: x * 2, "move_out",
    around=retain_after,
    inputs=grad3)


def data_assign(x):
    y = x.clone()
    y.data = torch.zeros_like(x)
    return y


def data_after(fn, x):  # the hint: the .data swap, out of the compiled code
    y = fn(x)
    y.data = torch.zeros_like(x)
    return y


add("data_assign", "y.data = ... (swapping a tensor's data)", data_assign,
    "swap .data after the call (the hint)", lambda x: x.clone(), "move_out",
    around=data_after, probes=(grad3,))


def recursion_limit(x):
    return x + sys.getrecursionlimit() % 3


add("sys_call", "sys.getrecursionlimit()", recursion_limit, "none needed",
    recursion_limit, "none_needed")


def distributed_rank(x):
    dist = torch.distributed
    rank = dist.get_rank() if dist.is_available() and dist.is_initialized() else 0
    return x + rank


add("distributed_rank", "torch.distributed.is_initialized() and get_rank()",
    distributed_rank, "none needed", distributed_rank, "none_needed")


def open_file(x):
    with open(os.devnull) as f:
        f.read()
    return x + 1


add("open_file", "open() a file", open_file, "read outside", plus_one, "move_out")


def eval_string(x):
    return eval("x + 1")


add("eval_string", "eval()", eval_string, "write the expression", plus_one,
    "rewrite")


def globals_store(x):
    globals()["last_shape"] = tuple(x.shape)
    return x + 1


def globals_store_fixed(x):
    global last_shape
    last_shape = tuple(x.shape)  # a plain global store: Dynamo replays it
    return x + 1


def _forget_shape():
    globals()["last_shape"] = None


add("globals_store", "globals()[name] = ...", globals_store, "a global statement",
    globals_store_fixed, "rewrite",
    state=State(_forget_shape, lambda: globals().get("last_shape")))


def hash_tensor(x):
    return x + hash(x) % 2


def hash_first(fn, x):
    # hash(x) % 2, computed outside: id(x) inside would guard on the tensor's
    # identity and recompile for every new tensor.
    return fn(x, hash(x) % 2)


add("hash_tensor", "hash(tensor)", hash_tensor, "hash outside, pass it in",
    lambda x, h: x + h, "move_out", around=hash_first)


def data_ptr(x):
    return x + x.data_ptr() % 2


def pointer_first(fn, x):
    return fn(x, x.data_ptr() % 2)


add("data_ptr", "Tensor.data_ptr()", data_ptr, "read it outside, pass it in",
    lambda x, p: x + p, "move_out", around=pointer_first)


def locals_call(x):
    return x + len(locals())


add("locals_call", "locals()", locals_call, "name the variables", plus_one,
    "rewrite")


def string_io(x):
    buf = io.StringIO()
    buf.write("step")
    return x + 1


add("string_io", "io.StringIO", string_io, "write outside", plus_one, "move_out")


def torch_save(x):
    torch.save(x, io.BytesIO())
    return x + 1


add("torch_save", "torch.save inside", torch_save, "save outside", plus_one,
    "move_out")


# Randomness and global state.
def random_random(x):
    return x * random.random()


def random_first(fn, x):  # the same draw from the same stream, made outside
    return fn(x, random.random())


def times(x, value):
    return x * value


add("random_random", "random.random()", random_random, "draw it outside, pass it in",
    times, "move_out", around=random_first)


def numpy_random(x):
    return x * np.random.rand()


def numpy_first(fn, x):
    return fn(x, np.random.rand())


add("numpy_random", "np.random.rand()", numpy_random, "draw it outside, pass it in",
    times, "move_out", around=numpy_first)
noise = torch.Generator(device=device)


def generator_draw(x):
    return x + torch.rand(3, generator=noise, device=device)


def generator_first(fn, x):
    return fn(x, torch.rand(3, generator=noise, device=device))


add("torch_generator", "torch.rand(generator=g)", generator_draw,
    "draw it outside, pass it in", lambda x, r: x + r, "move_out",
    around=generator_first, state=State(lambda: noise.manual_seed(0)))


def manual_seed(x):
    torch.manual_seed(0)
    return x + torch.rand(3, device=x.device)


def seed_first(fn, x):
    torch.manual_seed(0)
    return fn(x)


add("manual_seed", "torch.manual_seed inside", manual_seed, "seed before the call",
    lambda x: x + torch.rand(3, device=x.device), "move_out", around=seed_first,
    changes="Where x does not broadcast with the three random numbers, both raise, "
            "but compiled before drawing them: the generator has not moved.")


def set_threads(x):
    torch.set_num_threads(torch.get_num_threads())
    return x + 1


def threads_first(fn, x):
    torch.set_num_threads(torch.get_num_threads())
    return fn(x)


add("set_num_threads", "torch.set_num_threads inside", set_threads,
    "set it before the call", plus_one, "move_out", around=threads_first)


# NumPy.
def numpy_interp(x):
    y = np.interp(x.cpu().numpy(), [0.0, 1.0], [0.0, 10.0])
    return torch.from_numpy(y).to(x.device)


def numpy_interp_fixed(x):
    if x.dim() == 0:  # a shape, known when compiling: np.interp returned a scalar
        raise TypeError("expected np.ndarray (got numpy.float64)")
    if x.dtype == torch.bfloat16:  # a dtype, known too: NumPy has no bfloat16
        raise TypeError("Got unsupported ScalarType BFloat16")
    if x.is_complex():  # np.interp takes real values only
        raise TypeError("Cannot cast array data from dtype('complex64') to "
                        "dtype('float64') according to the rule 'safe'")
    # + 0.0 turns -0.0 into 0.0, as np.interp's 0.0 + slope * x does; contiguous, as
    # np.interp's result is.
    return (x.double().clamp(0, 1) * 10 + 0.0).contiguous()


def signed_zeros():  # -0.0 and a subnormal: bit for bit
    return (torch.tensor([-0.0, 0.0, 1e-40, -1e-40], device=device),)


add("numpy_interp", "a NumPy function torch._numpy lacks", numpy_interp,
    "the same in torch ops, in float64 as np.interp",
    numpy_interp_fixed, "rewrite", probes=(grad3, signed_zeros),
    changes="Where x needs a gradient, the original raises (numpy() refuses one) and "
            "the fix computes it.")


def numpy_tobytes(x):
    return x + len(x.cpu().numpy().tobytes())


def bytes_of_values(x):
    if x.dtype == torch.bfloat16:  # known when compiling: NumPy has no bfloat16
        raise TypeError("Got unsupported ScalarType BFloat16")
    return x + x.numel() * x.element_size()


add("numpy_tobytes", "ndarray.tobytes()", numpy_tobytes,
    "numel() * element_size() (the bytes of the values)",
    bytes_of_values, "rewrite", probes=(grad3,),
    changes="Where x needs a gradient, the original raises (numpy() refuses one) and "
            "the fix computes it.")


def untyped_storage(x):
    return x + x.untyped_storage().nbytes()


def storage_first(fn, x):  # the storage's bytes: a view's storage is larger
    return fn(x, x.untyped_storage().nbytes())


add("untyped_storage", "Tensor.untyped_storage()", untyped_storage,
    "read it outside, pass it in", lambda x, n: x + n, "move_out",
    around=storage_first, probes=(a_view,))


# Skipped on purpose.
@torch.compiler.disable
def disabled_double(x):
    return x * 2


def calls_disabled(x):
    return disabled_double(x) + 1


def enabled_double(x):  # the same function, without the decorator
    return x * 2


add("compiler_disable", "a torch.compiler.disable'd call", calls_disabled,
    "remove torch.compiler.disable (the hint)", lambda x: enabled_double(x) + 1,
    "rewrite", probes=(grad3,))


def explicit_break(x):
    torch._dynamo.graph_break()
    return x + 1


add("explicit_graph_break", "torch._dynamo.graph_break()", explicit_break,
    "remove it", plus_one, "rewrite")


# Autograd inside the compiled function.
TRACE_AUTOGRAD = has(("trace_autograd_ops", True))


def backward_inside(x):
    loss = (x * 2).sum()
    loss.backward()
    return x.grad


def backward_after(fn, x):
    fn(x).backward()
    return x.grad


# Not trace_autograd_ops=True: with it, a compiled backward() from an x that is not a
# leaf (a layer's output) reaches no leaf, and which x compiled first decides later
# calls. Compiling the loss and calling backward() outside computes what eager does.
add("backward_inside", "loss.backward() inside", backward_inside,
    "compile the loss, backward outside", lambda x: (x * 2).sum(), "move_out",
    around=backward_after, inputs=grad3)


def autograd_grad(x):
    loss = (x * 2).sum()
    return torch.autograd.grad(loss, x)[0]


add("autograd_grad", "torch.autograd.grad inside", autograd_grad,
    "trace_autograd_ops=True", autograd_grad, "config", TRACE_AUTOGRAD, inputs=grad3)


def requires_grad_inside(x):
    y = x.detach().requires_grad_()
    return y * 2


def leaf_first(fn, x):
    return fn(x.detach().requires_grad_())


def double(x):
    return x * 2


add("requires_grad_inside", "Tensor.requires_grad_() inside", requires_grad_inside,
    "make the leaf before the call", double, "move_out", around=leaf_first,
    inputs=grad3)


def parameter_inside(x):
    p = torch.nn.Parameter(x.detach())
    return p * 2


def parameter_first(fn, x):
    return fn(torch.nn.Parameter(x.detach()))


add("parameter_inside", "nn.Parameter() made inside", parameter_inside,
    "make it before the call, pass it in", double, "move_out",
    around=parameter_first, inputs=grad3)
backward_hooked = torch.nn.Linear(3, 3).to(device)
seen = []
backward_hooked.register_full_backward_hook(
    lambda module, grad_in, grad_out: seen.append(grad_out[0].detach().clone()))


def module_backward_hook(x):
    return backward_hooked(x)


add("module_backward_hook", "a module's full backward hook", module_backward_hook,
    "compiled_autograd=True (the message's hint)", module_backward_hook, "config",
    {"compiled_autograd": True}, inputs=grad3,
    state=State(seen.clear, lambda: list(seen)))
counter = {"calls": 0}


def mutate_global(x):
    counter["calls"] += 1  # a side effect Dynamo replays after the graph
    return x + counter["calls"]


add("mutate_global", "mutating a global dict", mutate_global,
    "none for the break; but the int is guarded: each new value recompiles",
    mutate_global, "none_needed",
    state=State(lambda: counter.update(calls=0), lambda: counter["calls"]))


class Counting(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return x + 1


counting = Counting()


def mutate_module_attribute(x):
    return counting(x)


add("mutate_module_attribute", "self.calls += 1 in forward", mutate_module_attribute,
    "none for the break; but the int is guarded: each new value recompiles",
    mutate_module_attribute, "none_needed",
    state=State(lambda: setattr(counting, "calls", 0), lambda: counting.calls))


# Tensors Dynamo cannot wrap.
def resize_inside(x):
    y = x.clone()
    y.resize_(6)
    return y


def resized(x):  # x's first 6 values, then zeros: 6 elements whatever x's shape
    return torch.cat([x.reshape(-1), x.new_zeros(6)])[:6]


add("resize_inside", "Tensor.resize_()", resize_inside, "torch.cat a new tensor",
    resized, "rewrite", probes=(grad3,),
    changes="resize_ keeps x's values in memory order and leaves the new elements as "
            "the memory held them (zeros or not, by chance), and raises where x needs "
            "a gradient; the fix takes x's values in index order (the same for a "
            "contiguous x), writes 0s and computes the gradient.")


def apply_inside(x):
    # apply_ calls Python once per element, so it exists for CPU tensors only.
    return x.to("cpu", copy=True).apply_(lambda v: v * 2).to(x.device)


add("apply_inside", "Tensor.apply_(python function)", apply_inside,
    "a vectorised op, in x's dtype", lambda x: (x * 2).to(x.dtype), "rewrite",
    probes=(grad3,),
    changes="Where x needs a gradient, the original raises (apply_ refuses one) and "
            "the fix computes it; for an integer x whose doubled values overflow its "
            "dtype, apply_ raises and the fix wraps around.")


def to_sparse(x):
    return x.to_sparse() * 2


def sparse_after(fn, x):
    return fn(x).to_sparse()


add("to_sparse", "a sparse tensor", to_sparse, "stay dense inside, convert after",
    double, "move_out", around=sparse_after)


def generator_outside(x):
    return x + next(numbers)


def next_first(fn, x):
    return fn(x, next(numbers))


def _count():
    while True:
        yield 1


numbers = _count()


add("generator_outside", "next() on a generator made outside", generator_outside,
    "pass the value in", lambda x, n: x + n, "move_out", around=next_first)


# Modules and tensors Dynamo does not trace.
rnn = torch.nn.LSTM(3, 3).to(device)


def lstm(x):
    return rnn(x.view(1, 1, 3))[0]


add("lstm", "an nn.LSTM (also RNN, GRU)", lstm,
    "allow_rnn=True (the registry's hint for RNN, GRU and LSTM)", lstm, "config",
    has(("allow_rnn", True)))
scripted = torch.jit.script(layer)


def jit_scripted(x):
    return scripted(x)


add("jit_script", "a torch.jit.script module", jit_scripted,
    "call the Python module it was scripted from", layer_itself, "rewrite")


def resize_as(x):
    out = x.new_empty(0)
    out.resize_as_(x)
    return out.copy_(x) * 2


add("resize_as", "Tensor.resize_as_() on a buffer", resize_as,
    "torch.empty(x.shape): a new contiguous tensor of that size, as resize_as_ makes",
    lambda x: torch.empty(x.shape, dtype=x.dtype, device=x.device).copy_(x) * 2,
    "rewrite", probes=(transposed,))
shared = torch.zeros(3, device=device)


def share_memory(x):
    shared.share_memory_()  # for worker processes: a one-time set-up
    return x + shared


def share_first(fn, x):  # the fix: shared once, before the first compiled call
    if not shared.is_shared():
        shared.share_memory_()
    return fn(x)


add("share_memory", "Tensor.share_memory_() in forward", share_memory,
    "share it once, before the call", lambda x: x + shared, "move_out",
    around=share_first)


def nested(x):
    return torch.nested.nested_tensor([x, x[:2]]).to_padded_tensor(0.0)


def padded(x):  # what to_padded_tensor returns: each row padded with 0 to the longest
    if x.dim() == 0:  # shapes, known when compiling: x[:2] and nested_tensor raise
        raise IndexError("slice() cannot be applied to a 0-dim tensor.")
    if x.numel() == 0:
        raise RuntimeError("to_padded_tensor: at least one constituent tensor should "
                           "have non-zero numel")
    x = x.detach()  # nested_tensor copies its rows without their gradient
    pad = len(x) - len(x[:2])  # x[:2] has fewer rows only where x has more than 2
    rows = torch.nn.functional.pad(x[:2], (0, 0) * (x.dim() - 1) + (0, pad))
    # Contiguous, as to_padded_tensor's result is: stack keeps a channels_last layout.
    return torch.stack([x, rows]).contiguous()


def images_channels_last():  # an image batch laid out channels-last
    images = torch.randn(2, 3, 4, 4, device=device)
    return (images.to(memory_format=torch.channels_last),)


add("nested_tensor", "torch.nested.nested_tensor (strided layout)", nested,
    "pad the rows and stack them", padded, "rewrite",
    probes=(grad3, images_channels_last),
    changes="The original warns that nested tensors are a prototype; the fix makes "
            "none, and does not.")


def one_hot(labels):
    return torch.nn.functional.one_hot(labels)  # classes: labels.max() + 1


def classes_first(fn, labels):  # the count, computed before the call
    # No labels: -1, one_hot's own "infer" value, so it raises as the original does.
    return fn(labels, int(labels.max()) + 1 if labels.numel() else -1)


def labels3():
    return (torch.tensor([0, 2, 1], device=device),)


add("one_hot", "F.one_hot without num_classes", one_hot,
    "pass num_classes (here computed before the call)",
    lambda labels, n: torch.nn.functional.one_hot(labels, n), "move_out",
    around=classes_first, inputs=labels3,
    probes=(lambda: (torch.tensor([0, 1, 1], device=device),),
            lambda: (torch.tensor([], dtype=torch.long, device=device),)))


def leaf_inside(x):
    weight = torch.ones(3, device=x.device, requires_grad=True)
    return x * weight


def weight_first(fn, x):
    return fn(x, torch.ones(3, device=x.device, requires_grad=True))


add("tensor_requires_grad", "torch.ones(..., requires_grad=True) inside", leaf_inside,
    "make it before the call, pass it in", lambda x, w: x * w, "move_out",
    around=weight_first)
frozen_layer = torch.nn.Linear(3, 3).to(device)


def freeze_inside(x):
    frozen_layer.weight.requires_grad = False
    return frozen_layer(x)


def freeze_first(fn, x):
    frozen_layer.weight.requires_grad = False
    return fn(x)


add("requires_grad_attr", "weight.requires_grad = False in forward", freeze_inside,
    "freeze before the call", lambda x: frozen_layer(x), "move_out",
    around=freeze_first,
    state=State(lambda: frozen_layer.weight.requires_grad_(True),
                lambda: frozen_layer.weight.requires_grad))


def is_inference(x):
    if x.is_inference():
        x = x.clone()  # an inference tensor cannot be saved for backward
    return x * 2


def clone_first(fn, x):
    return fn(x.clone() if x.is_inference() else x)


def inference3():
    with torch.inference_mode():
        return (torch.randn(3, device=device),)


add("is_inference", "Tensor.is_inference()", is_inference, "check before the call",
    double, "move_out", around=clone_first, probes=(inference3,))


def inference_mode_enabled(x):
    return x if torch.is_inference_mode_enabled() else x * 2


def mode_first(fn, x):
    return fn(x, torch.is_inference_mode_enabled())


add("inference_mode_enabled", "torch.is_inference_mode_enabled()",
    inference_mode_enabled, "read it before the call, pass it in",
    lambda x, inference: x if inference else x * 2, "move_out", around=mode_first)


def uniform_from(x):
    init = {"from": -1.0, "to": 1.0}  # keyword names from a config
    return x + torch.empty_like(x).uniform_(**init)


add("uniform_from", "Tensor.uniform_(from=...)", uniform_from,
    "pass the bounds by position", lambda x: x + torch.empty_like(x).uniform_(-1, 1),
    "rewrite")


def random_ints(x):
    return x + torch.empty_like(x).random_(10)


add("random_", "Tensor.random_()", random_ints,
    "torch.randint_like (the hint: the out-of-place op; x's layout, the same draws)",
    lambda x: x + torch.randint_like(x, 10), "rewrite", probes=(transposed,))
draws = torch.Generator(device=device)


def generator_state(x):
    return x * len(draws.get_state())


STATE_SIZE = len(draws.get_state())


add("generator_method", "torch.Generator.get_state()", generator_state,
    "read it once, outside", lambda x: x * STATE_SIZE, "move_out")


def generator_inside(x):
    local = torch.Generator(device=x.device)
    local.manual_seed(0)
    return x + torch.rand(3, generator=local, device=x.device)


def generator_made_first(fn, x):
    local = torch.Generator(device=x.device)
    local.manual_seed(0)
    return fn(x, torch.rand(3, generator=local, device=x.device))


add("generator_inside", "a torch.Generator made in forward", generator_inside,
    "make it before the call (the registry's hint), draw there, pass it in",
    lambda x, noise: x + noise, "move_out", around=generator_made_first)


# Hooks, autograd.Function, checkpoint.
HANDLE = None


def hook_handle_global(x):
    global HANDLE
    y = x * 2
    HANDLE = y.register_hook(lambda grad: grad * 2)
    return y * 3


def hook_without_handle(x):
    y = x * 2
    y.register_hook(lambda grad: grad * 2)  # goes with y
    return y * 3


def _forget_handle():
    global HANDLE
    HANDLE = None


add("hook_handle_global", "a tensor hook's handle kept in a global",
    hook_handle_global, "keep no handle: a hook on an intermediate goes with it",
    hook_without_handle, "rewrite", inputs=grad3,
    changes="No handle is kept, so the hook cannot be removed before the backward "
            "runs it. On torch 2.11, compiled, a hook on a tensor that needs no "
            "gradient raises nothing, where register_hook raises a RuntimeError.",
    state=State(_forget_handle, lambda: HANDLE is not None))
hooked_layer = torch.nn.Linear(3, 3).to(device)


def doubled_output(module, args, output):
    return output * 2


def hook_inside(x):
    handle = hooked_layer.register_forward_hook(doubled_output)
    out = hooked_layer(x)
    handle.remove()
    return out


def hooked_around(fn, x):
    handle = hooked_layer.register_forward_hook(doubled_output)
    try:
        return fn(x)
    finally:
        handle.remove()


add("module_hook_inside", "a forward hook registered and removed in forward",
    hook_inside, "register it around the call", lambda x: hooked_layer(x), "move_out",
    around=hooked_around)


class DoubleInPlace(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.mark_dirty(x)
        return x.mul_(2)

    @staticmethod
    def backward(ctx, grad):
        return grad * 2


def mark_dirty(x):
    return DoubleInPlace.apply(x.clone())


def double_keeping_dtype(x):
    if x.dtype == torch.bool:  # mul_ keeps x's dtype, and 2 is no bool
        raise RuntimeError("result type Long can't be cast to the desired output "
                           "type Bool")
    return Double.apply(x)


add("mark_dirty", "autograd.Function with ctx.mark_dirty (in place)", mark_dirty,
    "an out-of-place Function (Double above)", double_keeping_dtype, "rewrite",
    inputs=grad3)
checkpointed = []


def checkpoint_side_effect(x):
    def block(t):
        checkpointed.append(1)  # a side effect in the checkpointed function
        return torch.sin(t) * 2
    return torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False)


def checkpoint_pure(x):
    checkpointed.append(1)  # outside: once a call
    return torch.utils.checkpoint.checkpoint(lambda t: torch.sin(t) * 2, x,
                                             use_reentrant=False)


add("checkpoint_side_effect", "a side effect inside torch.utils.checkpoint",
    checkpoint_side_effect, "move the side effect out of the checkpointed function",
    checkpoint_pure, "rewrite", inputs=grad3,
    changes="With a backward, eager checkpointing runs the side effect again; the "
            "fix runs it once a call.",
    state=State(checkpointed.clear, lambda: len(checkpointed)))


def check_message(x):
    torch._check(x.shape[0] == 3, lambda: f"bad shape {x.shape}")
    return x * 2


def check_message_first(fn, x):  # the check, with its message, before the call
    torch._check(x.shape[0] == 3, lambda: f"bad shape {x.shape}")
    return fn(x)


def four_rows():
    return (torch.randn(4, device=device),)


add("torch_check_message", "torch._check with a message naming a tensor",
    check_message, "check before the call, its message and all (the hint's message "
    "naming no value changes the exception compiled: below)", double, "move_out",
    around=check_message_first, probes=(four_rows,))


# User classes, sets, sorting, context managers (more).
class AttrDict(dict):  # attribute access to a dict's keys, a common pattern
    __getattr__ = dict.__getitem__


attrs = AttrDict(scale=2.0)


def dict_getattr(x):
    return x * attrs.scale


class AttrDictFixed(dict):
    def __getattr__(self, name):  # a function: Dynamo traces it
        return self[name]


attrs_fixed = AttrDictFixed(scale=2.0)


add("dict_getattr", "class AttrDict(dict): __getattr__ = dict.__getitem__",
    dict_getattr, "define __getattr__ as a function (the hint)",
    lambda x: x * attrs_fixed.scale, "rewrite")


class Options(typing.TypedDict, total=False):
    scale: float


def typed_dict(x):
    return x * Options(scale=2.0)["scale"]


add("typed_dict", "a TypedDict with optional keys", typed_dict,
    "a plain dict: a TypedDict is one at run time",
    lambda x: x * {"scale": 2.0}["scale"], "rewrite")


@typing.runtime_checkable
class Scalable(typing.Protocol):
    def scaled(self, factor): ...


def isinstance_protocol(x):
    if isinstance(x, Scalable):
        return x.scaled(2)
    return x * 2


def isinstance_protocol_fixed(x):
    if not torch.is_tensor(x) and isinstance(x, Scalable):  # tensors first
        return x.scaled(2)
    return x * 2


add("isinstance_protocol", "isinstance(tensor, a runtime_checkable Protocol)",
    isinstance_protocol, "test for a tensor first", isinstance_protocol_fixed,
    "rewrite")


class Plain:
    pass


class Tagged:
    tag = 2


def class_assign(x):
    marker = Plain()
    marker.__class__ = Tagged
    return x * marker.tag


add("class_assign", "obj.__class__ = Other", class_assign, "make an Other",
    lambda x: x * Tagged().tag, "rewrite")
decayed = torch.nn.Linear(3, 3).to(device)
skip_weights = {decayed.weight}  # a set of tensors


def set_of_parameters(x):
    return x * 2 if decayed.weight in skip_weights else x


skip_by_tensor = {decayed.weight: True}  # the hint: a dict keyed by the tensors


def dict_of_parameters(x):
    return x * 2 if decayed.weight in skip_by_tensor else x


def weight_replaced():  # a new Parameter in its place: in neither any more
    decayed.weight = torch.nn.Parameter(decayed.weight.detach().clone())
    return x3()


add("set_of_parameters", "a global set of parameters", set_of_parameters,
    "a dict keyed by the tensors (the hint)", dict_of_parameters, "rewrite",
    probes=(weight_replaced,))


def sorted_values(x):
    return sorted([x.sum(), x.max(), x.min()])


def sorted_values_fixed(x):
    values = torch.stack([x.sum(), x.max(), x.min()]).sort().values
    return [v.clone() for v in values.unbind()]  # not views: each takes writes


def infinities():  # a sum of inf and -inf: NaN
    return (torch.tensor([float("inf"), float("-inf"), 1.0], device=device),)


add("sorted_tensors", "sorted() of 0-d tensors", sorted_values,
    "torch.sort on them stacked", sorted_values_fixed, "rewrite",
    probes=(grad3, with_nan, infinities),
    changes="torch.sort puts a NaN last; sorted() leaves it where comparisons that "
            "are all False put it. For a bool x, or an integer x narrower than int64, "
            "stacking makes the three int64, where max and min kept x's dtype.")
sink = io.StringIO()


def redirect_inside(x):
    with contextlib.redirect_stdout(sink):
        return x * 2


def redirected_around(fn, x):
    with contextlib.redirect_stdout(sink):
        return fn(x)


add("redirect_stdout", "with contextlib.redirect_stdout(...) inside",
    redirect_inside, "enter it around the call", double, "move_out",
    around=redirected_around)



# Buffers, storage, bytes.
def out_empty(x):
    out = torch.empty(0, device=x.device)  # out= resizes it
    torch.mul(x, 2, out=out)
    return out


def out_sized(x):
    # out= at the result's shape and layout (out= resizes to x's strides), in out's
    # dtype, the default one.
    out = torch.empty_like(x, dtype=torch.get_default_dtype())
    torch.mul(x, 2, out=out)
    return out


add("out_resized", "out= a tensor of another shape (resized)", out_empty,
    "make out= as x is laid out, in out='s dtype (torch.empty_like)", out_sized,
    "rewrite",
    probes=(doubles, grad3),
    changes="Where x needs a gradient, out= raises in both, but compiled as a "
            "TorchRuntimeError (a RuntimeError with another message).")


def out_transposed(x):
    out = torch.empty(3, 3, device=x.device).t()
    torch.mul(x.expand(3, 3), 2, out=out)
    return out


def out_copied(x):
    out = torch.empty(3, 3, device=x.device).t()
    if x.is_complex():  # out= refuses to drop the imaginary part; copy_ would not
        raise RuntimeError("result type ComplexFloat can't be cast to the desired "
                           "output type Float")
    return out.copy_(x.expand(3, 3) * 2)  # the same values, in the same buffer


add("out_non_contiguous", "out= a non-contiguous tensor", out_transposed,
    "compute, then copy_ into it", out_copied, "rewrite", probes=(doubles, grad3),
    changes="Where x needs a gradient, the original raises (out= has no autograd) "
            "and the fix computes it.")


def alias_check(x, y):
    return x * 2 if x.data_ptr() == y.data_ptr() else x + y


def alias_first(fn, x, y):
    return fn(x, y, x.data_ptr() == y.data_ptr())


def x_and_view():
    x = torch.randn(3, device=device)
    return x, x.view(3)


def x_and_other():
    return torch.randn(3, device=device), torch.randn(3, device=device)


add("data_ptr_compare", "x.data_ptr() == y.data_ptr() (an aliasing check)",
    alias_check, "compare before the call, pass the answer in",
    lambda x, y, aliased: x * 2 if aliased else x + y, "move_out",
    around=alias_first, inputs=x_and_view, probes=(x_and_other,))
keys_seen = set()


def bytes_key(x):
    keys_seen.add(bytes(x.to(torch.uint8)))  # a cache key from the values
    return x * 2


def key_first(fn, x):
    keys_seen.add(bytes(x.to(torch.uint8)))
    return fn(x)


add("bytes_of_tensor", "bytes(tensor) as a cache key", bytes_key,
    "make the key before the call", double, "move_out", around=key_first,
    state=State(keys_seen.clear, lambda: sorted(k.hex() for k in keys_seen)))


def first_message(messages):
    """The break's message as printed, without where it happened (paths, line numbers,
    addresses) and without the traceback that follows it."""
    if not messages:
        return ""
    lines = messages[0].splitlines()
    start = next(i for i, line in enumerate(lines)
                 if line.startswith("Graph Break Reason"))
    kept = []
    for line in lines[start:]:
        if line.startswith(("Stack variable source", "User code traceback")):
            break
        if line.strip():
            kept.append(line.rstrip())
    text = "\n".join(kept).replace("Graph Break Reason: ", "", 1)
    text = re.sub(r"0x[0-9a-fA-F]+", "0x…", text)
    # A path, not a link's: its last part ("break_atlas.py", "_compile").
    path = r"(?<![:/\w.<>-])[\w.<>~-]*(?:/[\w.+<>-]+)+"
    text = re.sub(path, lambda m: m.group(0).rsplit("/", 1)[-1], text)
    text = re.sub(r"(\.py)(\", line |:| line )\d+", r"\1\2<n>", text)
    return re.sub(r"\bline \d+\b", "line <n>", text)


SKIPPED = "Failed to handle graph break gracefully"  # a frame left uncompiled
torch.manual_seed(0)
atlas = {}
quiet_output = contextlib.redirect_stdout(io.StringIO())  # what the cases print
# The log's own handler would also print every message (to stderr): kept here instead.
quiet_log = contextlib.redirect_stderr(io.StringIO())
with quiet_output, quiet_log, warnings.catch_warnings():
    warnings.simplefilter("ignore")
    for name, c in cases.items():
        try:
            before, crashed = graph_breaks(c["broken"], c["inputs"](), {}), None
        except Exception as error:  # Dynamo itself failed: a bug to report
            before, crashed = [], type(error).__name__
        message = first_message(before)
        found = re.search(r"/gb/gb(\d{4})\.html", message)
        after = graph_breaks(c["fixed"], c["inputs"](), c["settings"], c["around"])
        differs, rounded = computes_the_same(c["broken"], c["fixed"], c["settings"],
                                             c["around"], c["probes"], c["state"])
        gb = f"GB{found.group(1)}" if found else None
        atlas[name] = {"what": c["what"], "id": gb, "message": message,
                       "before": len(before),
                       "skipped": any(SKIPPED in m for m in before),
                       "crashed": crashed,
                       "fix": c["fix"], "fix_kind": c["kind"], "after": len(after),
                       "same": not differs, "differs": differs, "rounding": rounded,
                       "changes": c["changes"], "probes": len(c["probes"])}

# --8<-- [start:table]
width = max(len(name) for name in atlas)
print(f"{'case':<{width}} {'breaks':>6} {'fixed':>5} {'same':>4}  id      what breaks")
for name, entry in atlas.items():
    # The break's type: the first line that is not a preamble.
    lines = [line for line in entry["message"].splitlines()
             if not line.startswith(("Encountered graph break", SKIPPED))]
    gist = lines[0] if lines else "(no break)"
    same_text = "yes" if entry["same"] else "no"
    print(f"{name:<{width}} {entry['before']:>6} {entry['after']:>5} {same_text:>4}  "
          f"{entry['id'] or '-':<7} {gist[:60]}")
# --8<-- [end:table]
results["atlas"] = atlas
results["cases"] = len(atlas)
results["breaking"] = sum(entry["before"] > 0 for entry in atlas.values())
results["fixed"] = sum(entry["before"] > 0 and entry["after"] == 0
                       for entry in atlas.values())
results["ids"] = sorted({entry["id"] for entry in atlas.values() if entry["id"]})
results["same"] = sum(entry["same"] for entry in atlas.values())
results["changed"] = sorted(name for name, entry in atlas.items() if entry["changes"])
results["skipped"] = sorted(name for name, entry in atlas.items() if entry["skipped"])
kinds = {}
for entry in atlas.values():
    if entry["before"]:
        kinds[entry["fix_kind"]] = kinds.get(entry["fix_kind"], 0) + 1
results["fix_kinds"] = kinds

# With fullgraph=True Dynamo captures .item() and data-dependent shapes as if
# capture_scalar_outputs and capture_dynamic_output_shape_ops were on; a branch on a
# value still cannot compile.
fullgraph = {}
for name in ("item", "nonzero", "if_on_tensor"):
    torch._dynamo.reset()
    try:
        torch.compile(cases[name]["broken"], backend="eager", fullgraph=True)(*x3())
        outcome_name = "compiled"
    except Exception as error:  # what fullgraph=True raises at the first break
        outcome_name = type(error).__name__
    fullgraph[name] = outcome_name
results["fullgraph"] = fullgraph

# torch._check's own hint, a message that names no value, compiled: a size seen once,
# then a new one (made a symbol by automatic dynamic shapes) that fails the check.
# Run eagerly, the check raises RuntimeError.


def check_constant_message(x):
    torch._check(x.shape[0] == 3, lambda: "x must have 3 rows")
    return x * 2


torch._dynamo.reset()
hinted = torch.compile(check_constant_message, backend="eager")
hinted(*x3())
try:
    hinted(*four_rows())
    hint_raised = None
except Exception as error:  # the type the caller would catch
    hint_raised = type(error).__name__
results["check_hint_raises"] = hint_raised

# The probe, tried on fixes an earlier version of this atlas shipped and a hostile
# read found changing the program: each must be caught (a part that differs).


@torch.library.custom_op("atlas::double", mutates_args=())
def double_op(x: torch.Tensor) -> torch.Tensor:  # no autograd formula registered
    return x * 2


@double_op.register_fake
def _(x):
    return torch.empty_like(x)


def log2_halvings(x):  # ceil(log2(max)) in float32: one short just above 2**20
    halvings = torch.ceil(torch.log2(x.abs().max())).clamp(min=0).nan_to_num(0)
    return x / 2**halvings


def power_halvings(x):  # 2.0**halvings: float32, inf past 128 halvings
    mantissa, exponent = torch.frexp(x.abs().max())
    halvings = (exponent - (mantissa == 0.5).int()).clamp(min=0)
    return x / 2.0**halvings


def float_halvings(x):  # frexp of x's own max: floats only
    mantissa, exponent = torch.frexp(x.abs().max())
    halvings = (exponent - (mantissa == 0.5).int()).clamp(min=0)
    return x * torch.ldexp(x.new_ones(()), -halvings)


def float_max(x):  # masked_fill of -inf: floats only
    values = x.detach()
    first, rest = values[0], values.masked_fill(values.isnan(), -torch.inf).max()
    return x * torch.where(first.isnan(), first, rest)


def row_sums(x):  # rows.sum(1): a vector's rows only
    rows = torch.stack([x, x * 2, -x])
    return rows.index_select(0, rows.sum(1).argmin().view(1))[0]


def padded_by_two(x):  # len(x) - 2: negative for one row
    x = x.detach()
    rows = torch.nn.functional.pad(x[:2], (0, 0) * (x.dim() - 1) + (0, len(x) - 2))
    return torch.stack([x, rows])


def out_shaped(x):  # contiguous, where out= takes x's layout
    out = torch.empty(x.shape, device=x.device)
    torch.mul(x, 2, out=out)
    return out


def any_rank_max(x):  # raises only for no values: computes for 0-d and 2-D x
    if x.numel() == 0:
        raise ValueError("max() iterable argument is empty")
    return x * x.detach().max()


def padded_any(x):  # pads and stacks even no values, where nested_tensor raises
    x = x.detach()
    pad = len(x) - len(x[:2])
    rows = torch.nn.functional.pad(x[:2], (0, 0) * (x.dim() - 1) + (0, pad))
    return torch.stack([x, rows])


def nested_padded(x):  # the rows padded and stacked, keeping their gradient
    return torch.stack([x, torch.nn.functional.pad(x[:2], (0, 1))])


def exact_max_halvings(x):  # frexp of the integer max before x / 2 rounds it
    mantissa, exponent = torch.frexp(x.abs().max().double())
    halvings = (exponent - (mantissa == 0.5).int()).clamp(min=0)
    dtype = x.dtype if x.is_floating_point() else torch.get_default_dtype()
    return x * torch.ldexp(torch.ones((), dtype=dtype, device=x.device), -halvings)


def max_not_first(x):  # Tensor.max() of equal values: not the first one's sign
    if x.dim() != 1 or len(x) < 2 or x.is_complex() or not x.is_floating_point():
        return max_of_tolist_fixed(x)
    values = x.detach()
    first, rest = values[0], values.masked_fill(values.isnan(), -torch.inf).max()
    return x * torch.where(first.isnan(), first, rest)


earlier_fixes = {
    "item": lambda x: x / x.abs().max(),
    "max_of_tolist": lambda x: x * x.max(),
    "while_on_tensor": log2_halvings,
    "nested_tensor": nested_padded,
    "random_": lambda x: x + torch.randint(0, 10, x.shape, device=x.device,
                                           dtype=x.dtype),
    "torch_check_message": check_constant_message,
    "set_of_parameters": lambda x: x * 2 if "weight" in {"weight"} else x,
    "compiler_disable": lambda x: double_op(x) + 1,
    "data_assign": torch.zeros_like,
    # A later hostile read: each needs a probe added since (a NaN not first, a huge
    # value, a transposed input, another starting seed).
    "max_of_tolist: NaN": lambda x: x * x.max().detach(),
    "while_on_tensor: overflow": power_halvings,
    "resize_as: empty_like": lambda x: torch.empty_like(x).copy_(x) * 2,
    "manual_seed: never seeded": lambda x: x + torch.rand(3, device=x.device),
    # A third hostile read: each caught by a variant added since (an integer, one
    # element, a 2-D or a transposed 2-D input).
    "while_on_tensor: floats only": float_halvings,
    "max_of_tolist: floats only": float_max,
    "sorted_by_tensor: rows.sum(1)": row_sums,
    "nested_tensor: len(x) - 2": padded_by_two,
    "out_resized: torch.empty(x.shape)": out_shaped,
    # A fourth: each caught now that an input the original refuses is compared (it
    # must raise in both), as are writes into the outputs.
    "max_of_tolist: any rank": any_rank_max,
    "nested_tensor: no values": padded_any,
    "mark_dirty: a bool": lambda x: Double.apply(x),
    "sorted_tensors: views": lambda x: list(
        torch.stack([x.sum(), x.max(), x.min()]).sort().values.unbind()),
    # A fifth: each caught by a probe added since (a write into x after the call, a
    # max just above 2**24, zeros of both signs).
    "if_on_tensor: operands kept": lambda x: torch.cond(
        x.sum() > 0, lambda t: t * 2, lambda t: t - 1, (x,)),
    "while_on_tensor: exact integer max": exact_max_halvings,
    "max_of_tolist: Tensor.max()": max_not_first,
}
caught = {}
with quiet_output, quiet_log, warnings.catch_warnings():
    warnings.simplefilter("ignore")
    for name, earlier in earlier_fixes.items():
        c = cases[name.split(":")[0]]
        caught[name] = computes_the_same(c["broken"], earlier, {}, None, c["probes"],
                                         c["state"])[0]
results["caught"] = caught
results["earlier_fixes"] = len(caught)
results["earlier_caught"] = sum(bool(parts) for parts in caught.values())
