"""A transformer block, end to end: graphs, compile stages, kernels and time.

    python snippets/graph_mode/transformer_block.py

One pre-norm transformer block (attention through SDPA, an MLP with GELU, two
LayerNorms) and an AdamW training step, at a size a CPU runs in tens of
milliseconds. Counts the graphs with fullgraph=True, reads each compile stage's time
from Dynamo's compilation metrics, lists the kernels Inductor wrote, times eager
against compiled (inference, training step, optimizer step), splits a training step's
time between library calls and everything else, and lists the Triton kernels Inductor
writes for the block on an H100 (on a GPU it runs them; without one it writes them
with fake tensors and stops). Runs on CUDA when torch sees a GPU, else on the CPU.
"""

import contextlib
import copy
import re
import types
import warnings
from unittest import mock

import torch
import torch.nn.functional as F
from torch._dynamo.utils import clear_compilation_metrics, get_compilation_metrics
from torch._inductor.compile_fx import compile_fx
from torch._inductor.graph import GraphLowering
from torch._inductor.utils import run_and_get_code
from torch._inductor.virtualized import V
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.profiler import profile
from torch.utils import benchmark
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import FlopCounterMode

device = "cuda" if torch.cuda.is_available() else "cpu"
results = {"device": device}


# Stand-ins for the few torch.cuda queries Inductor makes while it writes code (is
# there a GPU, which one, its properties, its random-number state), answering as an
# H100 SXM would (published properties); Triton's backend pointed at sm_90 instead of
# asking a driver; the pattern-matcher set-up skipped, as it builds real CUDA tensors;
# and (torch 2.11) a fake tensor's request for a CUDA context ignored. All private
# to torch, all undone on leaving. None of it is needed on a GPU.
H100 = types.SimpleNamespace(
    name="NVIDIA H100 80GB HBM3", major=9, minor=0, multi_processor_count=132,
    total_memory=80 * 10**9, L2_cache_size=50 * 2**20, warp_size=32,
    max_threads_per_multi_processor=2048, max_threads_per_block=1024,
    regs_per_multiprocessor=65536, shared_memory_per_block=48 * 1024,
    shared_memory_per_block_optin=227 * 1024,
    shared_memory_per_multiprocessor=228 * 1024,
    gcnArchName="", is_integrated=False, uuid="none")


@contextlib.contextmanager
def h100_stand_ins():
    from torch._dynamo import device_interface
    from torch._inductor.fx_passes import joint_graph
    from torch._subclasses import fake_tensor
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import make_backend

    backend = make_backend(GPUTarget("cuda", 90, 32))
    answers = {
        "is_available": lambda: True, "device_count": lambda: 1,
        "current_device": lambda: 0, "get_device_properties": lambda *a, **k: H100,
        "get_device_capability": lambda *a, **k: (H100.major, H100.minor),
        "get_device_name": lambda *a, **k: H100.name,
        "get_rng_state": lambda *a, **k: torch.zeros(16, dtype=torch.uint8),
        "_exchange_device": lambda index: 0, "_maybe_exchange_device": lambda index: 0,
    }
    cuda_interface = device_interface.CudaInterface
    with contextlib.ExitStack() as stack:
        for name, answer in answers.items():
            stack.enter_context(mock.patch.object(torch.cuda, name, answer))
            # CudaInterface copied some of these functions when torch was imported.
            name = name.lstrip("_")
            if name in vars(cuda_interface):
                stack.enter_context(mock.patch.object(cuda_interface, name,
                                                      staticmethod(answer)))
        stack.enter_context(mock.patch.object(torch.utils._triton, "triton_backend",
                                              lambda: backend))
        stack.enter_context(mock.patch.object(joint_graph, "lazy_init",
                                              lambda *a, **k: None))
        if hasattr(fake_tensor, "init_gpu_context"):  # torch 2.11 asks a driver
            stack.enter_context(mock.patch.object(fake_tensor, "init_gpu_context",
                                                  lambda *a, **k: None))
        stack.enter_context(warnings.catch_warnings())  # "TF32 not enabled", as a GPU
        warnings.filterwarnings("ignore", message="TensorFloat32 tensor cores")
        # Answers cached before (no GPU, so no Triton) or during (an H100) are dropped.
        saved = dict(device_interface.caching_worker_device_properties)
        torch.utils._triton.has_triton.cache_clear()
        try:
            yield
        finally:
            torch.utils._triton.has_triton.cache_clear()
            device_interface.caching_worker_device_properties.clear()
            device_interface.caching_worker_device_properties.update(saved)


