"""Bytes, FLOPs and time bounds of the chapters' examples on an H100 and H200: a model.

    python snippets/gpu_code/memory_model.py

Traces each example on meta tensors (shapes, no data: nothing is computed, so the GPU
sizes of the chapters fit on any machine), counts the bytes each eager op moves and the
bytes a fully fused version would move, counts FLOPs with torch.utils.flop_counter, and
turns them into lower bounds on time from the published bandwidth and peak rate of an
H100 SXM and an H200. The result is a model from specifications, not a measurement. On
a GPU, the examples are also timed, and the measurements are placed beside the model.
"""

import ast

import torch
from torch._dynamo.utils import get_compilation_metrics
from torch.fx.experimental.proxy_tensor import make_fx
from torch.utils import benchmark
from torch.utils.flop_counter import FlopCounterMode

device = "cuda" if torch.cuda.is_available() else "cpu"
results = {"device": device}

# --8<-- [start:specs]
# Published peak rates from NVIDIA's datasheets (SXM parts), not measurements.
# Tensor-core rates are dense (without 2:4 sparsity); fp32 is the CUDA-core rate.
SPECS = {
    "H100 SXM": {"bandwidth_gbps": 3350,  # HBM3, 3.35 TB/s
                 "tflops": {torch.bfloat16: 989, torch.float16: 989,
                            torch.float32: 67}},
    "H200 SXM": {"bandwidth_gbps": 4800,  # HBM3e, 4.8 TB/s; the same GH100 compute
                 "tflops": {torch.bfloat16: 989, torch.float16: 989,
                            torch.float32: 67}},
}
# --8<-- [end:specs]


# --8<-- [start:examples]
def complex_activation(x, y):  # Eager mode: six element-wise ops
    return torch.relu((torch.sin(x) * torch.cos(y) + x) * y)


def linear_relu(x, w, b):  # Graph mode: matmul, bias, relu as three eager ops
    return torch.relu(x @ w + b)


def matmul_softmax(x, y):  # TorchInductor page and Benchmarking: matmul, softmax
    return torch.softmax(x @ y, dim=1)


# The chapters' GPU sizes: shapes only, so they cost nothing here.
EXAMPLES = {
    "complex_activation": (complex_activation, [(64 * 2**20,), (64 * 2**20,)],
                           torch.float32),
    "linear_relu": (linear_relu, [(8192, 512), (512, 8192), (8192,)], torch.bfloat16),
    "matmul_softmax_100": (matmul_softmax, [(100, 100), (100, 100)], torch.float32),
    "matmul_softmax_4096": (matmul_softmax, [(4096, 4096), (4096, 4096)],
                            torch.float32),
}
# --8<-- [end:examples]


# --8<-- [start:count]
# FlopCounterMode has formulas for matrix products, convolutions and attention, and
# none for element-wise ops or reductions. For those we count one operation per output
# element, five for softmax (max, subtract, exp, sum, divide); sin and cos cost many
# instructions each, so this is a floor.
PER_ELEMENT = {"_softmax": 5}


def count(fn, shapes, dtype):
    """Per eager op: bytes read and written, and FLOPs; plus the fused totals."""
    inputs = [torch.empty(shape, dtype=dtype, device="meta") for shape in shapes]
    graph = make_fx(fn)(*inputs).graph  # the aten ops eager runs, one kernel each
    ops = []
    for node in graph.nodes:
        if node.op != "call_function" or node.target.is_view:
            continue  # views move no bytes
        tensors = {a.name: a.meta["val"] for a in node.all_input_nodes}
        tensors[node.name] = node.meta["val"]
        args = [torch.empty(a.meta["val"].shape, dtype=a.meta["val"].dtype,
                            device="meta") if isinstance(a, torch.fx.Node) else a
                for a in node.args]
        with FlopCounterMode(display=False) as counter:
            node.target(*args, **node.kwargs)
        flops = counter.get_total_flops() or node.meta["val"].numel() * PER_ELEMENT.get(
            node.target.__name__.split(".")[0], 1)
        num_bytes = sum(t.numel() * t.element_size() for t in tensors.values())
        ops.append({"op": node.target.__name__.split(".")[0], "bytes": num_bytes,
                    "flops": flops})
    # Fused: each input read once, each output written once, nothing in between.
    outside = [n.meta["val"] for n in graph.nodes if n.op == "placeholder"]
    outside += [graph.output_node().args[0].meta["val"]]
    fused_bytes = sum(t.numel() * t.element_size() for t in outside)
    return ops, fused_bytes
