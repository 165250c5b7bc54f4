"""A recompile atlas: the guards that fail most often, each made to fail and fixed.

    python snippets/graph_mode/recompile_atlas.py

Each case compiles one small function (with the "eager" backend: guards are
Dynamo's, so no Inductor is needed to see them), calls it so that a guard fails, and
counts the recompiles the `recompiles` log (what TORCH_LOGS=recompiles prints)
reports. Then it makes the same calls with the fix and counts again. The first
message of each case is kept as the release printed it, less what differs from
machine to machine: file paths and line numbers, and the user stack trace that
follows each guard. Last, one function meets more sizes than Dynamo's recompile
limit allows. Runs on the CPU; a tensor on the "meta" device stands in for a second
device where there is no GPU.
"""

import contextlib
import logging
import re
from logging.handlers import BufferingHandler

import torch

device = "cuda" if torch.cuda.is_available() else "cpu"
results = {"device": device, "atlas_kind": "recompile", "atlas": {}}
other_device = "cpu" if device == "cuda" else "meta"  # meta: shapes, no data
results["devices"] = [device, other_device]


def normalised(message):
    """The message without what differs between machines: paths, line numbers, the
    stack traces, runs of spaces."""
    lines = []
    for line in message.splitlines():
        if re.match(r"\s*- (User stack trace:|  )", line):
            continue  # the user stack trace: file names and lines
        line = re.sub(r"[\w./<>-]*\.py\b(:\d+)?", "<file>", line)
        lines.append(re.sub(r"\s{2,}", "  ", line).rstrip())
    return "\n".join(lines)


# --8<-- [start:tools]
@contextlib.contextmanager
def recompile_log(messages):
    """Keep what TORCH_LOGS=recompiles prints (and Dynamo's warnings) in messages."""
    handler = BufferingHandler(capacity=10_000)
    dynamo_log = logging.getLogger("torch._dynamo")
    torch._logging.set_logs(recompiles=True)
    dynamo_log.addHandler(handler)
    try:
        yield
    finally:
        dynamo_log.removeHandler(handler)
        torch._logging.set_logs()  # back to the default: nothing logged
        messages += [record.getMessage() for record in handler.buffer]


def recompiles(fn, calls, **options):
    """Compile fn afresh, make each call; return the recompile messages and what
    each call returned, with its gradients and what it changed."""
    torch._dynamo.reset()  # forget every earlier compile
    compiled = watched(torch.compile(fn, backend="eager", **options))
    messages, outputs = [], []
    torch.manual_seed(0)
    with recompile_log(messages):
        for call in calls:
            outputs.append(result(call(compiled)) + compiled.last())
    return [m for m in messages if m.startswith("Recompiling function")], outputs


def watched(fn):
    """fn, noting after each call which tensor arguments it changed in place, where
    the random generator stands, and what each module argument's state_dict holds
    (its keys, what a checkpoint needs, and values)."""
    def run(*args):
        tensors = [a for a in flatten(args) if torch.is_tensor(a)]
        before = [t.detach().clone() for t in tensors]
        out = fn(*args)
        changed = [i for i, (t, b) in enumerate(zip(tensors, before))
                   if not same(t.detach(), b)]
        states = [dict(a.state_dict()) for a in args if isinstance(a, torch.nn.Module)]
        run.seen.append((changed, torch.get_rng_state(), states))
        return out
    def last():  # a call that compiled its own function (closure) changed nothing here
        return run.seen.pop() if run.seen else ([], torch.get_rng_state(), [])
    run.seen, run.last = [], last
    return run


def flatten(value):
    if isinstance(value, (list, tuple)):
        return [v for item in value for v in flatten(item)]
    if isinstance(value, dict):
        return flatten(list(value.values()))
    return [value]


