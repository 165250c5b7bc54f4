"""The findings table's workloads on an H100, H200 and B200: a model, not a measurement.

    python snippets/gpu_code/findings_model.py

For each comparison in the site's findings table, takes the same function at the same
sizes the CPU record timed (the functions are read from the timed snippets themselves),
and counts the bytes and FLOPs of every kernel each side would run on an NVIDIA GPU:
eager's from its ATen ops on meta tensors (one kernel per op), the compiled side's from
the CUDA code Inductor writes for it, made here without a GPU (fake CUDA tensors and
the H100 stand-ins of inductor_cuda_code.py). Each kernel's time at its roof comes from
published datasheet figures. Nothing runs on a GPU, and nothing here is timed.
"""

import ast
import contextlib
import copy
import io
import re
import sys
import types
from pathlib import Path
from unittest import mock

import torch
import torch.nn.functional as F
from torch._dynamo.backends.common import aot_autograd
from torch._functorch.aot_autograd import make_boxed_func
from torch._functorch.partitioners import min_cut_rematerialization_partition
from torch._inductor.compile_fx import compile_fx
from torch._inductor.decomposition import select_decomp_table
from torch._inductor.fx_passes import joint_graph
from torch._inductor.fx_utils import count_flops_fx
from torch._inductor.graph import GraphLowering
from torch._inductor.select_algorithm import AlgorithmSelectorCache, ExternKernelCaller
from torch._inductor.virtualized import V
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves
from torch.utils.flop_counter import flop_registry

results = {"device": "cpu"}  # a model: it runs no kernel, on any machine
gpu = {}  # inductor_cuda_code.py's H100 stand-ins, read below with the workloads

# --8<-- [start:specs]
# Published peak rates, per GPU, dense (no 2:4 sparsity), from NVIDIA's datasheets:
# H100 SXM5 and H200 SXM (H100 and H200 Tensor Core GPU datasheets), B200 (NVIDIA's
# current HGX B200 table; its March 2024 technical brief gave 80 TFLOP/s and 8 TB/s).
# Every workload here is float32: PyTorch runs a float32 matmul on CUDA cores
# (torch.backends.cuda.matmul.fp32_precision is "none" by default) and a float32
# convolution on TF32 tensor cores (cudnn.conv's is "tf32").
GPUS = {  # HBM bandwidth in TB/s; FP32 (CUDA cores) and TF32 (tensor cores) TFLOP/s
    "h100": {"name": "H100 SXM", "tb_per_s": 3.35, "fp32_tflops": 67,
             "tf32_tflops": 494},
    "h200": {"name": "H200 SXM", "tb_per_s": 4.8, "fp32_tflops": 67,
             "tf32_tflops": 494},
    "b200": {"name": "B200", "tb_per_s": 7.7, "fp32_tflops": 75, "tf32_tflops": 1100},
}
# --8<-- [end:specs]


# --8<-- [start:eager]
# _unsafe_view is a view torch does not tag as one: it shares storage, no kernel.
VIEWS_AND_ALLOCATIONS = {"empty", "empty_like", "empty_strided", "detach", "alias",
                         "lift_fresh", "_local_scalar_dense", "_unsafe_view"}
CONVOLUTIONS = {"convolution", "convolution_backward"}
# In-place ops that only write their tensor; every other one (add_, mul_, lerp_) reads
# it and writes it back, two passes, as Inductor counts its own in-place buffers.
WRITE_ONLY = {"copy_", "fill_", "zero_", "normal_", "uniform_", "bernoulli_", "random_"}


class EagerKernels(TorchDispatchMode):
    """One kernel per ATen op eager runs: the bytes of every tensor it reads and
    writes (twice for one it updates in place), and its FLOPs where
    torch.utils.flop_counter has a formula (matrix products, convolutions, attention).
    Element-wise FLOPs are left out on both sides: at FP32 rates they never decide a
    kernel's time (a handful per 4-byte value, where the ridge is about 20 FLOPs per
    byte)."""

    def __init__(self):
        super().__init__()
        self.kernels = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        name = func.overloadpacket.__name__
        if func.is_view or name in VIEWS_AND_ALLOCATIONS:
            return out  # no kernel: a new view, or memory nothing is written to
        tensors = {id(t): t for t in tree_leaves((args, kwargs, out))
                   if isinstance(t, torch.Tensor)}
        read_back = [t for t in tree_leaves(out) if isinstance(t, torch.Tensor)
                     and name.endswith("_") and name not in WRITE_ONLY]
        count = flop_registry.get(func.overloadpacket)
        self.kernels.append({
            "op": name,
            "bytes": sum(t.numel() * t.element_size()
                         for t in [*tensors.values(), *read_back]),
            "flops": count(*args, **kwargs, out_val=out) if count else 0,
            "tf32": name in CONVOLUTIONS})
        return out
