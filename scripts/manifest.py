"""A record's manifest: what the recorder says of the machine, the run and the snippet (scripts/records.py
owns the layout and MANIFEST_KEYS), and the scrubbing of what is private to the machine from a record's text.

Needs only the standard library (torch where there is a GPU to describe): the GPU box runs it.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import getpass
import os
import platform
import re
import socket
import subprocess
import sys
import tempfile
from importlib import metadata
from pathlib import Path

from scripts import records

ROOT = records.ROOT
GENERIC_USERS = {"root", "user", "runner", "ubuntu", "admin", "nobody"}


def version_of(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def cpu_model() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def cpu_caches() -> dict:
    """This CPU's caches as Linux lists them for core 0 ({"L1d": bytes, "L2": ..., "L3": ...}), and
    llc_bytes, the largest: what "bigger than the caches" is measured against."""
    caches = {}
    for index in sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")):
        with contextlib.suppress(OSError, ValueError):
            level = (index / "level").read_text().strip()
            kind = (index / "type").read_text().strip()
            size = (index / "size").read_text().strip()
            units = {"K": 2**10, "M": 2**20, "G": 2**30}
            caches[f"L{level}" + ("d" if kind == "Data" else "i" if kind == "Instruction" else "")] = (
                int(size[:-1]) * units[size[-1]] if size[-1] in units else int(size))
    if caches:
        caches["llc_bytes"] = max(caches.values())
    return caches


# The CPU flags that change a result or a kernel: Inductor's vector width, and whether oneDNN has a bfloat16
# path (set_float32_matmul_precision("medium") changes a CPU matmul only where it does).
ISA_FLAGS = ("avx2", "avx512f", "avx512_bf16", "avx512_vnni", "avx512_fp16", "amx_tile", "amx_bf16", "amx_int8")


def cpu_isa() -> dict:
    """The CPU's vector instruction set: torch's detected capability ('AVX2', 'AVX512'), whether oneDNN has
    a bfloat16 matmul here, and which of ISA_FLAGS /proc/cpuinfo lists."""
    isa: dict = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                present = set(line.split(":", 1)[1].split())
                isa["flags"] = [flag for flag in ISA_FLAGS if flag in present]
                break
    with contextlib.suppress(Exception):  # a torch too old or too new for one of these: the rest still holds
        import torch

        isa["capability"] = torch.backends.cpu.get_cpu_capability()
        isa["mkldnn_bf16"] = bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    return isa


def environment(device: str, probe: bool = False) -> dict:
    """This machine and its stack, as a manifest states them; with `probe`, also what a call costs here before
    it does any work (scripts/probe.py: seconds, in a process of its own), as the recorder keeps it."""
    env = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "torch": version_of("torch"),
        "triton": version_of("triton"),
        "numpy": version_of("numpy"),
        "jax": version_of("jax"),
        "cpu": cpu_model(),
        "cpu_count": os.cpu_count(),
        "caches": cpu_caches(),
        "cpu_isa": cpu_isa(),
    }
    if device == "cuda":
        import torch

        props = torch.cuda.get_device_properties(0)
        env.update(
            gpu=props.name,
            gpu_count=torch.cuda.device_count(),
            gpu_memory_gib=round(props.total_memory / 2**30, 1),
            sm_count=props.multi_processor_count,
            compute_capability=f"{props.major}.{props.minor}",
            cuda=torch.version.cuda,
            driver=nvidia_driver(),
            gpu_l2_bytes=getattr(props, "L2_cache_size", None),
        )
    if probe:
        from scripts import probe as probing

        env["probe"] = probing.run(device)
    return env


def nvidia_driver() -> str | None:
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=30, check=True,
        ).stdout
        return out.strip().splitlines()[0]
    return None


def make(snippet: str, source: Path, device: str, status: int | None, duration: float, environment: dict,
         overrides: dict, files: Path, side_by_side: int = 1, unsteady: dict | None = None,
         timed: dict | None = None, clock_moved: list[str] | None = None) -> dict:
    """The manifest of one run of snippets/<snippet>: its source's digest, the command, the settings the
    recorder changed (run_env.overrides), how it ended and took, the machine, and the files it kept."""
    return {
        "snippet": f"snippets/{snippet}",
        "sha256": records.source_sha256(source),
        "device": device,
        "command": f"python scripts/runner.py snippets/{snippet} <record>",
        "env_overrides": overrides,
        "exit_status": status,
        "duration_s": round(duration, 2),
        "date": dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat(),
        "environment": environment,
        **({"side_by_side": side_by_side} if side_by_side > 1 else {}),
        # Timings whose fresh processes disagree beyond measures.UNSTEADY: made while something else ran.
        **({"unsteady": unsteady} if unsteady else {}),
        # Around the timed calls (scripts/runner.py TimedCalls): the lock that gave each the machine alone
        # (how often taken, seconds waited for it and for the GPU to drain) and the GPU's readings' ranges.
        **({"timed_sections": timed} if timed else {}),
        **({"clock_moved": clock_moved} if clock_moved else {}),
        "files": sorted(p.relative_to(files).as_posix() for p in files.rglob("*") if p.is_file()),
    }


def merge_timed(each: list[dict]) -> dict:
    """Every process's timed calls as one: the lock's counts and seconds summed, each reading's range over
    all of them."""
    merged: dict = {}
    for said in each:
        for key, value in (said.get("alone") or {}).items():
            merged.setdefault("alone", {})[key] = round(merged.get("alone", {}).get(key, 0) + value, 3)
        for work, readings in (said.get("clocks") or {}).items():
            kept = merged.setdefault("clocks", {}).setdefault(work, {})
            for key, (low, high) in readings.items():
                old = kept.get(key, [low, high])
                kept[key] = [min(old[0], low), max(old[1], high)]
    return merged


CLOCK_MOVES = 1.02  # an SM clock whose highest reading over a timing's calls exceeds its lowest by more


def clock_moved(timed: dict) -> list[str]:
    """The timed works during whose calls the GPU's SM clock moved (flagged in the manifest and warned)."""
    return sorted(work for work, readings in (timed.get("clocks") or {}).items()
                  if (clock := readings.get("sm_mhz")) and clock[0] and clock[1] / clock[0] > CLOCK_MOVES)



