"""The one table of a snippet's run environment: everything else asks it.

- how idle OpenMP threads wait in the suite, which runs snippets side by side (`SIDE_BY_SIDE`);
- where Triton kernels run in Triton's interpreter, decided here for every writer: the recorder's
  snippet processes (`overrides`), the suite's own process (`suite_defaults`, set by tests/conftest.py) and a
  chapter notebook's setup cell (`notebook_setup`); only a snippet that launches Triton kernels of its own
  (`launches_triton`) gets the interpreter, and whether a stack can run one (`interpreted`);
- which environment variables change what a run does, and so key a kept run;
- which ones a reader's machine does not set (left out of a notebook's kernel);
- the compiler caches a fresh process gets of its own;
- the pins of ci/constraints.txt.
"""

from __future__ import annotations

import functools
import importlib.metadata
import re
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONSTRAINTS = ROOT / "ci" / "constraints.txt"  # the pins, named once (records and the suite read them here)

# Settings a snippet's process reads (torch, Triton, Inductor, CUDA, the math libraries' threads, JAX and
# XLA, Python's own, and $TMPDIR, under which Inductor keeps its precompiled header and kernels).
KEYS_A_RUN = ("TORCH", "PYTORCH", "TRITON", "INDUCTOR", "CUDA", "OMP_", "MKL_", "XLA_", "JAX_", "PYTHON", "TMPDIR")
# What a reader's laptop does not set: the suite's and the recorder's settings stay out of a notebook's kernel.
NOT_A_READERS = ("TRITON", "TORCH", "PYTORCH", "CUDA", "INDUCTOR", "PYTHONPATH", "OMP_", "MKL_")
# Each fresh process of the recorder gets empty ones of its own, so every process compiles from cold.
COMPILER_CACHES = ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR", "TMPDIR")


# A snippet launches Triton kernels of its own when its code imports triton or defines a @triton.jit kernel;
# Inductor's generated kernels run as C++ on a CPU and need no interpreter.
LAUNCHES_TRITON = re.compile(r"^\s*(?:import triton\b|from triton\b)|@triton\.jit", re.MULTILINE)
INTERPRETER = {"TRITON_INTERPRET": "1"}  # Triton's interpreter (on NumPy), chosen before triton is imported


def launches_triton(source: str) -> bool:
    """Whether a snippet's code runs Triton kernels of its own (and so needs the interpreter without a GPU)."""
    return bool(LAUNCHES_TRITON.search(source))


def overrides(device: str, source: str) -> dict[str, str]:
    """What the recorder sets for one snippet's process, and its manifest lists: on the CPU no GPU, and
    Triton's interpreter only where the snippet launches Triton kernels; on a GPU nothing."""
    if device != "cpu":
        return {}
    return {"CUDA_VISIBLE_DEVICES": "", **(INTERPRETER if launches_triton(source) else {})}


def unset(device: str, source: str) -> tuple[str, ...]:
    """What the recorder removes from a snippet's inherited environment: on the CPU, the interpreter's switch
    for a snippet that launches no Triton kernel (a caller's setting would otherwise reach it unrecorded)."""
    return tuple(INTERPRETER) if device == "cpu" and not launches_triton(source) else ()


# The suite runs snippets side by side (one per xdist worker), each with as many OpenMP threads as the machine
# has cores. An idle OpenMP thread spins by default, burning the core another process's thread waits for: two
# real-model snippets on 2 cores took 349 and 330 s side by side, and 177 and 130 s with idle threads asleep.
# The wait changes how fast a run is, never what it computes or prints, and the suite asserts no timing. The
# recorder, which times alone, leaves it as a reader's machine has it.
SIDE_BY_SIDE = {"OMP_WAIT_POLICY": "PASSIVE"}


def suite_defaults() -> dict[str, str]:
    """What the suite's own process sets before torch or triton is imported, for itself and the snippets it
    runs: idle threads asleep (SIDE_BY_SIDE), and Triton's interpreter on a machine with no GPU (no
    nvidia-smi; torch is not imported yet), as its tests run Triton kernels beside torch's."""
    return {**SIDE_BY_SIDE, **({} if shutil.which("nvidia-smi") else INTERPRETER)}


def notebook_setup() -> str:
    """The first code cell of a chapter notebook whose snippets launch Triton: the same decision, made in a
    reader's kernel, where torch can be asked."""
    (name, value), = INTERPRETER.items()
    return ("# Without a GPU, this chapter's Triton kernels run in Triton's interpreter (on NumPy),\n"
            "# which must be chosen before triton is first imported: as the site's records were made.\n"
            "import os\n\nimport torch\n\n"
            f"if not torch.cuda.is_available():\n    os.environ.setdefault(\"{name}\", \"{value}\")")


def interpreted(env) -> bool:
    """Whether Triton kernels would run in Triton's interpreter: asked for, or no GPU to run them on."""
    return env.get("TRITON_INTERPRET") == "1" or env.get("CUDA_VISIBLE_DEVICES") == ""


# Set, the recorder skips the machine probe (scripts/probe.py): the test suite sets it for its scratch records.
NO_PROBE = "MLC_NO_PROBE"


def keying(env) -> dict[str, str]:
    """The settings in env that change what a run does."""
    return {name: value for name, value in env.items() if name.startswith(KEYS_A_RUN)}


# What the recorder decides for each snippet's process (its compiler caches, no GPU, the interpreter), and what
# the suite sets for its own process (JAX's GPU memory, which a CPU run does not touch) and the snippets it runs
# side by side (how idle threads wait, which changes no output).
DECIDED = (*COMPILER_CACHES, "CUDA_VISIBLE_DEVICES", "TRITON_INTERPRET", "XLA_PYTHON_CLIENT_PREALLOCATE",
           *SIDE_BY_SIDE)


def settings(env) -> dict[str, str]:
    """The settings in env that change a CPU run and that neither the recorder nor the suite decides: two
    callers whose settings agree here run a snippet alike (the recorder's run counts as the suite's)."""
    return {name: value for name, value in keying(env).items() if name not in DECIDED}


@functools.cache
def installed() -> str:
    """Every installed distribution and its version, one per line, sorted."""
    found = {(d.metadata["Name"] or "").lower(): d.version for d in importlib.metadata.distributions()}
    return "\n".join(f"{name}=={version}" for name, version in sorted(found.items()))


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