# --8<-- [end:eager]


# --8<-- [start:compiled]
def as_ints(values):
    """Sizes as ints: a dynamic graph's symbolic sizes at the values they stand for."""
    return tuple(v.node.hint if isinstance(v, torch.SymInt) else v for v in values)


def graphs_of(fn, args, **compile_kwargs):
    """The graphs torch.compile hands to Inductor for fn(*args), forward and backward
    as AOTAutograd partitions them for Inductor, traced on meta tensors."""
    graphs = []

    def keep(gm, example_inputs):
        graphs.append((copy.deepcopy(gm), [
            (as_ints(t.shape), as_ints(t.stride()), t.dtype)
            if isinstance(t, torch.Tensor)
            else as_ints([t])[0] for t in example_inputs]))
        return make_boxed_func(gm.forward)  # runs on meta, so fn goes on to its end

    backend = aot_autograd(fw_compiler=keep, bw_compiler=keep,
                           partition_fn=min_cut_rematerialization_partition,
                           decompositions=select_decomp_table())
    torch._dynamo.reset()
    torch.compile(fn, backend=backend, **compile_kwargs)(*args)
    return graphs


# A template's fused epilogue is not benchmarked (that would launch kernels); torch 2.15
# renamed the setting.
FUSION_BENCHMARK = ("benchmark_template_fusion"
                    if hasattr(torch._inductor.config, "benchmark_template_fusion")
                    else "benchmark_epilogue_fusion")


def library_flops(node):
    """FLOPs of a library call the scheduler has no count for (attention falls back to
    ATen's kernel): torch.utils.flop_counter's formula for the op it calls."""
    op = getattr(node, "op_overload", None)
    origins = [o for o in node.origins if o.target == op]
    return (count_flops_fx(origins[0]) or 0) if origins else 0


def cuda_kernels(gm, inputs, config):
    """Inductor's CUDA code for one graph, and each kernel's bytes and FLOPs: its own
    accounting, written into each Triton kernel's metadata with benchmark_kernel
    (kernel_num_gb, kernel_flop), and the scheduler's for the library calls (cuBLAS,
    cuDNN) it makes between them."""
    for node in gm.graph.nodes:  # meta tensors become CUDA ones
        if str(node.kwargs.get("device")) == "meta":
            node.kwargs = {**node.kwargs, "device": torch.device("cuda", 0)}
        node.meta.pop("val", None)  # a meta tensor: Inductor traces a CUDA one again
    gm.recompile()
    seen = {}

    def save_output_code(code):  # Inductor calls this with the module it wrote
        seen["code"] = code
        seen["library"] = [
            {"op": str(node.node.python_kernel_name),
             "bytes": node.get_read_write_buffers_sizes(),
             "flops": node.estimate_flops() or library_flops(node.node),
             "tf32": "convolution" in str(node.node.python_kernel_name)}
            for node in V.graph.scheduler.nodes
            if type(node).__name__ == "ExternKernelSchedulerNode"
            and type(node.node).__name__ != "MultiOutput"]  # a tuple's item: no kernel
        raise gpu["CodeWritten"]  # stop before Triton compiles it for a GPU

    def a_template_wins(self, choices, *args, **kwargs):  # max-autotune's benchmark
        return lambda choices: {c: 2.0 if isinstance(c, ExternKernelCaller) else 1.0
                                for c in choices}

    with contextlib.ExitStack() as stack:
        stack.enter_context(gpu["h100_stand_ins"]())
        stack.enter_context(torch._inductor.config.patch({
            "benchmark_kernel": True, "fx_graph_cache": False, "compile_threads": 1,
            "autotune_local_cache": False, FUSION_BENCHMARK: False, **config}))
        stack.enter_context(mock.patch.object(GraphLowering, "save_output_code",
                                              save_output_code))
        stack.enter_context(mock.patch.object(AlgorithmSelectorCache,
                                              "make_benchmark_fn", a_template_wins))
        # Inductor folds a tensor of one value by creating it on the device: none here,
        # so that pass is skipped (it changes which kernel fills the tensor, not bytes).
        stack.enter_context(mock.patch.object(
            joint_graph, "constant_fold_uniform_value", lambda gm: None))
        with FakeTensorMode():
            fake = [torch.empty_strided(*spec[:2], dtype=spec[2], device="cuda")
                    if isinstance(spec, tuple) else spec for spec in inputs]
            try:
                compile_fx(gm, fake)
            except Exception as error:
                if not gpu["stopped_by_us"](error):
                    raise
    if "code" not in seen:
        return []  # a graph with nothing to compute (it returns an input): no code
    # kernel_flop is the FLOPs of a kernel's origin op: for a convolution's bias, ReLU
    # (a pointwise kernel), the convolution's, which its library call counts already.
    # Only a template (triton_tem_*, a matmul) does matrix FLOPs in a Triton kernel.
    kernels = [{"op": name, "bytes": round(float(gb) * 1e9),
                "flops": int(flop or 0) if name.startswith("triton_tem") else 0,
                "tf32": False}
               for name, gb, flop in re.findall(
                   r"'kernel_name': '(\w+)'.*?'kernel_num_gb': ([\d.e+-]+)"
                   r"(?:, 'kernel_flop': (\d+))?", seen["code"])]
    return kernels + seen["library"]
