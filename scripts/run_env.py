"""The one table of a snippet's run environment: everything else asks it.

- when Triton kernels run in Triton's interpreter (asked for, or no GPU to run them on);
- which environment variables change what a run does, and so key a kept run;
- which ones a reader's machine does not set (left out of a notebook's kernel);
- the compiler caches a fresh process gets of its own;
- the pins of ci/constraints.txt.
"""

from __future__ import annotations

import re
from pathlib import Path

CONSTRAINTS = Path(__file__).resolve().parent.parent / "ci" / "constraints.txt"

# Settings a snippet's process reads (torch, Triton, Inductor, CUDA, the math libraries' threads, JAX and
# XLA, Python's own, and $TMPDIR, under which Inductor keeps its precompiled header and kernels).
KEYS_A_RUN = ("TORCH", "PYTORCH", "TRITON", "INDUCTOR", "CUDA", "OMP_", "MKL_", "XLA_", "JAX_", "PYTHON", "TMPDIR")
# What a reader's laptop does not set: the suite's and the recorder's settings stay out of a notebook's kernel.
NOT_A_READERS = ("TRITON", "TORCH", "PYTORCH", "CUDA", "INDUCTOR", "PYTHONPATH", "OMP_", "MKL_")
# Each fresh process of the recorder gets empty ones of its own, so every process compiles from cold.
COMPILER_CACHES = ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR", "TMPDIR")


def interpreted(env) -> bool:
    """Whether Triton kernels would run in Triton's interpreter: asked for, or no GPU to run them on."""
    return env.get("TRITON_INTERPRET") == "1" or env.get("CUDA_VISIBLE_DEVICES") == ""


def keying(env) -> dict[str, str]:
    """The settings in env that change what a run does."""
    return {name: value for name, value in env.items() if name.startswith(KEYS_A_RUN)}


def readers(env) -> dict[str, str]:
    """env as a reader's machine would have it."""
    return {name: value for name, value in env.items() if not name.startswith(NOT_A_READERS)}


def pins(constraints: Path = CONSTRAINTS) -> dict[str, str]:
    """package -> the version ci/constraints.txt pins it to ('torch' -> '2.15.0')."""
    found = {}
    for line in constraints.read_text().splitlines() if constraints.is_file() else []:
        if match := re.fullmatch(r"\s*([\w.-]+)\s*==\s*([\w.+-]+)\s*(#.*)?", line):
            found[match.group(1).lower()] = match.group(2)
    return found
