"""A graph-break atlas: the breaks users meet most, each caused, counted, and fixed.

    python snippets/graph_mode/break_atlas.py

Every case is a pair of small functions: one that breaks the graph, and its fix. Each
is compiled with the "eager" backend (Dynamo only, no Inductor, so it is quick) and
called once; the graph breaks are what TORCH_LOGS=graph_breaks prints, one message per
break. The first message of each case is kept as the release printed it, with paths,
addresses and line numbers taken out. Runs on CUDA when torch sees a GPU, else on
the CPU.
"""

import contextlib
import copy
import io
import logging
import os
import random
import re
import time
import warnings
import zlib

import numpy as np
import torch

device = "cuda" if torch.cuda.is_available() else "cpu"
results = {"device": device, "atlas_kind": "graph_break"}
log = logging.getLogger("atlas")


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


def graph_breaks(fn, args, config):
    """Compile fn with Dynamo only, call it once, return the break messages."""
    torch._dynamo.reset()  # forget what earlier cases compiled
    found = BreakLog()
    dynamo_log = logging.getLogger("torch._dynamo")  # graph_breaks logs under it
    torch._logging.set_logs(graph_breaks=True)  # the switch TORCH_LOGS uses
    dynamo_log.addHandler(found)
    try:
        with torch._dynamo.config.patch(**config):
            torch.compile(fn, backend="eager")(*args)
    finally:
        dynamo_log.removeHandler(found)
        torch._logging.set_logs()  # back to the defaults
    return found.messages
# --8<-- [end:count]


# --8<-- [start:cases]
# Data-dependent control flow: Python needs a bool now, the tensor holds it later.
def if_on_tensor(x):
    if x.sum() > 0:
        return x * 2
    return x - 1


def if_on_tensor_fixed(x):
    # Both branches become subgraphs; the choice is made inside the graph.
    return torch.cond(x.sum() > 0, lambda t: t * 2, lambda t: t - 1, (x,))
# --8<-- [end:cases]


def while_on_tensor(x):
    while x.abs().max() > 1:
        x = x / 2
    return x


def while_on_tensor_fixed(x):
    # The number of halvings, computed as a tensor: no Python loop on a value.
    halvings = torch.ceil(torch.log2(x.abs().max())).clamp(min=0)
    return x / 2**halvings


def raise_on_tensor(x):
    if (x > 100).any():
        raise ValueError("too large")
    return x + 1


def raise_on_tensor_fixed(x):
    torch._assert_async((x <= 100).all(), "too large")  # checked on the device
    return x + 1


def bool_of_tensor(x):
    return x * 2 if bool(x.any()) else x


def bool_of_tensor_fixed(x):
    return torch.where(x.any(), x * 2, x)


def where_by_mask_sum(x):
    if (x > 0).sum() > 1:
        return x.relu()
    return x


def where_by_mask_sum_fixed(x):
    return torch.where((x > 0).sum() > 1, x.relu(), x)


# Tensor values as Python numbers.
def item(x):
    return x / x.abs().max().item()


def item_fixed(x):
    return x / x.abs().max()  # stays a tensor


def item_captured(x):
    return x * x.mean().item()


def float_of_tensor(x):
    return x * float(x.mean())


def int_index(x):
    return x[int(x.argmax())]


def int_index_fixed(x):
    return x.index_select(0, x.argmax().view(1))[0]  # the index stays a tensor


def tolist(x):
    return torch.tensor([v * 2 for v in x.tolist()])


def tolist_fixed(x):
    return x * 2


def max_of_tolist(x):
    return x * max(x.tolist())


def max_of_tolist_fixed(x):
    return x * x.max()


def sorted_by_tensor(x):
    rows = sorted([x, x * 2, -x], key=lambda t: t.sum().item())
    return rows[0]


def sorted_by_tensor_fixed(x):
    rows = torch.stack([x, x * 2, -x])
    return rows.index_select(0, rows.sum(1).argmin().view(1))[0]


# Shapes that depend on values.
def nonzero(x):
    return x.nonzero()


def boolean_mask(x):
    return x[x > 0]


def boolean_mask_sum(x):
    return x[x > 0].sum()


def boolean_mask_sum_fixed(x):
    return torch.where(x > 0, x, 0).sum()  # same sum, fixed shape


def unique(x):
    return torch.unique(x.round())


def len_of_nonzero(x):
    return x * len(x.nonzero())


def len_of_nonzero_fixed(x):
    return x * (x != 0).sum()


# Copies.
def deepcopy_list(x):
    pair = copy.deepcopy([x, x + 1])
    return pair[0] + pair[1]


