"""TorchInductor's CUDA code (Triton kernels) for three chapters' examples, anywhere.

    python snippets/gpu_code/inductor_cuda_code.py

On a GPU, each example is compiled and run, and Inductor's output code is kept as it
generated it. Without a GPU, Inductor still writes the same code: the examples are
compiled with fake CUDA tensors, for an H100 target, and Inductor is stopped once the
code exists, before anything would need a GPU. That path uses Inductor's private
internals and may break with any torch release: the snippet then prints why and goes on.
"""

import contextlib
import re
import types
import warnings
from unittest import mock

import torch
from torch._inductor.compile_fx import compile_fx
from torch._inductor.graph import GraphLowering
from torch._inductor.virtualized import V
from torch._subclasses.fake_tensor import FakeTensorMode

device = "cuda" if torch.cuda.is_available() else "cpu"
results = {"device": device}


# --8<-- [start:examples]
def complex_activation(x, y):  # Eager mode: six ops, six kernels in eager
    return torch.relu((torch.sin(x) * torch.cos(y) + x) * y)


def linear_relu(x, w, b):  # Graph mode: matmul, bias, relu
    return torch.relu(x @ w + b)


def matmul_softmax(x, y):  # TorchInductor page: a matmul, then softmax per row
    return torch.softmax(x @ y, dim=1)


N = 64 * 2**20  # the Eager mode chapter's GPU size: 256 MiB per fp32 tensor
EXAMPLES = {  # the function, its inputs' shapes and their dtype, on the GPU
    "complex_activation": (complex_activation, [(N,), (N,)], torch.float32),
    "linear_relu": (linear_relu, [(8192, 512), (512, 8192), (8192,)], torch.bfloat16),
    "matmul_softmax": (matmul_softmax, [(100, 100), (100, 100)], torch.float32),
}
# --8<-- [end:examples]


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


# --8<-- [start:generate]
def generate(fn, shapes, dtype):
    """Inductor's output code for fn on CUDA inputs, and the bytes each kernel moves."""
    seen = {}

    def save_output_code(code):  # Inductor calls this with the module it wrote
        seen["code"] = code
        # Inductor's own traffic estimate: bytes each scheduled kernel reads and
        # writes (what TORCH_LOGS=inductor_metrics reports as num_bytes_accessed).
        seen["nodes"] = [(type(node).__name__,
                          getattr(node.node, "python_kernel_name", None),
                          node.get_read_write_buffers_sizes())
                         for node in V.graph.scheduler.nodes]
        if device != "cuda":
            raise CodeWritten  # no GPU: stop before Triton compiles it for one

    patches = [torch._inductor.config.patch(fx_graph_cache=False, compile_threads=1),
               mock.patch.object(GraphLowering, "save_output_code", save_output_code)]
    with contextlib.ExitStack() as stack:
        for patch in patches:
            stack.enter_context(patch)
        if device == "cuda":  # a GPU: compile with torch.compile, run, compare
            inputs = [torch.randn(shape, device="cuda", dtype=dtype)
                      for shape in shapes]
            out = torch.compile(fn)(*inputs)
            seen["max_error"] = (out - fn(*inputs)).abs().max().float().item()
        else:  # no GPU: fake CUDA tensors (shapes, no data) and the stand-ins
            stack.enter_context(h100_stand_ins())
            with FakeTensorMode():
                inputs = [torch.empty(shape, device="cuda", dtype=dtype)
                          for shape in shapes]
                try:
                    compile_fx(torch.fx.symbolic_trace(fn), inputs)
                except Exception as error:
                    if not stopped_by_us(error):
                        raise
    return seen
# --8<-- [end:generate]


def normalise(code):
    """Drop the comments that hold cache paths; replace hashes with a placeholder."""
    code = re.sub(r"^# kernel path: .*\n", "", code, flags=re.MULTILINE)
    code = re.sub(r"'backend_hash': '\w+'", "'backend_hash': '<hash>'", code)
    return re.sub(r"\b[0-9a-f]{32,}\b", "<hash>", code)