class CodeWritten(Exception):
    """Raised once Inductor has written the code, to stop before it compiles it."""


def stopped_by_us(error):
    while error is not None:
        if isinstance(error, CodeWritten):
            return True
        error = error.__cause__ or error.__context__
    return False


# --8<-- [start:model]
class Block(torch.nn.Module):
    """Pre-norm: x + attention(norm(x)), then x + MLP(norm(x))."""

    def __init__(self, width=256, heads=4):
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = torch.nn.LayerNorm(width), torch.nn.LayerNorm(width)
        self.qkv = torch.nn.Linear(width, 3 * width)  # q, k and v in one matmul
        self.out = torch.nn.Linear(width, width)
        self.fc1 = torch.nn.Linear(width, 4 * width)
        self.fc2 = torch.nn.Linear(4 * width, width)

    def forward(self, x):  # x: (batch, tokens, width)
        qkv = self.qkv(self.norm1(x)).unflatten(-1, (3, self.heads, -1))
        q, k, v = qkv.permute(2, 0, 3, 1, 4)  # each (batch, heads, tokens, width/heads)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.out(a.transpose(1, 2).flatten(2))
        return x + self.fc2(F.gelu(self.fc1(self.norm2(x))))


def training(model):
    """One step: forward, loss, backward, AdamW's update, gradients cleared."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)

    def train_step(x, target):
        loss = F.mse_loss(model(x), target)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        return loss
    return train_step


torch.manual_seed(0)
block = Block().to(device)
# 8 sequences of 128 tokens, 256 wide: 1 MiB of float32 activations per tensor.
x = torch.randn(8, 128, 256, device=device)
target = torch.randn(8, 128, 256, device=device)
# --8<-- [end:model]
results["parameters"] = sum(p.numel() for p in block.parameters())
results["parameter_tensors"] = len(list(block.parameters()))
results["shape"] = list(x.shape)


def first_line(error):
    return (str(error).strip().splitlines() or [""])[0]


# --8<-- [start:stages]
def stages(metrics):
    """Seconds per compile stage, summed over the frames (and backward) compiled.
    Each stage's metric includes the ones after it, so each is taken from the one
    before: Dynamo's tracing, AOTAutograd, Inductor's lowering and scheduling, then
    code generation with the C++ (or Triton) build."""
    def total(field):
        return sum(getattr(m, field) or 0 for m in metrics)
    frame = total("entire_frame_compile_time_s")
    backend = total("backend_compile_time_s")
    inductor, codegen = total("inductor_compile_time_s"), total("code_gen_time_s")
    backward = [m.inductor_compile_time_s or 0 for m in metrics
                if m.entire_frame_compile_time_s is None]  # compiled at backward()
    forward_inductor = inductor - sum(backward)
    return {"Dynamo": frame - backend, "AOTAutograd": backend - forward_inductor,
            "Inductor": inductor - codegen, "code_generation": codegen,
            "total": frame + sum(backward)}


# The first compile in a process also builds C++'s precompiled header and starts
# workers: pay that on something else, so the stages below are the block's own.
torch.compile(torch.sin)(torch.ones(4, device=device))
torch._dynamo.reset()
clear_compilation_metrics()
with torch.no_grad():
    _, inference_code = run_and_get_code(torch.compile(block), x)
compile_stages = {"inference": stages(get_compilation_metrics())}
torch._dynamo.reset()
clear_compilation_metrics()
compiled_step = torch.compile(training(copy.deepcopy(block)))
_, training_code = run_and_get_code(compiled_step, x, target)
compile_stages["training"] = stages(get_compilation_metrics())
for name, seconds in compile_stages.items():
    print(f"{name}: " + ", ".join(f"{stage.replace('_', ' ')} {s:.2f} s"
                                  for stage, s in seconds.items()))
# --8<-- [end:stages]
results["compile_seconds"] = compile_stages


# --8<-- [start:graphs]
inference = torch.compile(block, fullgraph=True)  # one graph, or an error
with torch.no_grad():
    inference(x)
step = training(copy.deepcopy(block))
explained = torch._dynamo.explain(step)(x, target)
print(f"forward, fullgraph=True: compiled, "
      f"{torch._dynamo.explain(block)(x).graph_count} graph")
print(f"training step: {explained.graph_count} graphs, "
      f"{explained.graph_break_count} break: "
      f"{first_line(explained.break_reasons[0].reason)}")
torch._dynamo.reset()
try:
    torch.compile(training(copy.deepcopy(block)), fullgraph=True)(x, target)
    raised = None
except torch._dynamo.exc.Unsupported as error:
    raised = first_line(error)
print(f"training step, fullgraph=True raises: {raised}")
# --8<-- [end:graphs]
results["fullgraph_step"] = raised
results["graphs"] = {"forward": torch._dynamo.explain(block)(x).graph_count,
                     "step": explained.graph_count,
                     "step_breaks": explained.graph_break_count,
                     "break_reason": first_line(explained.break_reasons[0].reason)}


# --8<-- [start:kernels]
class CountOps(TorchDispatchMode):
    """Counts the ops eager runs, each a kernel of its own. Views only relabel
    memory, so they are left out (_unsafe_view is one, untracked by autograd)."""

    def __init__(self):
        super().__init__()
        self.ops = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        view = func.is_view or func.overloadpacket.__name__ == "_unsafe_view"
        self.ops += func.namespace == "aten" and not view
        return func(*args, **(kwargs or {}))


def kernels(code):
    """Inductor's output code: the kernels it wrote, and the library calls it makes."""
    written = re.findall(r"^(\w+) = async_compile\.\w+\(", code, flags=re.M)
    calls = re.findall(r"(extern_kernels\.\w+|torch\.ops\.aten\.\w+)(?:\.default)?\(",
                       code)
    return written, calls


