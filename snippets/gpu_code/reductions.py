"""Persistent and looped reductions: Inductor's Triton kernel for a row-wise softmax
as the rows grow, written for an H100.

    python snippets/gpu_code/reductions.py

Softmax reduces each row twice (its max, then the sum of exponentials) and writes
it once. Inductor writes one kernel for it either way; how the kernel walks a row
depends on the row's length: in one piece held in registers (a persistent
reduction, triton_per_), or in blocks, in a loop (a looped reduction, triton_red_).
The snippet compiles softmax for rows of several lengths and keeps each kernel's
kind, its loops and its loads, then the same row both ways, then the kind Inductor
picks for a sum down columns and for rows whose length is dynamic. On a GPU it compiles
and runs; without one, the code is written from fake CUDA tensors for an H100 target
and Inductor is stopped before Triton compiles it. That path uses Inductor's private
internals and may break with any torch release: the snippet then prints why.
"""

import contextlib
import re
import types
import warnings
from unittest import mock

import torch
from torch._dynamo.source import ConstantSource
from torch._inductor.compile_fx import compile_fx
from torch._inductor.graph import GraphLowering
from torch._inductor.utils import run_and_get_code
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.symbolic_shapes import DimDynamic, ShapeEnv

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


def first_line(error):
    return (str(error).strip().splitlines() or [""])[0]


# --8<-- [start:softmax]
def softmax(x):  # per row: a max, a sum of exponentials, then a division
    return torch.softmax(x, dim=-1)
# --8<-- [end:softmax]


# --8<-- [start:written_code]
def written_code(fn, shape, dynamic=False, **options):
    """Inductor's output code for fn on one float32 CUDA input of this shape (every
    size symbolic if dynamic): compiled and run on a GPU; without one, written for an
    H100 from a fake tensor."""
    seen = {}
    # No cache (the code must be written) and no pool of compile workers.
    options = {"fx_graph_cache": False, "compile_threads": 1, **options}
    with contextlib.ExitStack() as stack:
        stack.enter_context(torch._inductor.config.patch(options))
        if device == "cuda":  # each shape compiled on its own
            torch._dynamo.reset()
            x = torch.randn(shape, device="cuda")
            return run_and_get_code(torch.compile(fn, dynamic=dynamic), x)[1][0]

        def save_output_code(code):  # Inductor calls this with the module it wrote
            seen["code"] = code
            raise CodeWritten  # stop before Triton would compile for a GPU

        stack.enter_context(mock.patch.object(GraphLowering, "save_output_code",
                                              save_output_code))
        stack.enter_context(h100_stand_ins())
        # Dynamic: each size a symbol, as torch.compile(dynamic=True) would make it.
        env = ShapeEnv() if dynamic else None
        if dynamic:
            shape = [env.create_symintnode(env.create_symbol(
                n, source=ConstantSource(f"size{i}"), dynamic_dim=DimDynamic.DYNAMIC),
                hint=n) for i, n in enumerate(shape)]
        with FakeTensorMode(shape_env=env):
            try:
                compile_fx(torch.fx.symbolic_trace(fn),
                           [torch.empty(shape, device="cuda")])
            except Exception as error:
                if not stopped_by_us(error):
                    raise
    return seen["code"]
# --8<-- [end:written_code]


def kernel(code):
    """The one Triton kernel in the output code: its name, the heuristics that launch
    it (persistent_reduction or reduction), and its source."""
    (name,) = re.findall(r"^(\w+) = async_compile\.triton\('", code, flags=re.M)
    source = code.split(f"{name} = async_compile.triton('{name}'", 1)[1]
    launcher = re.search(r"@triton_heuristics\.(\w+)\(", source).group(1)
    source = source[source.index("@triton.jit"):].split("'''", 1)[0]
    return name, launcher, source.rstrip()


def anatomy(source):
    """What the kernel does with a row: its loops over the row, and its loads."""
    return {"loops": len(re.findall(r"^\s+for r0_offset in", source, flags=re.M)),
            "loads": len(re.findall(r"tl\.load\(", source))}


# --8<-- [start:sweep]
ROWS = 4096
kinds, reason = {}, None
try:
    for length in [256, 512, 1024, 2048, 8192, 32768]:
        name, launcher, source = kernel(written_code(softmax, (ROWS, length)))
        kinds[length] = {"kernel": name, "launcher": launcher, **anatomy(source)}
        loops, loads = kinds[length]["loops"], kinds[length]["loads"]
        print(f"{length:>6}: {name}  {loops} loop{'s' * (loops != 1)}, "
              f"{loads} load{'s' * (loads != 1)}")
except Exception as error:  # the private path broke: say why, go on
    reason = f"no CUDA code here (torch {torch.__version__}): {first_line(error)}"
    print(reason)
# --8<-- [end:sweep]
results["kinds"], results["reason"] = kinds, reason
results["longest_persistent"] = max(
    (length for length, kind in kinds.items() if kind["launcher"] != "reduction"),
    default=None)


# --8<-- [start:other_rows]
# The switch above is the rule for a reduction over the innermost dimension. A sum
# down the columns (an outer reduction) has a lower limit, and a row whose length is
# a symbol (a dynamic shape) cannot be shown to be short enough.
def column_sums(x):  # a sum over the rows, for each column
    return x.sum(dim=0)


others = {}
if kinds:
    for label, fn, shape, dynamic in [
            ("column sums of 64 rows", column_sums, (64, 512), False),
            ("column sums of 65 rows", column_sums, (65, 512), False),
            ("softmax of rows of 512", softmax, (ROWS, 512), False),
            ("softmax of rows of 512, dynamic", softmax, (ROWS, 512), True)]:
        name, launcher, source = kernel(written_code(fn, shape, dynamic=dynamic))
        others[label] = {"kernel": name, "launcher": launcher, "shape": shape,
                         "dynamic": dynamic, **anatomy(source)}
        loops = others[label]["loops"]
        print(f"{label:<32} {name}  {loops} loop{'s' * (loops != 1)}")
else:
    print(reason)
# --8<-- [end:other_rows]
results["others"] = others


# --8<-- [start:both_ways]
# One row length, both ways: Inductor's choice, and its looped kernel forced by
# turning persistent reductions off.
LENGTH = 1024
both = {}
if kinds:
    for way, persistent in [("persistent", True), ("looped", False)]:
        code = written_code(softmax, (ROWS, LENGTH),
                            **{"triton.persistent_reductions": persistent})
        name, launcher, source = kernel(code)
        both[way] = {"kernel": name, "launcher": launcher, "source": source,
                     **anatomy(source)}
# --8<-- [end:both_ways]
results["both_ways"] = both
results["rows"], results["length"] = ROWS, LENGTH


def show(way):
    if way in both:
        print(f"# launched by triton_heuristics.{both[way]['launcher']}")
        print(both[way]["source"])
    else:
        print(reason)


# --8<-- [start:persistent]
show("persistent")
# --8<-- [end:persistent]

# --8<-- [start:looped]
show("looped")
# --8<-- [end:looped]

