"""Caches and warm starts: what each compile cache saves a new process, and what a
deployment ships.

    python snippets/dissecting/warm_start.py

Compiles one training step (a small MLP block, forward and backward) in fresh
processes: with empty caches (cold), with the caches the cold one left (warm), warm
with AOTAutograd's cache off (Inductor's FX graph cache alone), and in an empty cache
folder given only the portable artifacts that the cold process saved with
torch.compiler.save_cache_artifacts. Each is done twice; prints the first call's time,
each cache's hits and misses, and the compiler processes it started.
"""

import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import torch

device = "cuda" if torch.cuda.is_available() else "cpu"


# --8<-- [start:step]
# What each fresh process runs: build the model, compile one training step, time its
# first call, and report what the caches did. A file of its own, so that every run
# starts with nothing in memory.
STEP = """
import os, sys, time
from pathlib import Path

import torch
from torch._dynamo.utils import counters

# Python tells audit hooks about every process it starts: count the compiles.
COMPILERS = {"g++", "c++", "gcc", "cc", "clang", "clang++", "ptxas"}
compilers_run = []


def note_compiler(event, args):
    if event == "subprocess.Popen" and os.path.basename(str(args[0])) in COMPILERS:
        if not {"--version", "-v"} & set(map(str, args[1])):  # a compile, not a query
            compilers_run.append(args[0])


sys.addaudithook(note_compiler)


class Block(torch.nn.Module):  # pre-norm MLP block: LayerNorm, Linear, GELU, Linear
    def __init__(self, width=256):
        super().__init__()
        self.norm = torch.nn.LayerNorm(width)
        self.up = torch.nn.Linear(width, 4 * width)
        self.down = torch.nn.Linear(4 * width, width)

    def forward(self, x):
        return x + self.down(torch.nn.functional.gelu(self.up(self.norm(x))))


artifacts_in, artifacts_out = sys.argv[1:3]
if artifacts_in:  # a deployment's warm start: fill the caches from one file
    torch.compiler.load_cache_artifacts(Path(artifacts_in).read_bytes())
device = "cuda" if torch.cuda.is_available() else "cpu"
torch.manual_seed(0)
model = Block().to(device)
x = torch.randn(64, 256, device=device)
step = torch.compile(lambda x: model(x).square().mean().backward())
start = time.perf_counter()
step(x)  # the first call compiles: Dynamo, AOTAutograd, Inductor
if device == "cuda":
    torch.cuda.synchronize()
seconds = time.perf_counter() - start
if artifacts_out:  # everything this process compiled, as one portable blob
    Path(artifacts_out).write_bytes(torch.compiler.save_cache_artifacts()[0])
print(seconds, len(compilers_run),  # one line of numbers for the parent to read
      counters["inductor"]["fxgraph_cache_hit"],
      counters["inductor"]["fxgraph_cache_miss"],
      counters["aot_autograd"]["autograd_cache_hit"],
      counters["aot_autograd"]["autograd_cache_miss"])
"""
# --8<-- [end:step]

results = {}
results["device"] = device


FIELDS = ("s", "compilers", "fx_hits", "fx_misses", "aot_hits", "aot_misses")
workspace = tempfile.TemporaryDirectory()  # every cache folder, removed at exit


def empty_folder():
    """A new, empty cache folder: a machine that never compiled this step."""
    folder = Path(workspace.name) / f"cache-{len(list(Path(workspace.name).iterdir()))}"
    (folder / "tmp").mkdir(parents=True)
    return folder


def in_fresh_process(cache_dir, artifacts_in="", artifacts_out="", **env):
    """STEP in a new Python process whose compile caches all live in cache_dir
    (Inductor's, Triton's, and the precompiled header Inductor puts in TMPDIR)."""
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(cache_dir),
           "TRITON_CACHE_DIR": str(cache_dir / "triton"),
           "TMPDIR": str(cache_dir / "tmp"),
           "TORCHINDUCTOR_COMPILE_THREADS": "1", **env}  # compilers start in-process
    done = subprocess.run([sys.executable, "-c", STEP, artifacts_in, artifacts_out],
                          env=env, capture_output=True, text=True, check=True)
    numbers = done.stdout.strip().splitlines()[-1].split()
    return {field: float(number) if field == "s" else int(number)
            for field, number in zip(FIELDS, numbers)}


load_before = os.getloadavg()[0]
in_fresh_process(empty_folder())  # untimed: brings g++ and torch's headers into the
# OS file cache, as on any machine that compiled before


# --8<-- [start:processes]
runs = {"cold": [], "warm": [], "fx_only": [], "artifacts": []}
for _ in range(2):  # twice: a number is only as good as its second run
    local, new = empty_folder(), empty_folder()
    blob = str(local / "artifacts.bin")
    runs["cold"].append(in_fresh_process(local, artifacts_out=blob))
    runs["warm"].append(in_fresh_process(local))
    runs["fx_only"].append(in_fresh_process(local, TORCHINDUCTOR_AUTOGRAD_CACHE="0"))
    runs["artifacts"].append(in_fresh_process(new, blob))  # a new machine
    size = Path(blob).stat().st_size
labels = {"cold": "cold", "warm": "warm", "fx_only": "warm, FX graph cache only",
          "artifacts": "artifacts in an empty cache"}
for name, done in runs.items():
    seconds = [run["s"] for run in done]
    last = done[-1]
    print(f"{labels[name]:<28} first step {statistics.median(seconds):5.2f} s "
          f"(of {', '.join(f'{s:.2f}' for s in seconds)}); FX graph cache "
          f"{last['fx_hits']} hit/{last['fx_misses']} miss, AOTAutograd cache "
          f"{last['aot_hits']} hit/{last['aot_misses']} miss, "
          f"{last['compilers']} compiles")
print(f"portable artifacts: {size / 1024:.0f} KiB")
# --8<-- [end:processes]
results["runs"] = {name: {"median_s": statistics.median(run["s"] for run in done),
                          "s": [run["s"] for run in done],
                          **{k: v for k, v in done[-1].items() if k != "s"}}
                   for name, done in runs.items()}
results["artifacts_kib"] = size / 1024
results["load_average"] = {"before": load_before, "after": os.getloadavg()[0]}
results["speedup"] = {name: results["runs"]["cold"]["median_s"] / run["median_s"]
                      for name, run in results["runs"].items()}