with torch.no_grad(), CountOps() as eager_inference:
    block(x)
with CountOps() as eager_training:
    training(copy.deepcopy(block))(x, target)
print(f"eager: {eager_inference.ops} ops for inference, {eager_training.ops} for a "
      f"training step")
for name, codes in [("inference", inference_code), ("training", training_code)]:
    print(f"{name}, compiled: {len(codes)} graph{'s' * (len(codes) != 1)}")
    for code in codes:
        written, calls = kernels(code)
        print(f"  {len(written)} kernel{'s' * (len(written) != 1)}, "
              f"{len(calls)} library call{'s' * (len(calls) != 1)}")
        for kernel in written:
            print(f"    {kernel}")
# --8<-- [end:kernels]
results["eager_ops"] = {"inference": eager_inference.ops,
                        "training": eager_training.ops}
results["compiled_kernels"] = {
    name: [dict(zip(("kernels", "calls"), kernels(code))) for code in codes]
    for name, codes in [("inference", inference_code), ("training", training_code)]}


def sources(codes):
    """(name, source) of each kernel in Inductor's output code."""
    return [kernel for code in codes for kernel in re.findall(
        r"^(\w+) = async_compile\.\w+\(.*?r?'''\n(.*?)'''", code, re.M | re.S)]


# Inductor's kernel cache is keyed by the source: the training compile could reuse a
# kernel of the inference compile only if its source were the same.
built = {source for _, source in sources(inference_code)}
results["kernels_in_both"] = sorted(
    name for name, source in sources(training_code) if source in built)
results["kernel_sources"] = {"inference": len(sources(inference_code)),
                             "training": len(sources(training_code))}



def source_of(trace):
    """(line, the expression) a graph node came from, from the last frame of its
    stack trace, where Python marks the expression under the line with ^ and ~."""
    lines = trace.rstrip().splitlines()
    number = int(re.findall(r"line (\d+), in", trace)[-1])
    marks = lines[-1]
    if set(marks.strip()) <= set("^~"):
        start = len(marks) - len(marks.lstrip())
        return number, lines[-2][start:len(marks.rstrip())]
    return number, marks.strip()


