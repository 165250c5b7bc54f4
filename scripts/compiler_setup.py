"""The compiler set-up a first compile on a machine builds, made once for the runs that may share it.

Inductor's first compile in a process with empty caches spends most of its time on two things that depend
only on the machine, its C++ compiler and torch, never on the code compiled:
- a test program for each vector instruction set the CPU reports, built and loaded to learn whether the
  compiler can use it (`torch._inductor.cpu_vec_isa`), kept with a mark that it loaded in Inductor's cache
  directory;
- C++'s precompiled header of Inductor's kernels, kept under $TMPDIR, where torch keeps it past a fresh cache
  on purpose ("these headers need to be global", `torch._inductor.codecache`).

The recorder's processes build both, as a reader's first run does: a compile time on a page includes them.
The suite's fresh runs, which time nothing that a check reads, start from one copy made here: each still
has empty caches of its own for everything it compiles (FX graphs, AOT Autograd, kernels). On this project's
2-core machines a first compile of a two-op function took 18 s with both built and 4 s with both made here.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.metadata
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

from scripts import run_env

ISA_PROGRAMS = "inductor"  # a copy of it is where a run's Inductor cache starts
HEADERS = "tmp"  # the runs' shared $TMPDIR, holding the precompiled header
READY = "ready"

# What builds the test programs, in a process of its own with the caches pointed here.
BUILD = ("from torch._inductor.cpu_vec_isa import valid_vec_isa_list\n"
         "print(' '.join(type(isa).__name__ for isa in valid_vec_isa_list()))")


def compiler() -> str:
    """The C++ compiler Inductor calls, as it names itself ('' where there is none)."""
    try:
        return subprocess.run(["c++", "--version"], capture_output=True, text=True).stdout
    except OSError:
        return ""


def cpu_flags() -> str:
    """The CPU's instruction-set flags, which decide the test programs."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.processor()
    return next((line for line in text.splitlines() if line.startswith("flags")), "")


def key() -> str:
    """What the set-up depends on: torch (its headers and its checks), Python, the compiler and the CPU."""
    try:
        torch = importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        torch = ""
    parts = (BUILD, torch, sys.version, compiler(), cpu_flags())
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def prepare(where: Path) -> Path:
    """The folder of this machine's set-up under `where`, made once: side by side, the other callers wait."""
    folder = where / key()
    where.mkdir(parents=True, exist_ok=True)
    with open(where / f"{folder.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (folder / READY).is_file():
            shutil.rmtree(folder, ignore_errors=True)
            (folder / HEADERS).mkdir(parents=True)
            env = run_env.readers(dict(os.environ))
            env.update(TORCHINDUCTOR_CACHE_DIR=str(folder / ISA_PROGRAMS), TMPDIR=str(folder / HEADERS),
                       CUDA_VISIBLE_DEVICES="")
            made = subprocess.run([sys.executable, "-c", BUILD], env=env, capture_output=True, text=True)
            if made.returncode != 0:
                raise RuntimeError(f"the compiler set-up could not be made in {folder}:\n{made.stderr[-2000:]}")
            (folder / READY).write_text(made.stdout)
    return folder


def seed(setup: Path, inductor_cache: Path) -> None:
    """Start a run's empty Inductor cache from the set-up's test programs."""
    shutil.copytree(setup / ISA_PROGRAMS, inductor_cache, dirs_exist_ok=True)
