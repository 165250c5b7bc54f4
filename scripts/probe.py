"""What a call costs before it does any work, measured on the machine that records: kept in every manifest
(environment["probe"]) so that a page can tell a kernel that is too short to matter from one that is not.

- `op_us`: one eager ATen op on a one-element tensor (`x + 1`): Python, the dispatcher, a new output and, on
  a GPU, the launch as the host sees it. Under this, a workload's eager time is the host's, not the memory's.
- `compiled_us`: the same `x + 1` through `torch.compile` once it is warm: its guards, its wrapper and its one
  kernel. What a compiled call costs however small its tensors are.
- `launch_us` (CUDA only): an empty kernel launched back to back (`torch.cuda._sleep(0)`), per launch: the floor
  under every kernel a GPU runs from eager code.
- `sync_us` (CUDA only): `torch.cuda.synchronize()` with nothing queued.

Each is the median over blocks of calls (torch.utils.benchmark, which synchronises a GPU around each block), in
a process of its own, so the recorder's process loads neither torch's compiler nor a GPU context. The figures
describe the host beside the records, taken on one thread when the recorder started (`measured_at`), not a
record: a busy machine gives busy figures, as it gives busy records. The tiny kernel's compiled code is kept
in .cache/probe/ (per Python), so a later probe measures again without compiling again. Needs only torch:
the GPU box runs it.

    python -m scripts.probe --device cpu
"""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import hashlib
import json
import os
import subprocess
import sys

from scripts import run_env

LIMIT_S = 300  # a hang, not load: the probe takes seconds (one tiny compile)
KEPT = run_env.ROOT / ".cache" / "probe"  # the compiled code, not the figures


def measure(device: str) -> dict:
    """The probe's figures on this machine, in this process (`run` gives it a process of its own)."""
    import torch
    from torch.utils import benchmark

    torch.set_num_threads(1)
    x = torch.ones(1, device=device)

    def per_call_us(fn) -> float:
        timer = benchmark.Timer("fn()", globals={"fn": fn}, num_threads=1)
        return round(timer.blocked_autorange(min_run_time=0.5).median * 1e6, 3)

    compiled = torch.compile(lambda t: t + 1)
    compiled(x), compiled(x)  # compiled, then warm
    found = {"op_us": per_call_us(lambda: x + 1), "compiled_us": per_call_us(lambda: compiled(x))}
    if device == "cuda":
        found["launch_us"] = per_call_us(lambda: torch.cuda._sleep(0))
        found["sync_us"] = per_call_us(torch.cuda.synchronize)
    found["threads"] = 1
    return found


@functools.cache
def run(device: str) -> dict:
    """The probe in a process of its own, once per process; {"error": ...} where it fails, so a record is still
    made (the probe describes the machine, the snippet's run does not depend on it)."""
    if os.environ.get(run_env.NO_PROBE):
        return {"skipped": f"{run_env.NO_PROBE} is set"}
    measured_at = dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat()
    caches = KEPT / f"{device}-{hashlib.sha256(sys.executable.encode()).hexdigest()[:12]}"
    # A snippet's environment as run_env decides it for code that launches no Triton kernel of its own (x + 1
    # compiles to C++ on a CPU, to Triton on a GPU), with caches kept between probes.
    env = dict(os.environ, **run_env.overrides(device, ""), TORCHINDUCTOR_CACHE_DIR=str(caches / "inductor"),
               TRITON_CACHE_DIR=str(caches / "triton"))
    for name in run_env.unset(device, ""):
        env.pop(name, None)
    try:
        done = subprocess.run([sys.executable, "-m", "scripts.probe", "--device", device], env=env,
                              cwd=run_env.ROOT, capture_output=True, text=True, timeout=LIMIT_S)
    except subprocess.TimeoutExpired:
        return {"error": f"the probe took more than {LIMIT_S} s"}
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": f"the probe failed: {last[:300]}"}
    return {**json.loads(done.stdout.strip().splitlines()[-1]), "measured_at": measured_at}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    args = parser.parse_args(argv)
    print(json.dumps(measure(args.device)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