# --8<-- [end:compiled]


# --8<-- [start:roof]
def roof_us(kernels, spec):
    """Each kernel at its roof: the time to move its bytes at the HBM bandwidth, or
    to do its FLOPs at the peak rate, whichever is longer; summed over the kernels."""
    return sum(max(k["bytes"] / (spec["tb_per_s"] * 1e12),
                   k["flops"] / (spec["tf32_tflops" if k["tf32"] else "fp32_tflops"]
                                 * 1e12)) for k in kernels) * 1e6
# --8<-- [end:roof]


# The workloads: the timed snippets' own code, read from their files (so a notebook
# of the guide, which shows only the specs and the roof above, needs none of it).
SNIPPETS = Path(__file__).resolve().parents[1]


def borrow(snippet, names):
    """The named top-level functions, classes and assignments of snippets/<snippet>,
    with its imports, run without the rest of it: the timed snippets' own code."""
    tree = ast.parse((SNIPPETS / snippet).read_text())
    kept = [node for node in tree.body
            if isinstance(node, (ast.Import, ast.ImportFrom))
            or (isinstance(node, (ast.FunctionDef, ast.ClassDef))
                and node.name in names)
            or (isinstance(node, ast.Assign)
                and {getattr(t, "id", None) for t in node.targets} & names)]
    # A module of its own, importable by name: Dynamo (torch 2.13, 2.11) imports the
    # module a traced class comes from.
    module = types.ModuleType("borrowed_" + re.sub(r"\W", "_", snippet))
    module.device = "cpu"
    sys.modules[module.__name__] = module
    exec(compile(ast.Module(kept, type_ignores=[]), str(SNIPPETS / snippet), "exec"),
         vars(module))
    return vars(module)


gpu |= borrow("gpu_code/inductor_cuda_code.py",
              {"H100", "h100_stand_ins", "CodeWritten", "stopped_by_us"})


def meta(*shape):
    return torch.empty(*shape, device="meta")


def on_meta(module):
    return module.to("meta").eval()


def work(fn, args, said):
    """The label the timed snippets' measure() gives what it timed: said is how it
    names the side (True: "compiled", or the JAX snippets' "jax", "jax.jit")."""
    shapes = ", ".join(f"{str(a.dtype)[6:]}{list(a.shape)}" for a in args
                       if isinstance(a, torch.Tensor))
    name = getattr(fn, "__name__", type(fn).__name__)
    kind = said if isinstance(said, str) else "compiled" if said else ""
    return f"{kind} {name}({shapes})".lstrip()


def side(fn, args, compiled=False, config=None, said=None,
         **compile_kwargs):
    """The kernels one side of a comparison runs on a GPU, by the model. `said`: how the
    timed label names the side, where not as compiled is (a wrapper can hide it)."""
    said = compiled if said is None else said
    if compiled:
        try:
            kernels = [k for gm, inputs in graphs_of(fn, args, **compile_kwargs)
                       for k in cuda_kernels(gm, inputs, config or {})]
        except Exception as error:  # private internals: a release may not manage it
            message = str(error).strip().splitlines()[0][:160]
            print(f"{work(fn, args, said)}: not modelled ({message})")
            return {"work": work(fn, args, said),
                    "error": f"{type(error).__name__}: {message}"}
    else:
        with EagerKernels() as eager:
            fn(*args)
        kernels = eager.kernels
    entry = {"work": work(fn, args, said), "kernels": kernels,
             "bytes": sum(k["bytes"] for k in kernels),
             "flops": sum(k["flops"] for k in kernels)}
    entry |= {f"{key}_us": roof_us(kernels, spec) for key, spec in GPUS.items()}
    return entry