# -------------------------------------------------------------------------------------------- scrubbing


def scrubber(extra_paths: list[Path]):
    """Return a function that replaces what is private to this machine with stable placeholders."""
    paths = {str(ROOT): "<repo>", str(Path.home()): "~", tempfile.gettempdir(): "<tmp>"}
    if sys.prefix != sys.base_prefix:  # a venv outside the repository (one per torch release, say)
        paths[sys.prefix] = "<venv>"
    paths.update({str(p): "<tmp>" for p in extra_paths})
    for original, placeholder in list(paths.items()):
        with contextlib.suppress(OSError):
            paths.setdefault(os.path.realpath(original), placeholder)
    # Longest first, so the repo inside home becomes <repo>, not ~/...
    ordered = sorted((p for p in paths.items() if len(p[0]) > 1), key=lambda p: -len(p[0]))
    rules: list[tuple[re.Pattern, str]] = [(re.compile(re.escape(p)), r) for p, r in ordered]
    rules += [
        (re.compile(r"/tmp/[\w.\-]+"), "<tmp>"),
        (re.compile(r"\bat 0x[0-9a-fA-F]+"), "at 0x<addr>"),
        (re.compile(r"\b0x(?:7f|55|56)[0-9a-fA-F]{10}\b"), "0x<addr>"),
    ]
    host = socket.gethostname()
    if len(host) >= 3:
        rules.append((re.compile(rf"\b{re.escape(host)}\b"), "<host>"))
    user = getpass.getuser()
    if user not in GENERIC_USERS and len(user) >= 3:
        rules.append((re.compile(rf"\b{re.escape(user)}\b"), "<user>"))

    def scrub(text: str) -> str:
        for pattern, placeholder in rules:
            text = pattern.sub(placeholder, text)
        return text

    return scrub


def scrub_tree(folder: Path, scrub) -> None:
    for path in folder.rglob("*"):
        if path.is_file():
            try:
                text = path.read_text(encoding="utf-8")
            except (UnicodeDecodeError, OSError):
                continue  # binary files are kept as written
            path.write_text(scrub(text), encoding="utf-8")