def deepcopy_list_fixed(x):
    pair = [t.clone() for t in [x, x + 1]]
    return pair[0] + pair[1]


layer = torch.nn.Linear(3, 3).to(device)
layer_copy = copy.deepcopy(layer)  # copied once, outside the compiled code


def deepcopy_module(x):
    return copy.deepcopy(layer)(x)


def deepcopy_module_fixed(x):
    return layer_copy(x)


# Printing, logging, warnings.
def print_text(x):
    print("step")
    return x + 1


def print_tensor(x):
    print(x)
    return x + 1


def logger_info(x):
    log.info("shape %s", tuple(x.shape))
    return x + 1


def warn(x):
    warnings.warn("check the input", stacklevel=1)
    return x + 1


def tensor_to_str(x):
    text = str(x)  # noqa: F841 (built for a message, never used here)
    return x + 1


def without_message(x):
    return x + 1


# Builtins and C extensions Dynamo does not trace.
def time_time(x):
    started = time.time()  # noqa: F841 (a timer left in a forward)
    return x + 1


def crc32(x):
    return x + zlib.crc32(b"weights") % 7


crc = zlib.crc32(b"weights") % 7  # computed once, outside


def crc32_fixed(x):
    return x + crc


def getpid(x):
    return x + os.getpid() % 2


pid = os.getpid() % 2


def getpid_fixed(x):
    return x + pid


def open_file(x):
    with open(os.devnull) as f:
        f.read()
    return x + 1


def eval_string(x):
    return eval("x + 1")


def eval_string_fixed(x):
    return x + 1


def globals_store(x):
    globals()["last_shape"] = tuple(x.shape)
    return x + 1


def globals_store_fixed(x):
    global last_shape
    last_shape = tuple(x.shape)  # a plain global store: Dynamo replays it
    return x + 1


def hash_tensor(x):
    return x + hash(x) % 2


def hash_tensor_fixed(x, h):
    # hash(x) % 2, computed outside: id(x) inside would guard on the tensor's
    # identity and recompile for every new tensor.
    return x + h


def locals_call(x):
    return x + len(locals())


def locals_call_fixed(x):
    return x + 1


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


def string_io(x):
    buf = io.StringIO()
    buf.write("step")
    return x + 1


def torch_save(x):
    torch.save(x, io.BytesIO())
    return x + 1


# Randomness and global state.
def random_random(x):
    return x * random.random()


def random_random_fixed(x):
    return x * torch.rand(())  # torch's generator: traced


def numpy_random(x):
    return x * np.random.rand()


def numpy_random_fixed(x):
    return x * torch.rand((), device=x.device)


def manual_seed(x):
    torch.manual_seed(0)
    return x + torch.rand(3, device=x.device)


def manual_seed_fixed(x):
    return x + torch.rand(3, device=x.device)  # seeded before the call


def set_threads(x):
    torch.set_num_threads(torch.get_num_threads())
    return x + 1


# NumPy.
def numpy_interp(x):
    y = np.interp(x.cpu().numpy(), [0.0, 1.0], [0.0, 10.0])
    return torch.from_numpy(y).to(x.device)


def numpy_interp_fixed(x):
    return x.clamp(0, 1) * 10  # np.interp on [0, 1] -> [0, 10], in torch ops


def numpy_tobytes(x):
    return x + len(x.cpu().numpy().tobytes())


def numpy_tobytes_fixed(x):
    return x + x.numel() * x.element_size()


def untyped_storage(x):
    return x + x.untyped_storage().nbytes()


# Skipped on purpose.
@torch.compiler.disable
def disabled_double(x):
    return x * 2


def calls_disabled(x):
    return disabled_double(x) + 1


@torch.library.custom_op("atlas::double", mutates_args=())
def double_op(x: torch.Tensor) -> torch.Tensor:
    return x * 2  # opaque to Dynamo, like the disabled function, but one node


@double_op.register_fake
def _(x):
    return torch.empty_like(x)


def calls_disabled_fixed(x):
    return double_op(x) + 1


def explicit_break(x):
    torch._dynamo.graph_break()
    return x + 1


# Autograd inside the compiled function.
def backward_inside(x):
    loss = (x * 2).sum()
    loss.backward()
    return x.grad


def backward_inside_fixed(x):
    return (x * 2).sum()  # compile the loss; call .backward() outside


def autograd_grad(x):
    loss = (x * 2).sum()
    return torch.autograd.grad(loss, x)[0]


def requires_grad_inside(x):
    y = x.detach().requires_grad_()
    return y * 2