# --8<-- [start:provenance]
def provenance(fn, *args):
    """Each kernel Inductor writes for fn: the nodes of Dynamo's graph it came from,
    and the line and expression each node recorded."""
    traces, found = {}, {}

    def keeping(gm, example_inputs):  # Dynamo's graph: each node has a stack trace
        traces.update({n.name: n.meta.get("stack_trace") for n in gm.graph.nodes})
        return compile_fx(gm, example_inputs)

    def save_output_code(code):  # Inductor calls this with the module it wrote
        written = re.findall(r"^(\w+) = async_compile\.\w+\(", code, flags=re.M)
        # Kernels are written in the order of the scheduler's fused nodes. A node's
        # origins are post-grad graph nodes; from_node names the Dynamo node each
        # came from.
        fused = [node for node in V.graph.scheduler.nodes if not node.is_extern()]
        for kernel, node in zip(written, fused):
            origins = set().union(*(part.node.origins for part in node.get_nodes()))
            found[kernel] = sorted({o.meta["from_node"][0].name for o in origins
                                    if o.op == "call_function"
                                    and o.meta.get("from_node")})

    torch._dynamo.reset()
    with mock.patch.object(GraphLowering, "save_output_code", save_output_code), \
            torch._inductor.config.patch(fx_graph_cache=False):
        torch.compile(fn, backend=keeping)(*args)
    return {kernel: sorted(((node, *source_of(traces[node])) for node in nodes),
                           key=lambda source: (source[1], source[0]))
            for kernel, nodes in found.items()}


with torch.no_grad():
    traced = provenance(block, x)
for kernel, sources in traced.items():
    print(kernel)
    for node, line, expression in sources:
        print(f"    {node:<13} line {line}: {expression}")
# --8<-- [end:provenance]
results["provenance"] = traced

# --8<-- [start:measure]
def measure(candidates, rounds=10):
    """The site's one method. `candidates` maps a name to (fn, *args). Each is warmed
    up and given a block of calls; then one block of each is timed in turn, round
    after round (A, B, A, B, ...), so a burst of load from elsewhere hits all alike.
    Returns name -> Measurement, per call. Timer runs on 1 thread unless told, so it
    is told: all of torch's threads. The recorder repeats the whole snippet in fresh
    processes, so the spread that judges a comparison includes theirs."""
    def work(fn, args):  # what was timed: "compiled f(float32[1024, 256], ...)"
        inner = getattr(fn, "_orig_mod", fn)
        compiled = inner is not fn or hasattr(fn, "_torchdynamo_orig_callable")
        kind = "compiled " if compiled else ""
        shapes = ", ".join(f"{str(a.dtype)[6:]}{list(a.shape)}" for a in args
                           if isinstance(a, torch.Tensor))
        return f"{kind}{getattr(inner, '__name__', type(inner).__name__)}({shapes})"

    timers = {name: benchmark.Timer("fn(*args)", globals={"fn": fn, "args": args},
                                    label=work(fn, args),
                                    num_threads=torch.get_num_threads())
              for name, (fn, *args) in candidates.items()}
    calls = {name: timer.blocked_autorange(min_run_time=0.2).number_per_run
             for name, timer in timers.items()}  # warm-up; picks calls per block
    blocks = {name: [] for name in timers}
    for _ in range(rounds):
        for name, timer in timers.items():
            blocks[name].append(timer.timeit(calls[name]))
    return {name: benchmark.Measurement.merge(b)[0] for name, b in blocks.items()}
# --8<-- [end:measure]


# --8<-- [start:timing]
def no_grad(model):
    def infer(x):
        with torch.no_grad():
            return model(x)
    return infer


def with_gradients(model):
    """An optimizer over a copy of the block whose gradients are kept, so that every
    step has work to do."""
    model = copy.deepcopy(model)
    F.mse_loss(model(x), target).backward()
    return torch.optim.AdamW(model.parameters(), lr=1e-3)


eager_optimizer, compiled_optimizer = with_gradients(block), with_gradients(block)
# foreach=False on a CPU (AdamW's default there): a loop over 12 parameters, about
# ten ops each; compiled, the whole update is one kernel.
candidates = {
    "inference_eager": (no_grad(block), x),
    "inference_compiled": (no_grad(torch.compile(block)), x),
    "training_eager": (training(copy.deepcopy(block)), x, target),
    "training_compiled": (torch.compile(training(copy.deepcopy(block))), x, target),
    "optimizer_eager": (eager_optimizer.step,),
    "optimizer_compiled": (torch.compile(compiled_optimizer.step),),
}
for fn, *args in candidates.values():
    fn(*args)  # compiles now: a compile in the timer's warm-up would size its blocks
timings = measure(candidates)
for name, m in timings.items():
    print(f"{name:<19} {m.median * 1e3:8.3f} ms median (IQR {m.iqr * 1e3:.3f} ms)")
# --8<-- [end:timing]
results["timing"] = timings


# --8<-- [start:split]
# Matrix products and attention are library calls, eager or compiled: Inductor calls
# the same kernels. Fusion can only shorten the rest.
LIBRARY = re.compile(r"aten::(addmm|mm|bmm|_scaled_dot_product_\w+)$")