def no_grad(fn):
    def wrapped(*args):
        with torch.no_grad():
            return fn(*args)
    wrapped.__name__ = getattr(fn, "__name__", type(fn).__name__)
    return wrapped


# The workloads, from the timed snippets, at the sizes their CPU records timed.
fusion = borrow("optimizations/fusion.py", {"complex_activation",
                                            "complex_activation_out",
                                            "complex_activation_into"})
activation = fusion["complex_activation"]
n = 32 * 2**20
x, y = meta(n), meta(n)
outputs = [meta(n) for _ in range(6)]
timed = {"optimizations/fusion.py": {
    "timing.eager": side(activation, (x, y)),
    "timing.compiled": side(activation, (x, y), compiled=True),
    "timing_out.eager_out": side(fusion["complex_activation_out"], (x, y, outputs)),
    "timing_out.compiled_out": side(fusion["complex_activation_into"],
                                    (x, y, outputs[0]), compiled=True),
}}
timed["optimizations/fusion.py"] |= {
    "timing_out.eager": timed["optimizations/fusion.py"]["timing.eager"],
    "timing_out.compiled": timed["optimizations/fusion.py"]["timing.compiled"]}
# JAX's XLA code for a GPU cannot be made here: the same function in torch ops, eager
# against Inductor's kernels, stands in for eager jax.numpy against jax.jit.
timed["jax/complex_activation.py"] = {
    "timing.eager": side(activation, (x, y), said="jax"),
    "timing.jit": side(activation, (x, y), compiled=True, said="jax.jit")}


def mlp(x, gating0, gating1, linear):  # jax/dead_code.py's mlp, in torch ops
    h = x @ gating0
    unused = x @ gating1  # noqa: F841  (computed, then never read)
    h = torch.relu(h)
    return h @ linear


dead = (meta(64, 256), meta(256, 512), meta(256, 512), meta(512, 256))
timed["jax/dead_code.py"] = {
    "timing.eager": side(mlp, dead, said="jax"),
    "timing.jit": side(mlp, dead, compiled=True, said="jax.jit")}

relayout = borrow("optimizations/relayout.py", {"net", "dtype"})["net"]
net, image = on_meta(relayout), meta(2, 3, 32, 32)
timed["optimizations/relayout.py"] = {
    "timing.kept": side(no_grad(net), (image,), compiled=True,
                        config={"layout_optimization": False}),
    "timing.relayout": side(no_grad(net), (image,), compiled=True)}

linear_relu = borrow("graph_mode/eager_cannot_fuse.py", {"linear_relu"})["linear_relu"]
layer = (meta(1024, 256), meta(256, 1024), meta(1024))
timed["graph_mode/eager_cannot_fuse.py"] = {
    "timing.eager": side(linear_relu, layer),
    "timing.compiled": side(linear_relu, layer, compiled=True)}

mlps = borrow("graph_mode/graph_breaks.py", {"ChattyMLP", "QuietMLP"})
with contextlib.redirect_stdout(io.StringIO()):  # the print that breaks the graph
    timed["graph_mode/graph_breaks.py"] = {
        "timing.compiled_no_print": side(no_grad(on_meta(mlps["QuietMLP"](64))),
                                         (meta(16, 64),), compiled=True),
        "timing.compiled_print": side(no_grad(on_meta(mlps["ChattyMLP"](64))),
                                      (meta(16, 64),), compiled=True)}

simple = on_meta(borrow("graph_mode/compile_time.py", {"SimpleModel"})["SimpleModel"]())
timed["graph_mode/compile_time.py"] = {
    "timing.eager": side(no_grad(simple), (meta(32, 512),)),
    "timing.compiled": side(no_grad(simple), (meta(32, 512),), compiled=True)}

small = borrow("graph_mode/when_not_to_compile.py", {"bias_gelu_residual", "tiny"})
large = (meta(16384, 1024), meta(1024), meta(16384, 1024))
timed["graph_mode/when_not_to_compile.py"] = {
    "timing.eager": side(small["bias_gelu_residual"], large),
    "timing.compiled": side(small["bias_gelu_residual"], large, compiled=True),
    "tiny.eager": side(small["tiny"], (meta(8),)),
    "tiny.compiled": side(small["tiny"], (meta(8),), compiled=True)}