def requires_grad_inside_fixed(x):
    return x * 2  # x arrives with requires_grad set outside


def parameter_inside(x):
    p = torch.nn.Parameter(x.detach())
    return p * 2


weight = torch.nn.Parameter(torch.ones(3, device=device))


def parameter_inside_fixed(x):
    return weight * x  # made once, in __init__ or at module level


# Hooks and modules.
hooked = torch.nn.Linear(3, 3).to(device)
hooked.register_forward_pre_hook(lambda module, args: print("forward"))


def forward_hook_prints(x):
    return hooked(x)


quiet = torch.nn.Linear(3, 3).to(device)
quiet.register_forward_pre_hook(lambda module, args: None)


def forward_hook_prints_fixed(x):
    return quiet(x)


backward_hooked = torch.nn.Linear(3, 3).to(device)
backward_hooked.register_full_backward_hook(lambda module, gin, gout: None)


def module_backward_hook(x):
    return backward_hooked(x)


def module_backward_hook_fixed(x):
    y = quiet(x)
    y.register_hook(lambda grad: grad)  # a tensor hook instead: traced
    return y


counter = {"calls": 0}


def mutate_global(x):
    counter["calls"] += 1  # a side effect Dynamo replays after the graph
    return x + counter["calls"]


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


# Tensors Dynamo cannot wrap, values it cannot return.
def resize_inside(x):
    y = x.clone()
    y.resize_(6)
    return y


def resize_inside_fixed(x):
    return torch.cat([x, x.new_zeros(3)])


def apply_inside(x):
    # apply_ calls Python once per element, so it exists for CPU tensors only.
    return x.to("cpu", copy=True).apply_(lambda v: v * 2).to(x.device)


def apply_inside_fixed(x):
    return x * 2


def to_sparse(x):
    return x.to_sparse() * 2


def to_sparse_fixed(x):
    return x * 2  # stay dense inside; convert outside


def object_output(x):
    return [x + 1, object()]


def object_output_fixed(x):
    return [x + 1]


def generator_outside(x):
    return x + next(numbers)


def generator_outside_fixed(x, n):
    return x + n  # the next value, passed in


def _count():
    while True:
        yield 1


numbers = _count()


def x3():
    return (torch.randn(3, device=device),)


def grad3():
    return (torch.randn(3, device=device, requires_grad=True),)


def with_next():
    return (torch.randn(3, device=device), 1)


def with_hash():
    x = torch.randn(3, device=device)
    return (x, hash(x) % 2)


CAPTURE = {"capture_scalar_outputs": True}
SHAPES = {"capture_dynamic_output_shape_ops": True}
REORDER = {"reorderable_logging_functions": {print}}
AUTOGRAD = {"trace_autograd_ops": True} if hasattr(
    torch._dynamo.config, "trace_autograd_ops") else {}
