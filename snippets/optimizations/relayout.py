"""Relayout: Inductor stores a conv network's activations channels-last, although you gave it NCHW tensors.

    python snippets/optimizations/relayout.py

Compiles a small conv network, reads the strides Inductor picked for its buffers out of the generated
code, and times the network eager, compiled, and compiled with layout optimization switched off. Runs on
CUDA when torch sees a GPU, else on the CPU. Writes results.json to $SNIPPET_OUTPUT_DIR, or to a temporary
folder.
"""

import json
import os
import re
import tempfile
from pathlib import Path

import torch
from torch.utils import benchmark
from torch._inductor.utils import run_and_get_code

OUT = Path(os.environ.get("SNIPPET_OUTPUT_DIR") or tempfile.mkdtemp(prefix="relayout-"))
OUT.mkdir(parents=True, exist_ok=True)
device = "cuda" if torch.cuda.is_available() else "cpu"
results = {"device": device}

# --8<-- [start:network]
torch.manual_seed(0)
# Three 3x3 convolutions. 128 channels: Inductor's CUDA heuristic skips layouts for convs of 64 or fewer.
net = torch.nn.Sequential(
    torch.nn.Conv2d(3, 128, 3, padding=1), torch.nn.ReLU(),
    torch.nn.Conv2d(128, 128, 3, padding=1), torch.nn.ReLU(),
    torch.nn.Conv2d(128, 128, 3, padding=1),
)
dtype = torch.bfloat16 if device == "cuda" else torch.float32
batch, size = (32, 64) if device == "cuda" else (2, 32)
net = net.to(device, dtype).eval()
x = torch.randn(batch, 3, size, size, device=device, dtype=dtype)  # NCHW: contiguous, width fastest
print(f"input {tuple(x.shape)} {dtype}, strides {x.stride()}; "
      f"layout_optimization = {torch._inductor.config.layout_optimization}")
# --8<-- [end:network]


# --8<-- [start:strides]
def layouts(code):
    """(buffer, shape, strides) for every buffer the generated code allocates or checks, in order."""
    found = re.findall(r"(buf\d+)\s*=\s*empty_strided_\w+\(\((.*?)\), \((.*?)\)"
                       r"|assert_size_stride\((buf\d+), \((.*?)\), \((.*?)\)", code)
    return [(a or d, b or e, c or f) for a, b, c, d, e, f in found]


def kind(shape, strides):
    shape, strides = (tuple(int(v) for v in text.split(",") if v.strip()) for text in (shape, strides))
    if len(shape) != 4:
        return "other"
    n, c, h, w = shape
    if strides == (c * h * w, h * w, w, 1):
        return "NCHW (as given)"
    if strides == (h * w * c, 1, w * c, c):
        return "channels-last"
    return "other"


with torch.no_grad():
    compiled_net = torch.compile(net)
    out, (code,) = run_and_get_code(compiled_net, x)
    eager_out = net(x)
tolerance = 2e-2 if dtype == torch.bfloat16 else 1e-4
print(f"compiled == eager: {torch.allclose(out, eager_out, rtol=tolerance, atol=tolerance)}")
conv_outputs = set(re.findall(r"(buf\d+) = extern_kernels\.convolution", code))
seen = {}
for buf, shape, strides in layouts(code):
    if buf not in seen:  # the first time each buffer appears
        seen[buf] = kind(shape, strides)
        role = "convolution output" if buf in conv_outputs else ""
        print(f"  {buf:<5} ({shape:<16}) strides ({strides:<20}) {seen[buf]:<16} {role}")
print(f"returned tensor: strides {out.stride()} (the layout eager returns)")
# --8<-- [end:strides]
conv_layouts = [seen.get(b, "not shown") for b in sorted(conv_outputs, key=lambda b: int(b[3:]))]
results["allclose"] = torch.allclose(out, eager_out, rtol=tolerance, atol=tolerance)
results["conv_output_layouts"] = conv_layouts
results["channels_last_conv_outputs"] = conv_layouts.count("channels-last")
results["conv_count"] = len(conv_outputs)
results["output_strides"] = list(out.stride())
results["input_strides"] = list(x.stride())

# --8<-- [start:timing]
min_run_time = 1.0 if device == "cuda" else 0.3


def time_it(fn):
    with torch.no_grad():
        fn(x)  # warm-up (and, for a compiled function, the compile)
        m = benchmark.Timer("f(x)", globals={"f": fn, "x": x}).blocked_autorange(min_run_time=min_run_time)
    return {"median_us": m.median * 1e6, "iqr_us": m.iqr * 1e6, "timings": len(m.times)}


timings = {"eager, NCHW": time_it(net), "compiled, layout chosen by Inductor": time_it(compiled_net)}
# Forget the first compilation and compile again, this time keeping the layout we gave.
torch._dynamo.reset()
with torch._inductor.config.patch(layout_optimization=False):
    kept_net = torch.compile(net)
    with torch.no_grad():
        _, (kept_code,) = run_and_get_code(kept_net, x)
    timings["compiled, NCHW kept"] = time_it(kept_net)
kept = {kind(shape, strides) for buf, shape, strides in layouts(kept_code) if buf in
        re.findall(r"(buf\d+) = extern_kernels\.convolution", kept_code)}
print(f"with layout_optimization=False the conv outputs are: {', '.join(sorted(kept))}")
for name, t in timings.items():
    print(f"  {name:<36} {t['median_us']:9,.0f} us median, IQR {t['iqr_us']:7,.0f} us ({t['timings']} timings)")
# --8<-- [end:timing]
results["kept_conv_layouts"] = sorted(kept)
results["timing"] = {
    "eager_us": timings["eager, NCHW"]["median_us"],
    "relayout_us": timings["compiled, layout chosen by Inductor"]["median_us"],
    "kept_us": timings["compiled, NCHW kept"]["median_us"],
    "all": timings,
}
results["timing"]["relayout_vs_kept"] = results["timing"]["kept_us"] / results["timing"]["relayout_us"]

(OUT / "results.json").write_text(json.dumps(results, indent=2))