block_code = borrow("graph_mode/transformer_block.py", {"Block", "training"})
block = block_code["Block"]().to("meta")
tokens, target = meta(8, 128, 256), meta(8, 128, 256)
infer = no_grad(block)
infer.__name__ = "infer"


def efficient_attention(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False,
                        scale=None):
    """What SDPA runs for float32 on an H100: the memory-efficient kernel (flash takes
    16-bit inputs only). On meta tensors SDPA would pick its math path instead."""
    return torch.ops.aten._scaled_dot_product_efficient_attention(
        q, k, v, attn_mask, torch.is_grad_enabled(), dropout_p, is_causal,
        scale=scale)[0]


def optimizer_of(model):
    """transformer_block.py's with_gradients: AdamW over a copy with gradients. On
    meta tensors AdamW loops over the parameters (foreach=False, its default off CUDA,
    and the record's on the CPU); on CUDA its default would group them (foreach)."""
    model = copy.deepcopy(model)
    F.mse_loss(model(tokens), target).backward()
    return torch.optim.AdamW(model.parameters(), lr=1e-3)


with mock.patch.object(F, "scaled_dot_product_attention", efficient_attention):
  timed["graph_mode/transformer_block.py"] = {
    "timing.inference_eager": side(infer, (tokens,)),
    "timing.inference_compiled": side(infer, (tokens,), compiled=True, said=False),
    "timing.training_eager": side(block_code["training"](copy.deepcopy(block)),
                                  (tokens, target)),
    "timing.training_compiled": side(block_code["training"](copy.deepcopy(block)),
                                     (tokens, target), compiled=True),
    "timing.optimizer_eager": side(optimizer_of(block).step, ()),
    "timing.optimizer_compiled": side(optimizer_of(block).step, (), compiled=True)}

simple_fn = borrow("dissecting/bench_small_matmul_softmax.py",
                   {"simple_fn"})["simple_fn"]
sizes = {n: (meta(n, n), meta(n, n)) for n in (64, 100, 1024)}
timed["dissecting/bench_small_matmul_softmax.py"] = {
    "timing.eager": side(simple_fn, sizes[100]),
    "timing.compiled": side(simple_fn, sizes[100], compiled=True)}
timed["dissecting/bench_size_sweep.py"] = {
    "timing.eager.0": side(simple_fn, sizes[64]),
    "timing.compiled.0": side(simple_fn, sizes[64], compiled=True, dynamic=False),
    "timing.eager.4": side(simple_fn, sizes[1024]),
    "timing.compiled.4": side(simple_fn, sizes[1024], compiled=True, dynamic=False)}
autotune = {"max_autotune": True, "max_autotune_gemm": True,
            "coordinate_descent_tuning": True}
timed["dissecting/bench_compile_modes.py"] = {
    "timing.100.default": side(simple_fn, sizes[100], compiled=True, dynamic=False),
    "timing.100.max-autotune-no-cudagraphs": side(simple_fn, sizes[100], compiled=True,
                                                  config=autotune, dynamic=False)}

frozen = on_meta(torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.ReLU()))


def default(x):  # regimes.py compiles the layer through a function of its own per mode
    return frozen(x)


def max_autotune(x):
    return frozen(x)


timed["dissecting/regimes.py"] = {
    "autotune.timing.default": side(no_grad(default), (meta(1024, 256),),
                                    compiled=True),
    "autotune.timing.max_autotune": side(no_grad(max_autotune), (meta(1024, 256),),
                                         compiled=True, config=autotune)}

scale_rows = borrow("dissecting/dynamic_shapes.py", {"scale_rows"})["scale_rows"]
timed["dissecting/dynamic_shapes.py"] = {
    "timing.static": side(scale_rows, (meta(64, 1024),), compiled=True, dynamic=False),
    "timing.dynamic": side(scale_rows, (meta(64, 1024),), compiled=True, dynamic=True)}

results["gpus"] = GPUS
results["timed"] = timed
for snippet, sides in timed.items():
    for key, entry in sides.items():
        if "error" in entry:
            continue
        print(f"{snippet} {key}: {entry['work']}, {len(entry['kernels'])} kernels, "
              f"{entry['bytes']:,} bytes, {entry['flops']:,} FLOPs; at the roof "
              + ", ".join(f"{GPUS[g]['name']} {entry[f'{g}_us']:.2f} us" for g in GPUS))