# name: (what, broken, fix, fixed, config of the fix, kind of fix: a rewrite,
# torch.where or torch.cond, a config, moving it out of the compiled code, a custom op)
cases = {
    "if_on_tensor": ("if on a tensor's value", if_on_tensor,
                     "torch.cond", if_on_tensor_fixed, {}, "where_or_cond"),
    "while_on_tensor": ("while on a tensor's value", while_on_tensor,
                        "compute the loop count as a tensor", while_on_tensor_fixed, {},
                        "rewrite"),
    "raise_on_tensor": ("raise if a tensor's value is bad", raise_on_tensor,
                        "torch._assert_async", raise_on_tensor_fixed, {}, "rewrite"),
    "bool_of_tensor": ("bool(tensor)", bool_of_tensor,
                       "torch.where", bool_of_tensor_fixed, {},
                       "where_or_cond"),
    "if_on_count": ("if on a count of elements", where_by_mask_sum,
                    "torch.where", where_by_mask_sum_fixed, {},
                    "where_or_cond"),
    "item": ("Tensor.item() as a divisor", item, "keep it a tensor", item_fixed, {},
             "rewrite"),
    "item_captured": ("Tensor.item() as a scale", item_captured,
                      "capture_scalar_outputs=True", item_captured, CAPTURE, "config"),
    "float_of_tensor": ("float(tensor)", float_of_tensor,
                        "capture_scalar_outputs=True", float_of_tensor, CAPTURE,
                        "config"),
    "int_index": ("int(tensor) as an index", int_index, "index with the tensor",
                  int_index_fixed, {}, "rewrite"),
    "tolist": ("Tensor.tolist() in a comprehension", tolist, "a tensor op",
               tolist_fixed, {}, "rewrite"),
    "max_of_tolist": ("max() of Tensor.tolist()", max_of_tolist, "Tensor.max()",
                      max_of_tolist_fixed, {}, "rewrite"),
    "sorted_by_tensor": ("sorted() keyed on tensor values", sorted_by_tensor,
                         "stack and argmin", sorted_by_tensor_fixed, {}, "rewrite"),
    "nonzero": ("Tensor.nonzero()", nonzero, "capture_dynamic_output_shape_ops=True",
                nonzero, SHAPES, "config"),
    "boolean_mask": ("x[x > 0]", boolean_mask, "capture_dynamic_output_shape_ops=True",
                     boolean_mask, SHAPES, "config"),
    "boolean_mask_sum": ("x[x > 0].sum()", boolean_mask_sum, "torch.where, same sum",
                         boolean_mask_sum_fixed, {}, "where_or_cond"),
    "unique": ("torch.unique", unique, "capture_dynamic_output_shape_ops=True",
               unique, SHAPES, "config"),
    "len_of_nonzero": ("len(x.nonzero())", len_of_nonzero, "count with (x != 0).sum()",
                       len_of_nonzero_fixed, {}, "rewrite"),
    "deepcopy_list": ("copy.deepcopy of tensors", deepcopy_list, "Tensor.clone()",
                      deepcopy_list_fixed, {}, "rewrite"),
    "deepcopy_module": ("copy.deepcopy of a module", deepcopy_module,
                        "copy once, outside", deepcopy_module_fixed, {},
                        "move_out"),
    "print_text": ("print('...')", print_text,
                   "reorderable_logging_functions={print}", print_text, REORDER,
                   "config"),
    "print_tensor": ("print(tensor)", print_tensor,
                     "reorderable_logging_functions={print}", print_tensor, REORDER,
                     "config"),
    "logger_info": ("logging.Logger.info", logger_info, "log outside",
                    without_message, {}, "move_out"),
    "warnings_warn": ("warnings.warn", warn, "warn outside", without_message, {},
                      "move_out"),
    "str_of_tensor": ("str(tensor)", tensor_to_str, "format outside", without_message,
                      {}, "move_out"),
    "time_time": ("time.time()", time_time, "time outside", without_message, {},
                  "move_out"),
    "zlib_crc32": ("a C extension (zlib.crc32)", crc32, "compute it once, outside",
                   crc32_fixed, {}, "move_out"),
    "os_getpid": ("os.getpid()", getpid, "compute it once, outside", getpid_fixed, {},
                  "move_out"),
    "open_file": ("open() a file", open_file, "read outside", without_message, {},
                  "move_out"),
    "eval_string": ("eval()", eval_string, "write the expression", eval_string_fixed,
                    {}, "rewrite"),
    "globals_store": ("globals()[name] = ...", globals_store, "a global statement",
                      globals_store_fixed, {}, "rewrite"),
    "hash_tensor": ("hash(tensor)", hash_tensor, "hash outside, pass it in",
                    hash_tensor_fixed, {}, "move_out"),
    "locals_call": ("locals()", locals_call, "name the variables", locals_call_fixed,
                    {}, "rewrite"),
    "class_inside": ("a class defined inside", class_inside,
                     "define it at module level", class_inside_fixed, {},
                     "move_out"),
    "string_io": ("io.StringIO", string_io, "write outside", without_message, {},
                  "move_out"),
    "torch_save": ("torch.save inside", torch_save, "save outside", without_message, {},
                   "move_out"),
    "random_random": ("random.random()", random_random, "torch.rand",
                      random_random_fixed, {}, "rewrite"),
    "numpy_random": ("np.random.rand()", numpy_random, "torch.rand", numpy_random_fixed,
                     {}, "rewrite"),
    "manual_seed": ("torch.manual_seed inside", manual_seed, "seed before the call",
                    manual_seed_fixed, {}, "move_out"),
    "set_num_threads": ("torch.set_num_threads inside", set_threads, "set it outside",
                        without_message, {}, "move_out"),
    "numpy_interp": ("a NumPy function torch._numpy lacks", numpy_interp,
                     "the same in torch ops", numpy_interp_fixed, {}, "rewrite"),
    "numpy_tobytes": ("ndarray.tobytes()", numpy_tobytes, "numel() * element_size()",
                      numpy_tobytes_fixed, {}, "rewrite"),
    "untyped_storage": ("Tensor.untyped_storage()", untyped_storage,
                        "numel() * element_size()", numpy_tobytes_fixed, {}, "rewrite"),
    "compiler_disable": ("a torch.compiler.disable'd call", calls_disabled,
                         "a custom_op", calls_disabled_fixed, {}, "custom_op"),
    "explicit_graph_break": ("torch._dynamo.graph_break()", explicit_break, "remove it",
                             without_message, {}, "rewrite"),
    "backward_inside": ("loss.backward() inside", backward_inside,
                        "compile the loss, backward outside", backward_inside_fixed, {},
                        "move_out"),
    "autograd_grad": ("torch.autograd.grad inside", autograd_grad,
                      "trace_autograd_ops=True", autograd_grad, AUTOGRAD, "config"),
    "requires_grad_inside": ("Tensor.requires_grad_() inside", requires_grad_inside,
                             "set it on the input, outside", requires_grad_inside_fixed,
                             {}, "move_out"),
    "parameter_inside": ("nn.Parameter() made inside", parameter_inside,
                         "make it once, outside", parameter_inside_fixed, {},
                         "move_out"),
    "forward_hook_print": ("a forward hook that prints", forward_hook_prints,
                           "a hook without print", forward_hook_prints_fixed, {},
                           "rewrite"),
    "module_backward_hook": ("a module's full backward hook", module_backward_hook,
                             "a tensor hook", module_backward_hook_fixed, {},
                             "rewrite"),
    "mutate_global": ("mutating a global dict", mutate_global, "none needed",
                      mutate_global, {}, "none_needed"),
    "mutate_module_attribute": ("self.calls += 1 in forward", mutate_module_attribute,
                                "none needed", mutate_module_attribute, {},
                                "none_needed"),
    "resize_inside": ("Tensor.resize_()", resize_inside, "torch.cat a new tensor",
                      resize_inside_fixed, {}, "rewrite"),
    "apply_inside": ("Tensor.apply_(python function)", apply_inside,
                     "a vectorised op", apply_inside_fixed, {}, "rewrite"),
    "to_sparse": ("a sparse tensor", to_sparse, "stay dense inside", to_sparse_fixed,
                  {}, "move_out"),
    "object_output": ("an object() among the outputs", object_output,
                      "return tensors only", object_output_fixed, {}, "rewrite"),
    "generator_outside": ("next() on a generator made outside", generator_outside,
                          "pass the value in", generator_outside_fixed, {},
                          "move_out"),
}
inputs = {"backward_inside": grad3, "autograd_grad": grad3,
          "requires_grad_inside": grad3, "module_backward_hook": grad3,
          "int_index": x3}