def kernel_source(code, name):
    """The @triton.jit function of kernel `name` in the output code."""
    source = code.split(f"{name} = async_compile.triton('{name}'", 1)[1]
    return source[source.index("@triton.jit"):].split("'''", 1)[0].rstrip()


LABEL = ("generated for an H100 target on a machine without a GPU; never run"
         if device != "cuda" else
         f"generated and run on an {torch.cuda.get_device_name()}")
generated = {"available": False, "label": LABEL}
output_code = {}
try:
    for name, (fn, shapes, dtype) in EXAMPLES.items():
        seen = generate(fn, shapes, dtype)
        code = output_code[name] = normalise(seen["code"])
        kernels = re.findall(r"^(\w+) = async_compile\.triton\('", code, flags=re.M)
        body = code[code.index("def call("):]
        launches = re.findall(r"^\s+(extern_kernels\.\w+|\w+\.run)\(", body,
                              flags=re.M)
        # Scheduler nodes and kernels come in one order; extern nodes call a library.
        generated_names = iter(kernels)
        per_kernel = {}
        for kind, extern_name, num_bytes in seen["nodes"]:
            extern = kind == "ExternKernelSchedulerNode"
            key = extern_name if extern else next(generated_names)
            per_kernel[key] = per_kernel.get(key, 0) + num_bytes
        generated[name] = {
            "kernels": kernels, "launches": launches,
            "num_bytes_accessed": sum(b for _, _, b in seen["nodes"]),
            "bytes_per_kernel": per_kernel,
            "sources": {k: kernel_source(code, k) for k in kernels},
            "file": f"{name}.output_code.py",
            "max_error": seen.get("max_error"),
        }
    generated["available"] = True
except Exception as error:  # the private path broke: say why, keep going
    first_line = (str(error).strip().splitlines() or [""])[0]
    reason = f"{type(error).__name__}: {first_line}"
    generated["reason"] = (f"Inductor's CUDA code could not be generated here "
                           f"(torch {torch.__version__}): {reason}")
results["inductor_cuda"] = generated
results["files"] = {f"{name}.output_code.py": code
                    for name, code in output_code.items()}
results["n"] = N
results["stand_in"] = {"name": H100.name,
                       "compute_capability": f"{H100.major}.{H100.minor}",
                       "multi_processor_count": H100.multi_processor_count}
results["torch"] = torch.__version__


def unavailable():
    print(results["inductor_cuda"]["reason"])


# --8<-- [start:kernels]
if generated["available"]:
    print(LABEL)
    for name in EXAMPLES:
        example = generated[name]
        print(f"{name}: call() launches {len(example['launches'])}: "
              f"{', '.join(example['launches'])}")
        for kernel, num_bytes in example["bytes_per_kernel"].items():
            print(f"    {kernel:<44} {num_bytes:>12,} bytes")
else:
    unavailable()
# --8<-- [end:kernels]

# --8<-- [start:activation]
if generated["available"]:
    example = generated["complex_activation"]
    (kernel,) = example["kernels"]  # six ops, one kernel
    print(f"# {LABEL}")
    print(example["sources"][kernel])
    print(f"# num_bytes_accessed: {example['num_bytes_accessed']:,} "
          f"= 3 x {N:,} x 4 bytes: {example['num_bytes_accessed'] == 3 * N * 4}")
else:
    unavailable()
# --8<-- [end:activation]

# --8<-- [start:linear_relu]
if generated["available"]:
    example = generated["linear_relu"]
    code = output_code["linear_relu"]
    call = code[code.index("def call("):code.index("return (", code.index("def call("))]
    print(f"# {LABEL}")
    print("\n".join("    " * (line.startswith(" ")) + line.strip()
                    for line in call.splitlines()
                    if re.search(r"def call|extern_kernels|\.run\(|empty_strided|= buf",
                                 line)))
    for kernel in example["kernels"]:
        print(example["sources"][kernel])
else:
    unavailable()
# --8<-- [end:linear_relu]

# --8<-- [start:matmul_softmax]
if generated["available"]:
    example = generated["matmul_softmax"]
    print(f"# {LABEL}")
    for kernel in example["kernels"]:
        print(example["sources"][kernel])
else:
    unavailable()
# --8<-- [end:matmul_softmax]