def same(a, b):
    """One result: a tensor's device, dtype, shape, strides, requires_grad and
    values (to float rounding: relative 1e-5 in float32, as close in ulps in float64);
    lists, tuples and dicts item by item."""
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(map(same, a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if not (torch.is_tensor(a) and torch.is_tensor(b)):
        return a == b
    if (a.device, a.dtype, a.shape, a.stride(), a.requires_grad) != (
            b.device, b.dtype, b.shape, b.stride(), b.requires_grad):
        return False
    if a.device.type == "meta":
        return True
    ulps = min(1.0, torch.finfo(a.dtype).eps / torch.finfo(torch.float32).eps
               ) if a.is_floating_point() else 1.0
    return torch.allclose(a.detach(), b.detach(), rtol=1e-5 * ulps, atol=1e-6 * ulps)


def result(value):
    """What a call returned, with the gradients a backward from it leaves on the
    tensors it came from (inputs, parameters), taken at once."""
    return value, leaf_gradients(value)


def leaf_gradients(t):
    """The gradients of t.sum() on each leaf it came from, by shape and value."""
    if not (torch.is_tensor(t) and t.requires_grad):
        return []
    leaves, seen, todo = [], set(), [t.grad_fn]
    while todo:
        node = todo.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        if hasattr(node, "variable"):  # AccumulateGrad: a leaf's
            leaves.append(node.variable)
        todo += [next_node for next_node, _ in node.next_functions]
    found = torch.autograd.grad(t.sum(), leaves, retain_graph=True)
    return sorted(found, key=lambda g: (tuple(g.shape), g.sum().item()))


def call(*args):  # one call of the compiled function with these arguments
    return lambda compiled: compiled(*args)


def eagerly(fn, calls):  # the calls, run eagerly, watched as the compiled ones are
    eager = watched(fn)
    torch.manual_seed(0)
    return [result(call(eager)) + eager.last() for call in calls]


def case(name, what, fn, calls, fix, fixed_calls, fixed_fn=None, options=None,
         fixed_options=None, fixed_config=None, changes=None, kind="fix", reset=None,
         also=None, model=None):
    """Count the recompiles of the calls, then of the fixed calls; keep both, and
    whether the fixed calls, compiled, returned what the calls return eagerly, and
    changed the same (inputs, the random generator, module state). also: more
    (calls, fixed calls) to compare, not counted (other dtypes). model: the module
    whose state is compared where the fix passes a part of it."""
    want = eagerly(fn, calls)  # the original calls, run eagerly
    held = model and {k: v.clone() for k, v in model.state_dict().items()}
    if reset:
        reset()  # undo what those calls changed
    before, _ = recompiles(fn, calls, **(options or {}))
    if reset:
        reset()  # and what they changed compiled
    with torch._dynamo.config.patch(**(fixed_config or {})):  # a config fix, if any
        after, got = recompiles(fixed_fn or fn, fixed_calls, **(fixed_options or {}))
        if also:
            if reset:
                reset()
            want += eagerly(fn, also[0])
            if reset:
                reset()
            got += recompiles(fixed_fn or fn, also[1], **(fixed_options or {}))[1]
    if model:
        want = [(*r[:4], [held]) for r in want]
        got = [(*r[:4], [dict(model.state_dict())]) for r in got]
    equal = len(want) == len(got) and all(map(same, want, got))
    first = before[0].splitlines() if before else ["(no recompile)"]
    failed = next((line.strip() for line in first if line.strip().startswith("- ")),
                  first[0])
    print(f"{name}: {len(before)} recompile(s), then {len(after)} with the fix")
    print(f"    {normalised(failed)[:84]}")
    atlas[name] = {"what": what, "id": None, "fix": fix, "before": len(before),
                   "after": len(after), "fix_kind": kind, "same": equal,
                   "changes": changes,
                   "message": normalised(before[0]) if before else ""}


atlas = {}
# --8<-- [end:tools]


# --8<-- [start:shapes]
def scale(x):
    return torch.sin(x) * 2


x8, x16, x1 = (torch.randn(n, 4, device=device) for n in (8, 16, 1))


def marked(x, dim=0):  # a copy of x whose size at dim is symbolic from the start
    x = x.clone()
    torch._dynamo.mark_dynamic(x, dim)
    return x


def unbacked(x, dim=0):  # symbolic, and no guess at its value: 0 and 1 included
    x = x.clone()
    torch._dynamo.decorators.mark_unbacked(x, dim)
    return x


case("size", "a tensor's size changes (8 rows, then 16)", scale,
     [call(x8), call(x16)],
     "torch._dynamo.mark_dynamic(x, 0) before the first call",
     [call(marked(x8)), call(x16)])
case("size_0_1", "a dynamic size becomes 1 (dynamic=True: 8 rows, then 1)", scale,
     [call(x8), call(x1)],
     "torch._dynamo.decorators.mark_unbacked(x, 0): no 0/1 specialisation",
     [call(unbacked(x8)), call(unbacked(x1))], options={"dynamic": True})
# --8<-- [end:shapes]

# --8<-- [start:tensors]
case("dtype", "a float32 tensor, then a float64 one", scale,
     [call(x8), call(x8.double())],
     "convert at the call: x.float(), so the function sees one dtype",
     [call(x8), call(x8.double().float())],
     changes="The float64 call is computed in float32.")
case("device", f"a tensor on {device}, then one on {other_device}", scale,
     [call(x8), call(x8.to(other_device))],
     "move at the call: x.to(device), so the function sees one device",
     [call(x8), call(x8.to(device))],
     changes=f"The call on {other_device} runs on {device}.")
case("requires_grad", "a tensor without, then one with requires_grad", scale,
     [call(x8), call(x8.clone().requires_grad_())],
     "x.detach() at the call where no gradient is wanted",
     [call(x8), call(x8.clone().requires_grad_().detach())],
     changes="That call's result has no gradient: right only where none is wanted.")
image = torch.randn(2, 3, 4, 4, device=device)
case("memory_format", "an image tensor, then one in channels_last", scale,
     [call(image), call(image.to(memory_format=torch.channels_last))],
     "one memory format at the call: x.contiguous() (or channels_last everywhere)",
     [call(image), call(image.to(memory_format=torch.channels_last).contiguous())],
     changes="The channels_last call returns a contiguous result: equal values, "
             "other strides.")


def attend(x, mask=None):  # as attention takes an optional mask
    scores = x @ x.T
    if mask is not None:
        scores = scores + mask
    return scores.softmax(-1)


# Adds nothing: the same as None. In the scores' dtype: a float32 mask would turn
# bfloat16 scores into float32.
no_mask = torch.zeros(8, 8, device=device, dtype=x8.dtype)
some_mask = torch.zeros(8, 8, device=device).masked_fill(
    torch.ones(8, 8, device=device).triu(1).bool(), float("-inf"))
case("none_then_tensor", "mask=None, then a mask tensor", attend,
     [call(x8, None), call(x8, some_mask)],
     "always pass a tensor: an all-zeros mask, in the scores' shape (8x8, for x's 8 "
     "rows) and dtype, where there is none",
     [call(x8, no_mask), call(x8, some_mask)])
# --8<-- [end:tensors]


# --8<-- [start:global_state]
def in_mode(mode, x):  # call the compiled function inside a context manager
    return lambda compiled: mode(compiled)(x)


def no_grad_inside(x):  # no_grad entered inside the function does not help
    with torch.no_grad():
        return torch.sin(x) * 2


def project(x):  # a matmul: autocast runs it in a lower precision
    return x @ x.T


def autocast_inside(x):
    with torch.autocast(device):
        return x @ x.T


@contextlib.contextmanager
def changed(get, set_to, value):  # a global setting changed for one call
    before = get()
    set_to(value)
    try:
        yield
    finally:
        set_to(before)


def threads(n):
    return changed(torch.get_num_threads, torch.set_num_threads, n)


def default_dtype(dtype):
    return changed(torch.get_default_dtype, torch.set_default_dtype, dtype)


case("grad_mode", "called with gradients on, then under torch.no_grad()",
     no_grad_inside, [call(x8), in_mode(torch.no_grad(), x8)],
     "call in one grad mode; torch.no_grad() inside fn does not change the guard",
     [call(x8), call(x8)])  # fn's own no_grad: either mode returns the same
case("autocast", "called plainly, then under torch.autocast", project,
     [call(x8), in_mode(torch.autocast(device), x8)],
     "enter autocast inside the compiled function, not around the call",
     [call(x8), call(x8)], fixed_fn=autocast_inside,
     changes="The first call, plain in the original, runs under autocast too: right "
             "only where every call should.")
case("num_threads", "torch.set_num_threads changes between calls", scale,
     [call(x8), in_mode(threads(1), x8)],
     "set the thread count once, before the first compile",
     [in_mode(threads(1), x8), in_mode(threads(1), x8)])
counts = (x8 * 4).round().long()  # an integer x: torch.sin makes it the default dtype
case("default_dtype", "torch.set_default_dtype changes between calls", scale,
     [call(x8), in_mode(default_dtype(torch.float64), x8)],
     "set the default dtype once, before the first compile",
     [call(x8), call(x8)],
     also=([in_mode(default_dtype(torch.float64), counts)], [call(counts)]),
     changes="A call made under float64 computes in float32 wherever the function "
             "makes floats of its own: from an integer x (as here), a Python number, "
             "or a factory with no dtype.")
# --8<-- [end:global_state]


# --8<-- [start:modules]
class Scaled(torch.nn.Module):
    def __init__(self, factor):
        super().__init__()
        self.linear = torch.nn.Linear(4, 4, device=device)
        self.factor = factor  # a Python int: a constant of the graph

    def forward(self, x):
        return self.linear(x) * self.factor


def run(module, x):
    return module(x)


def with_factor(module, factor, x):  # change the attribute, then call
    def change_and_call(compiled):
        module.factor = factor
        return compiled(module, x)
    return change_and_call


def freeze_then_call(module, x):  # a layer frozen after the first compile
    def freeze(compiled):
        module.linear.weight.requires_grad_(False)
        return compiled(module, x)
    return freeze


class ScaledByBuffer(Scaled):  # the fix: the factor in a 0-d tensor, a buffer
    def __init__(self, factor):
        super().__init__(factor)
        del self.factor
        # int64, as the int was; not persistent: state_dict and checkpoints unchanged.
        self.register_buffer("factor", torch.tensor(factor, device=device),
                             persistent=False)


def with_buffer(module, factor, x):  # change the buffer's value in place, then call
    def change_and_call(compiled):
        module.factor.fill_(factor)
        return compiled(module, x)
    return change_and_call


def backward_after_change(set_factor, module, x):  # an output's backward, late
    def call_change_call(compiled):
        first = compiled(module, x)
        set_factor(module, 5, x)(compiled)  # the next step changes the factor first
        try:
            return "gradient", torch.autograd.grad(first.sum(), module.linear.weight)
        except RuntimeError as error:  # a tensor the graph saved was changed in place
            return "raised", type(error).__name__
    return call_change_call


m, mb = Scaled(2), ScaledByBuffer(2)
mb.linear.load_state_dict(m.linear.state_dict())  # the same layer, to compare
case("module_int", "an int attribute of a module changes (2, 3, 4)", run,
     [with_factor(m, n, x8) for n in (2, 3, 4)],
     "keep it in a 0-d tensor, a buffer, and change its value",
     [with_buffer(mb, n, x8) for n in (2, 3, 4)],
     also=([backward_after_change(with_factor, m, x8)],
           [backward_after_change(with_buffer, mb, x8)]),
     changes="Changing the buffer in place (fill_) before the backward of an output "
             "made with the old value raises in that backward (the graph saved the "
             "buffer); the int did not.")
# The message's own hint: ints on modules may be symbols. Then only the first
# change recompiles, as with automatic dynamic shapes.
with torch._dynamo.config.patch(allow_unspec_int_on_nn_module=True):
    hinted, _ = recompiles(run, [with_factor(m, n, x8) for n in (2, 3, 4)])
print(f"    module_int with allow_unspec_int_on_nn_module: {len(hinted)} recompile(s)")
frozen, unfrozen = Scaled(2), Scaled(2)
frozen.load_state_dict(unfrozen.state_dict())
frozen.linear.weight.requires_grad_(False)
case("parameter", "a parameter's requires_grad changes (a layer frozen)", run,
     [call(unfrozen, x8), freeze_then_call(unfrozen, x8)],
     "freeze layers before the first compile",
     [call(frozen, x8), call(frozen, x8)],
     changes="The first call runs frozen too: the weight gets no gradient from it.",
     reset=lambda: unfrozen.linear.weight.requires_grad_(True))


class Dropless(torch.nn.Module):  # behaves differently in training and in eval
    def forward(self, x):
        return x * 2 if self.training else x


def in_training(module, training, x):  # model.train() or model.eval(), then call
    def switch_and_call(compiled):
        module.train(training)
        return compiled(module, x)
    return switch_and_call


modes = Dropless()
switches = [in_training(modes, t, x8) for t in (True, False, True, False)]
case("train_eval", "model.train(), model.eval(), and back, twice", run, switches,
     "none needed: each mode compiles once, and switching back reuses its entry",
     switches, kind="none_needed")
square = torch.randn(4, 4, device=device)
case("strides", "a tensor, then its transpose (other strides)", scale,
     [call(square), call(square.t())],
     "x.contiguous() at the call: one layout",
     [call(square), call(square.t().contiguous())],
     changes="The transposed call returns a contiguous result: equal values, other "
             "strides.")
params = [torch.nn.Parameter(torch.randn(n, device=device)) for n in (4, 8, 16)]


def decay(p):
    return p * 0.99


def marked_param(p):  # mark_dynamic on the first parameter, then call
    def mark_and_call(compiled):
        torch._dynamo.mark_dynamic(p, 0)
        return compiled(p)
    return mark_and_call


case("parameter_sizes", "parameters of 3 sizes through one function", decay,
     [call(p) for p in params],
     "force_parameter_static_shapes=False and mark_dynamic (the message's hint)",
     [marked_param(params[0])] + [call(p) for p in params[1:]],
     fixed_config={"force_parameter_static_shapes": False})


class PickOne(torch.nn.Module):  # runs one of its layers, chosen by an int
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList(
            torch.nn.Linear(4, 4, device=device) for _ in range(3))
        self.index = 0

    def forward(self, x):
        return self.layers[self.index](x)


def with_index(module, index, x):  # choose a layer, then call
    def choose_and_call(compiled):
        module.index = index
        return compiled(module, x)
    return choose_and_call


picker = PickOne()
case("layer_index", "a module's layer index changes (0, 1, 2, 0)", run,
     [with_index(picker, i, x8) for i in (0, 1, 2, 0)],
     "pass the chosen layer itself: layers of one kind share one entry",
     [call(picker.layers[i], x8) for i in (0, 1, 2, 0)], model=picker)
hooked, handles = torch.nn.Linear(4, 4, device=device), []


def doubled(module, args, output):
    return output * 2


def hook_then_call(module, x):  # register a forward hook, then call
    def hook_and_call(compiled):
        handles.append(module.register_forward_hook(doubled))
        return compiled(module, x)
    return hook_and_call


def remove_hooks():
    while handles:
        handles.pop().remove()


case("hook_added", "a forward hook registered after the first call", run,
     [call(hooked, x8), hook_then_call(hooked, x8)],
     "skip_nnmodule_hook_guards=False: hooks are guarded, one recompile runs it",
     [call(hooked, x8), hook_then_call(hooked, x8)],
     fixed_config={"skip_nnmodule_hook_guards": False}, kind="recompile_needed",
     reset=remove_hooks)
# By default no guard looks at hooks: nothing recompiles, and the compiled
# function runs without the new hook.
remove_hooks()
_, unhooked = recompiles(run, [call(hooked, x8), hook_then_call(hooked, x8)])
hook_ran = same(unhooked[1][:2], result(hooked(x8)))  # eagerly, the hook runs
print(f"    hook_added by default: 0 recompiles, and the hook ran: {hook_ran}")
remove_hooks()
# --8<-- [end:modules]
results["hook_ran_by_default"] = hook_ran
results["module_int_hinted"] = len(hinted)


# --8<-- [start:python_values]
def times(x, n):
    return x * n


def summed(xs):
    return sum(xs)


def total_stacked(stacked):  # the list as one tensor: one more dimension
    # In the list's dtype, as 0 + a + b keeps it (sum would make int32 int64); bools
    # add up as int64 in both.
    return stacked.sum(dim=0, dtype=torch.int64 if stacked.dtype == torch.bool
                       else stacked.dtype)


def total_values(named):
    return sum(named.values())


def scaled_by(factor):
    def closure(x):
        return x * factor  # factor is a cell of the closure
    return closure


def fresh_closure(factor, x):  # compile a new closure of the same code, call it
    return lambda _: torch.compile(scaled_by(factor), backend="eager")(x)


SCALE = 2  # a module-level global


def times_global(x):
    return x * SCALE


def with_global(value, x):  # set the global, then call
    def set_and_call(compiled):
        global SCALE
        SCALE = value
        return compiled(x)
    return set_and_call


case("int_arg", "a Python int argument changes (2, 3, 4)", times,
     [call(x8, n) for n in (2, 3, 4)],
     "dynamic=True: the int is a symbol from the first compile",
     [call(x8, n) for n in (2, 3, 4)], fixed_options={"dynamic": True})
temperature = torch.tensor(2.5, device=device)  # a 0-d x: two 0-d tensors promote
case("float_arg", "a Python float argument changes (0.5, 0.25, 0.125)", times,
     [call(x8, v) for v in (0.5, 0.25, 0.125)],
     "dynamic=True: the float is a symbol from the first compile",
     [call(x8, v) for v in (0.5, 0.25, 0.125)], fixed_options={"dynamic": True},
     also=([call(x8.double(), 0.1), call(counts, 0.5), call(temperature, 0.1),
            call(x8.bfloat16(), 0.1)],) * 2)
group = {"lr": 0.1}  # as in an optimizer's param_groups
bias = torch.zeros(8, 4, device=device, dtype=torch.bfloat16)  # a bfloat16 bias at 0


def sgd_step(p, grad, group):
    return p - group["lr"] * grad


def scheduled(lr, p, grad=None):  # the schedule sets the learning rate, then a step
    def set_and_step(compiled):
        group["lr"] = lr
        return compiled(p, p if grad is None else grad, group)
    return set_and_step


case("lr_schedule", "a learning rate a schedule lowers (0.1, 0.05, 0.025)",
     sgd_step, [scheduled(lr, x8) for lr in (0.1, 0.05, 0.025)],
     "dynamic=True: the rate is a symbol from the first compile",
     [scheduled(lr, x8) for lr in (0.1, 0.05, 0.025)], fixed_options={"dynamic": True},
     also=([scheduled(0.1, x8.double()), scheduled(0.1, bias, x8.bfloat16()),
            scheduled(0.1, temperature)],) * 2)
halves = [(x8 * k).sin().half() for k in (1, 2, 3)]  # float16 values to add up
case("list_len", "a list of 2 tensors, then of 3", summed,
     [call([x8, x8]), call([x8, x8, x8])],
     "stack them into one tensor, its size marked dynamic",
     [call(marked(torch.stack([x8, x8]))), call(torch.stack([x8, x8, x8]))],
     fixed_fn=total_stacked,
     also=([call([counts.int()] * 3), call(halves)],
           [call(torch.stack([counts.int()] * 3)), call(torch.stack(halves))]),
     changes="float16 and bfloat16 values are summed in float32 and rounded once, "
             "where sum() of the list rounds after each addition: their last bits may "
             "differ.")
case("dict_keys", "a dict with key 'a', then one with key 'b'", total_values,
     [call({"a": x8}), call({"b": x8})],
     "pass the values (a list of one length): a dict's keys are guarded",
     [call(list({"a": x8}.values())), call(list({"b": x8}.values()))],
     fixed_fn=summed)
narrow = torch.tensor(3, device=device, dtype=torch.int32)  # a 0-d int64 would promote
case("closure", "the same closure made with factor 2, 3, 4", scaled_by(2),
     [call(x8), fresh_closure(3, x8), fresh_closure(4, x8)],
     "pass the factor as an argument, with dynamic=True: a symbol from the first "
     "compile",
     [call(x8, f) for f in (2, 3, 4)], fixed_fn=times, fixed_options={"dynamic": True},
     also=([call(narrow)], [call(narrow, 2)]))
case("global_value", "a global int the function reads changes (2, 3, 4)", times_global,
     [with_global(n, x8) for n in (2, 3, 4)],
     "pass it as an argument, with dynamic=True: a symbol from the first compile",
     [call(x8, n) for n in (2, 3, 4)], fixed_fn=times, fixed_options={"dynamic": True},
     also=([with_global(2, narrow)], [call(narrow, 2)]))
# --8<-- [end:python_values]

results["atlas"] = atlas

# --8<-- [start:limit]
# Each new size under dynamic=False adds an entry to the function's cache, up to
# the limit (recompile_limit; cache_size_limit is its older name); past it, Dynamo
# warns once and runs the function's Python as it is.
config = torch._dynamo.config
limit_name = "recompile_limit" if hasattr(config, "recompile_limit") else (
    "cache_size_limit")
limit = getattr(config, limit_name)
sizes = [torch.randn(n, 4, device=device) for n in range(2, limit + 6)]
graphs = []


def keeping(graph_module, example_inputs):  # keeps each graph, runs it as traced
    graphs.append(graph_module)
    return graph_module.forward


torch._dynamo.reset()
compiled = torch.compile(scale, backend=keeping, dynamic=False)
messages = []
with recompile_log(messages):
    right = all(torch.allclose(compiled(x), scale(x)) for x in sizes)
warning = next(m for m in messages if "hit config" in m)
print(f"config.{limit_name} = {limit}; {len(sizes)} sizes: {len(graphs)} graphs "
      f"compiled, outputs match eager: {right}")
print(normalised(warning))
# --8<-- [end:limit]
recompiled = [m for m in messages if m.startswith("Recompiling function")]
# The fix: mark the size dynamic. It holds under dynamic=False too.
fixed, got = recompiles(scale, [call(marked(sizes[0]))] + [call(x) for x in sizes[1:]],
                        dynamic=False)
atlas["recompile_limit"] = {
    "what": f"{len(sizes)} sizes under dynamic=False, limit {limit}", "id": None,
    "message": normalised(warning), "before": len(recompiled),
    "fix": "torch._dynamo.mark_dynamic(x, 0) on the first input "
           f"(or raise torch._dynamo.config.{limit_name})",
    "after": len(fixed), "fix_kind": "fix", "changes": None,
    "same": all(map(same, eagerly(scale, [call(x) for x in sizes]), got))}
results["limit"] = {"name": limit_name, "value": limit, "calls": len(sizes),
                    "graphs": len(graphs), "matches_eager": right}
print(f"limit: {len(recompiled)} recompile(s), then {len(fixed)} with the fix")