fixed_inputs = {"generator_outside": with_next, "hash_tensor": with_hash}


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


torch.manual_seed(0)
atlas = {}
quiet_output = contextlib.redirect_stdout(io.StringIO())  # what the cases print
# The log's own handler would also print every message (to stderr): kept here instead.
quiet_log = contextlib.redirect_stderr(io.StringIO())
with quiet_output, quiet_log, warnings.catch_warnings():
    warnings.simplefilter("ignore")
    for name, (what, broken, fix, fixed, config, kind) in cases.items():
        args = inputs.get(name, x3)()
        before = graph_breaks(broken, args, {})
        message = first_message(before)
        found = re.search(r"/gb/gb(\d{4})\.html", message)
        make = fixed_inputs.get(name, inputs.get(name, x3))
        after = graph_breaks(fixed, make(), config)
        atlas[name] = {"what": what, "id": f"GB{found.group(1)}" if found else None,
                       "message": message, "before": len(before), "fix": fix,
                       "fix_kind": kind, "after": len(after)}

# --8<-- [start:table]
width = max(len(name) for name in atlas)
print(f"{'case':<{width}} {'breaks':>6} {'fixed':>5}  id      what breaks")
for name, entry in atlas.items():
    # The break's type: the first line that is not a preamble.
    lines = [line for line in entry["message"].splitlines()
             if not line.startswith(("Encountered graph break", "Failed to handle"))]
    gist = lines[0] if lines else "(no break)"
    print(f"{name:<{width}} {entry['before']:>6} {entry['after']:>5}  "
          f"{entry['id'] or '-':<7} {gist[:60]}")
# --8<-- [end:table]
results["atlas"] = atlas
results["cases"] = len(atlas)
results["breaking"] = sum(entry["before"] > 0 for entry in atlas.values())
results["fixed"] = sum(entry["before"] > 0 and entry["after"] == 0
                       for entry in atlas.values())
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
        torch.compile(cases[name][1], backend="eager", fullgraph=True)(*x3())
        outcome = "compiled"
    except Exception as error:  # what fullgraph=True raises at the first break
        outcome = type(error).__name__
    fullgraph[name] = outcome
results["fullgraph"] = fullgraph