# --8<-- [end:count]


# --8<-- [start:bounds]
def bound_us(num_bytes, flops, spec, dtype):
    """The least time a kernel can take: moving its bytes, or doing its FLOPs."""
    return max(num_bytes / (spec["bandwidth_gbps"] * 1e9),
               flops / (spec["tflops"][dtype] * 1e12)) * 1e6


model = {}
for name, (fn, shapes, dtype) in EXAMPLES.items():
    ops, fused_bytes = count(fn, shapes, dtype)
    flops = sum(op["flops"] for op in ops)
    eager_bytes = sum(op["bytes"] for op in ops)
    entry = {"dtype": str(dtype).removeprefix("torch."), "ops": ops, "flops": flops,
             "eager_bytes": eager_bytes, "fused_bytes": fused_bytes,
             "eager_intensity": flops / eager_bytes,
             "fused_intensity": flops / fused_bytes}
    for gpu, spec in SPECS.items():
        key = gpu.split()[0].lower()  # "h100", "h200"
        # Eager runs one kernel per op, each bound by its own bytes or FLOPs.
        eager = sum(bound_us(op["bytes"], op["flops"], spec, dtype) for op in ops)
        fused = bound_us(fused_bytes, flops, spec, dtype)
        # The gain at the roof: eager's bound over the fused one. Not a limit on a
        # measured gain, since each version may run at another share of its roof.
        entry[key] = {"eager_us": eager, "fused_us": fused, "speedup": eager / fused,
                      "memory_bound": fused_bytes / (spec["bandwidth_gbps"] * 1e9)
                      >= flops / (spec["tflops"][dtype] * 1e12)}
        if name == "linear_relu":
            # What Inductor makes by default on a GPU: the GEMM stays a library call
            # that writes its output, and one kernel reads that back with the bias and
            # writes the result (the bytes eager's add moves). Only a GEMM template
            # (max-autotune) reaches the fused bound.
            gemm, after = ops[0], ops[1:]
            split = (bound_us(gemm["bytes"], gemm["flops"], spec, dtype)
                     + bound_us(after[0]["bytes"], sum(op["flops"] for op in after),
                                spec, dtype))
            entry[key] |= {"library_gemm_us": split,
                           "library_gemm_speedup": eager / split}
    model[name] = entry
    print(f"{name} ({entry['dtype']}): {len(ops)} eager ops, {flops:.3g} FLOPs")
    print(f"    bytes: eager {eager_bytes:,}, fused {fused_bytes:,} "
          f"({eager_bytes / fused_bytes:.1f}x less)")
    print(f"    FLOPs per byte: eager {entry['eager_intensity']:.3g}, "
          f"fused {entry['fused_intensity']:.3g}")
    for gpu in SPECS:
        bounds = entry[gpu.split()[0].lower()]
        print(f"    {gpu} bound: eager {bounds['eager_us']:,.2f} us, fused "
              f"{bounds['fused_us']:,.2f} us, {bounds['speedup']:.2f}x at the roof "
              f"({'memory' if bounds['memory_bound'] else 'compute'}-bound fused)")
        if "library_gemm_us" in bounds:
            print(f"    {'':<{len(gpu)}}  library GEMM + one kernel after it "
                  f"{bounds['library_gemm_us']:,.2f} us, "
                  f"{bounds['library_gemm_speedup']:.2f}x at the roof")
# --8<-- [end:bounds]
results["model"] = model
for name, (fn, shapes, dtype) in EXAMPLES.items():  # what each model is of, named as
    # a timing names its work
    model[name]["work"] = f"{fn.__name__}(" + ", ".join(
        f"{str(dtype).removeprefix('torch.')}{list(shape)}" for shape in shapes) + ")"
