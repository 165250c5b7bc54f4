"""Graph mode: torch.compile a small module; the first call pays for compiling, later calls do not.

    python snippets/graph_mode/compile_time.py

Times the first call of a compiled Linear + ReLU module twice: once with Inductor's FX graph cache turned
off (Dynamo traces, Inductor lowers and generates code) and once, after forgetting the compiled code, with
the cache on (as a second run of the same program would find it). Then times steady-state calls of eager
and compiled. Runs on CUDA when torch sees a GPU, else on the CPU; writes results.json to
$SNIPPET_OUTPUT_DIR or to a fresh temporary folder.
"""

import json
import os
import tempfile
import time
from pathlib import Path

import torch
from torch._dynamo.utils import counters
from torch.utils import benchmark

OUT = Path(os.environ.get("SNIPPET_OUTPUT_DIR") or tempfile.mkdtemp(prefix="compile_time-"))
device = "cuda" if torch.cuda.is_available() else "cpu"
results = {"device": device}


# --8<-- [start:model]
class SimpleModel(torch.nn.Module):
    def __init__(self, width=512):
        super().__init__()
        self.linear = torch.nn.Linear(width, width)

    def forward(self, x):
        return torch.relu(self.linear(x))


model = SimpleModel().to(device).eval()
x = torch.randn(32, 512, device=device)
compiled_model = torch.compile(model)  # returns at once: nothing is traced or compiled until the first call
# --8<-- [end:model]


def timed_call(fn):
    start = time.perf_counter()
    with torch.no_grad():
        out = fn(x)
    if device == "cuda":
        torch.cuda.synchronize()
    return out, time.perf_counter() - start


# --8<-- [start:first_call]
with torch.no_grad():
    model(x)  # warm eager up first, so one-time costs (CUDA context, library loading) are not billed to compile
first = {}
# 1. The first compile in this process, with Inductor's FX graph cache off: everything is done for real.
# 2. The same again after torch._dynamo.reset(): the process is warm now (imports, compiler workers).
# 3. and 4. With the cache on: the first run stores the compiled graph if it is not there yet, the second
#    finds it, so only Dynamo's tracing is left to do.
for step, cache in [("first compile in this process", False), ("compile again, warm process", False),
                    ("graph cache on", True), ("graph cache on, again", True)]:
    torch._dynamo.reset()  # forget compiled code in this process; on-disk caches stay
    counters.clear()
    with torch._inductor.config.patch(fx_graph_cache=cache):
        out, seconds = timed_call(compiled_model)
    hits, misses = counters["inductor"]["fxgraph_cache_hit"], counters["inductor"]["fxgraph_cache_miss"]
    first[step] = {"s": seconds, "cache_hits": hits, "cache_misses": misses}
    note = f"  ({hits} cache hit, {misses} miss)" if cache else ""
    print(f"first call, {step + ':':<32} {seconds * 1e3:8.1f} ms{note}")
_, second_s = timed_call(compiled_model)
print(f"{'second call (guards pass, compiled code runs):':<45} {second_s * 1e3:8.3f} ms")
with torch.no_grad():
    same = torch.allclose(out, model(x), rtol=1e-4, atol=1e-4)
print(f"compiled output matches eager: {same}")
# --8<-- [end:first_call]
first_s = first["first compile in this process"]["s"]
results["first_call"] = {"uncached_s": first_s, "warm_process_s": first["compile again, warm process"]["s"],
                         "cached_s": first["graph cache on, again"]["s"],
                         "cached_hits": first["graph cache on, again"]["cache_hits"],
                         "second_s": second_s, "steps": first, "matches_eager": bool(same)}


# --8<-- [start:steady]
timings = {}
with torch.no_grad():
    for name, fn in [("eager", model), ("compiled", compiled_model)]:
        t = benchmark.Timer("fn(x)", globals={"fn": fn, "x": x}).blocked_autorange(min_run_time=0.5)
        timings[name] = {"median_us": t.median * 1e6, "iqr_us": t.iqr * 1e6, "timings": len(t.times)}
        print(f"{name:<9} steady state: {t.median * 1e6:8.1f} us median (IQR {t.iqr * 1e6:.1f} us, "
              f"{len(t.times)} timings)")
first_s = first["first compile in this process"]["s"]
ratio = first_s / (timings["compiled"]["median_us"] / 1e6)
print(f"the first compile took as long as {ratio:,.0f} steady-state compiled calls")
# --8<-- [end:steady]
results["steady"] = {**timings, "first_call_in_steady_calls": ratio}

(OUT / "results.json").write_text(json.dumps(results, indent=2))
