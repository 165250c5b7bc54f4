"""Relayout: Inductor stores a conv network's activations channels-last, although you
gave it NCHW tensors.

    python snippets/optimizations/relayout.py

Compiles a small conv network, reads the strides Inductor picked for its buffers out of
the generated code, and times the network eager, compiled, and compiled with layout
optimization switched off. Runs on CUDA when torch sees a GPU, else on the CPU.
"""

import re

import torch
from torch._inductor.utils import run_and_get_code
from torch.utils import benchmark

device = "cuda" if torch.cuda.is_available() else "cpu"
results = {}
results["device"] = device

# --8<-- [start:network]
torch.manual_seed(0)
# Three 3x3 convolutions of 128 channels. Inductor decides the layout once for the
# whole graph (decide_layout_opt): in inference it weighs each conv by its FLOPs, and
# only in training do convs of 64 channels or fewer, all of them, keep their layout.
net = torch.nn.Sequential(
    torch.nn.Conv2d(3, 128, 3, padding=1), torch.nn.ReLU(),
    torch.nn.Conv2d(128, 128, 3, padding=1), torch.nn.ReLU(),
    torch.nn.Conv2d(128, 128, 3, padding=1),
)
dtype = torch.bfloat16 if device == "cuda" else torch.float32
batch, size = (32, 64) if device == "cuda" else (2, 32)  # a CPU gets a smaller batch
net = net.to(device, dtype).eval()
x = torch.randn(batch, 3, size, size, device=device, dtype=dtype)  # NCHW: width fastest
print(f"input {tuple(x.shape)} {dtype}, strides {x.stride()}; "
      f"layout_optimization = {torch._inductor.config.layout_optimization}")
# --8<-- [end:network]
results["input"] = {"batch": batch, "size": size, "dtype": dtype,
                    "strides": x.stride()}


# --8<-- [start:strides]
def layouts(code):
    """(buffer, shape, strides) of each buffer the generated code allocates or checks
    (torch 2.15 checks with assert_tensor_metadata where 2.13 had assert_size_stride)"""
    found = re.findall(r"(buf\d+)\s*=\s*empty_strided_\w+\(\((.*?)\), \((.*?)\)"
                       r"|assert_(?:size_stride|tensor_metadata)\((buf\d+), \((.*?)\), "
                       r"\((.*?)\)", code)
    return [(a or d, b or e, c or f) for a, b, c, d, e, f in found]


def kind(shape, strides):
    shape, strides = (tuple(int(v) for v in text.split(",") if v.strip())
                      for text in (shape, strides))
    if len(shape) != 4:
        return "other"
    n, c, h, w = shape
    if strides == (c * h * w, h * w, w, 1):
        return "NCHW (as given)"
    if strides == (h * w * c, 1, w * c, c):
        return "channels-last"
    return "other"


def first_seen(code):
    """Each buffer's (shape, strides) where the generated code first mentions it."""
    seen = {}
    for buf, shape, strides in layouts(code):
        seen.setdefault(buf, (shape, strides))
    return seen


def conv_layouts(code):
    """The layout of each convolution's output, in the order the code computes them."""
    seen = first_seen(code)
    convs = re.findall(r"(buf\d+) = extern_kernels\.convolution", code)
    return [kind(*seen[buf]) if buf in seen else "not shown" for buf in convs]


with torch.no_grad():
    compiled_net = torch.compile(net)
    out, (code,) = run_and_get_code(compiled_net, x)
    eager_out = net(x)
tolerance = 2e-2 if dtype == torch.bfloat16 else 1e-4
same = torch.allclose(out, eager_out, rtol=tolerance, atol=tolerance)
print(f"compiled == eager: {same}")
conv_outputs = re.findall(r"(buf\d+) = extern_kernels\.convolution", code)
for buf, (shape, strides) in first_seen(code).items():
    role = "convolution output" if buf in conv_outputs else ""
    print(f"  {buf:<5} ({shape:<16}) strides ({strides:<20}) "
          f"{kind(shape, strides):<16} {role}")
print(f"returned tensor: strides {out.stride()} (the layout eager returns)")
# --8<-- [end:strides]
results["allclose"] = same
convs = conv_layouts(code)
results["conv_output_layouts"] = convs
results["conv_count"] = len(convs)
results["channels_last_conv_outputs"] = convs.count("channels-last")
results["output_strides"] = out.stride()


# --8<-- [start:timing]
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


with torch.no_grad():
    # A second compilation of the same net, keeping the layout we gave; Dynamo keeps
    # both, one per torch.compile call, so all three can be timed in the same rounds.
    kept_net = torch.compile(net, options={"layout_optimization": False})
    _, (kept_code,) = run_and_get_code(kept_net, x)
    timing = measure({"eager": (net, x), "relayout": (compiled_net, x),
                      "kept": (kept_net, x)})
kept = conv_layouts(kept_code)
print(f"with layout_optimization=False the conv outputs are: {sorted(set(kept))}")
labels = {"eager": "eager, NCHW", "relayout": "compiled, layout chosen by Inductor",
          "kept": "compiled, NCHW kept"}
for name, m in timing.items():
    print(f"  {labels[name]:<36} {m.median * 1e6:9,.0f} us median, "
          f"IQR {m.iqr * 1e6:7,.0f} us, n = {len(m.times)}")
# --8<-- [end:timing]
results["kept_conv_layouts"] = sorted(set(kept))
results["timing"] = timing