def split(step, calls=5):
    """Milliseconds per step in library calls and in everything else (the profiler's
    self time: on a CPU, the host's; on a GPU, the device's)."""
    step(x, target)  # compiled: the first call compiles
    with profile() as prof:
        for _ in range(calls):
            step(x, target)
    own = {e.key: (e.self_device_time_total if device == "cuda"
                   else e.self_cpu_time_total) for e in prof.key_averages()}
    library = sum(t for key, t in own.items() if LIBRARY.match(key))
    return {"library": library / calls / 1e3,
            "rest": (sum(own.values()) - library) / calls / 1e3}


shares = {"eager": split(training(copy.deepcopy(block))),
          "compiled": split(torch.compile(training(copy.deepcopy(block))))}
for name, ms in shares.items():
    print(f"{name:<9} library calls {ms['library']:6.2f} ms, "
          f"the rest {ms['rest']:6.2f} ms per step")
# --8<-- [end:split]
results["split_ms"] = shares
results["library_percent"] = {name: 100 * ms["library"] / (ms["library"] + ms["rest"])
                              for name, ms in shares.items()}


# For the page's model, not a measurement: a training step's matrix products, counted
# by FlopCounterMode, at the H100 SXM's published FP32 rate without tensor cores
# (67 TFLOP/s, NVIDIA's H100 datasheet), over the ops eager runs in a step.
with FlopCounterMode(display=False) as counter:
    training(copy.deepcopy(block))(x, target)
matmul_flop = sum(count for op, count in counter.get_flop_counts()["Global"].items()
                  if str(op) in ("aten.mm", "aten.addmm", "aten.bmm"))
results["model"] = {"matmul_gflop": matmul_flop / 1e9,
                    "h100_fp32_us": matmul_flop / 67e12 * 1e6,
                    "us_per_eager_op": matmul_flop / 67e12 * 1e6 / eager_training.ops}


# --8<-- [start:cuda]
def efficient_attention(q, k, v, is_causal):
    attention = torch.ops.aten._scaled_dot_product_efficient_attention
    return attention(q, k, v, None, False, is_causal=is_causal)[0]


def cuda_code():
    """Inductor's output code for the block's forward on CUDA: compiled and run on a
    GPU; without one, written for an H100 from fake tensors (shapes, no data)."""
    seen = {}

    def save_output_code(code):  # Inductor calls this with the module it wrote
        seen["code"] = code
        raise CodeWritten  # stop before Triton would compile for a GPU

    # No cache (the code must be written) and no pool of compile workers.
    with contextlib.ExitStack() as stack:
        stack.enter_context(torch._inductor.config.patch(fx_graph_cache=False,
                                                         compile_threads=1))
        if device == "cuda":
            torch._dynamo.reset()
            with torch.no_grad():
                return run_and_get_code(torch.compile(block), x)[1][0]
        stack.enter_context(mock.patch.object(GraphLowering, "save_output_code",
                                              save_output_code))
        stack.enter_context(h100_stand_ins())
        # SDPA asks the device, in C++, which attention kernel fits; without a driver
        # the answer is the math path. Call the kernel an H100 picks for float32
        # instead: memory-efficient attention (flash attention takes fp16 and bf16).
        stack.enter_context(mock.patch.object(F, "scaled_dot_product_attention",
                                              efficient_attention))
        stack.enter_context(FakeTensorMode(allow_non_fake_inputs=True))
        with torch.device("cuda"):  # the same block, its weights fake CUDA tensors
            fake_block = Block()
        try:
            with torch.no_grad():
                compile_fx(torch.fx.symbolic_trace(fake_block),
                           [torch.empty(x.shape, device="cuda")])
        except Exception as error:
            if not stopped_by_us(error):
                raise
    return seen["code"]


try:
    written, calls = kernels(cuda_code())
    how = "run on a GPU" if device == "cuda" else "written for an H100, never run"
    print(f"{len(written)} Triton kernels, {len(calls)} library calls ({how})")
    for kernel in written:
        print(f"  {kernel}")
    cuda = {"kernels": written, "calls": calls}
except Exception as error:  # the private path broke: say why, go on
    print(f"no CUDA code here (torch {torch.__version__}): {first_line(error)}")
    cuda = {"reason": f"{type(error).__name__}: {first_line(error)}"}
# --8<-- [end:cuda]
results["cuda"] = cuda