results["specs"] = {  # keyed "h100", "h200"; the ridge: FLOPs per byte where roofs meet
    gpu.split()[0].lower(): {
        "name": gpu, "bandwidth_gbps": spec["bandwidth_gbps"],
        "tflops": {str(k).removeprefix("torch."): v for k, v in spec["tflops"].items()},
        "ridge_bf16": spec["tflops"][torch.bfloat16] * 1e3 / spec["bandwidth_gbps"],
        "ridge_fp32": spec["tflops"][torch.float32] * 1e3 / spec["bandwidth_gbps"]}
    for gpu, spec in SPECS.items()}
results["label"] = "a model from published specifications (H100 SXM, H200 SXM)"


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


def compiled_since(start):
    """Each frame Dynamo compiled after its first `start` compiles in this process: the
    function, and its graph's input shapes (a symbol such as s77 where a size was
    compiled as dynamic), with why it recompiled, if it did."""
    frames = []
    for m in get_compilation_metrics()[start:]:
        shapes = ast.literal_eval(m.graph_node_shapes or "{}")
        inputs = [shape for node, shape in shapes.items() if node.startswith("l_")]
        frames.append({"function": m.co_name, "inputs": inputs,
                       "recompile_reason": m.recompile_reason})
    return frames


# --8<-- [start:roofline]
# The roofline: attainable TFLOP/s = min(peak, bandwidth x FLOPs per byte).
h100 = SPECS["H100 SXM"]
points = []
for kind in ("eager", "fused"):
    for name, entry in model.items():
        intensity = entry[f"{kind}_intensity"]
        attainable = min(h100["tflops"][EXAMPLES[name][2]],
                         h100["bandwidth_gbps"] * intensity / 1000)
        points.append({"label": f"{name}, {kind}", "intensity": intensity,
                       "tflops": attainable, "measured": False})
        print(f"{name:<20} {kind:<6} {intensity:10.3g} FLOPs/byte -> at most "
              f"{attainable:8.3g} TFLOP/s on an H100 SXM")
timings, compiles = {}, {}
if device == "cuda":  # place the measurements beside the model
    for name, (fn, shapes, dtype) in EXAMPLES.items():
        inputs = [torch.randn(shape, device=device, dtype=dtype) for shape in shapes]
        # Dynamo keeps compiled code per function, not per torch.compile wrapper:
        # without a reset, matmul_softmax's second size would fail the first's guards
        # and recompile with dynamic (symbolic) sizes. Each example compiles on its own.
        torch._dynamo.reset()
        start = len(get_compilation_metrics())
        compiled = torch.compile(fn)
        compiled(*inputs)  # compile before the timer's warm-up: it then picks blocks
        #                    of many calls for both sides, not one call per block
        timings[name] = measure({"eager": (fn, *inputs),
                                 "compiled": (compiled, *inputs)})
        compiles[name] = compiled_since(start)
        print(f"{name:<20} compiled {len(compiles[name])} time(s), inputs "
              + ", ".join(str(f["inputs"]) for f in compiles[name]))
    for kind, model_kind in (("eager", "eager"), ("compiled", "fused")):
        for name, m in ((name, timings[name][kind]) for name in EXAMPLES):
            achieved = model[name]["flops"] / m.median / 1e12
            points.append({"label": f"{name}, {kind} on the GPU",
                           "intensity": model[name][f"{model_kind}_intensity"],
                           "tflops": achieved, "measured": True})
            print(f"{name:<20} {kind:<8} median {m.median * 1e6:,.1f} us "
                  f"(IQR {m.iqr * 1e6:,.1f} us, n={len(m.times)}): "
                  f"{achieved:.3g} TFLOP/s on {torch.cuda.get_device_name()}")
# --8<-- [end:roofline]
results["roofline"] = {"label": "H100 SXM (published)",
                       "bandwidth_gbps": float(h100["bandwidth_gbps"]),
                       "peak_tflops": float(h100["tflops"][torch.bfloat16]),
                       "peak_tflops_fp32": float(h100["tflops"][torch.float32]),
                       "points": points}
results["timing"] = timings
results["compiles"] = compiles  # per example: each frame compiled while it was timed
