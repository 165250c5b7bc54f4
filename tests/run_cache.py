"""The suite's slow runs (a snippet's fresh run, a notebook run top to bottom), kept and reused while nothing
they depend on has changed.

A run is keyed by the sha256 of what it ran (a snippet's source and the runner, or a built notebook), of every
installed distribution's name and version, of Python's version, of this machine's description and of the
environment variables the run sees. Any change to one of them makes a new key, and the run happens again. Only
a run that passed is kept. A clean clone has no `.cache/`, so CI always runs everything; `MLC_RERUN=1` does too
on a machine that has one.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import platform
import shutil
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / ".cache" / "runs"
RERUN = "MLC_RERUN"


@cache
def installed() -> str:
    """Every installed distribution and its version, one per line, sorted."""
    dists = {(d.metadata["Name"] or "").lower(): d.version for d in importlib.metadata.distributions()}
    return "\n".join(f"{name}=={version}" for name, version in sorted(dists.items()))


def key(*texts: str, env: dict[str, str] | None = None) -> str:
    digest = hashlib.sha256()
    machine = [platform.python_version(), platform.platform(), platform.processor(), str(os.cpu_count())]
    for part in (*texts, installed(), *machine, json.dumps(sorted((env or {}).items()))):
        digest.update(part.encode())
        digest.update(b"\0")
    return digest.hexdigest()[:20]


def _folder(kind: str, name: str) -> Path:
    return CACHE / kind / name.replace("/", "__")


def kept(kind: str, name: str, run_key: str) -> Path | None:
    """The folder of a passed run with this key, or None (also when MLC_RERUN is set)."""
    if os.environ.get(RERUN):
        return None
    found = _folder(kind, name) / run_key
    return found if (found / "passed").exists() else None


def keep(kind: str, name: str, run_key: str, folder: Path | None = None, note: str = "") -> None:
    """Keep a passed run (a copy of its folder, if it has one) under its key, in place of older ones."""
    home = _folder(kind, name)
    home.mkdir(parents=True, exist_ok=True)
    staging = home / f".{run_key}.{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    if folder is not None:
        shutil.copytree(folder, staging)
    else:
        staging.mkdir()
    (staging / "passed").write_text(note)
    for old in home.iterdir():
        if old.name != staging.name:
            shutil.rmtree(old, ignore_errors=True)
    staging.rename(home / run_key)
