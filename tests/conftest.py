"""Test-wide setup that must happen before torch or triton is imported."""

import os
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / ".cache"

# Keep Inductor's compiled kernels and its precompiled header between runs: a warm suite is several
# times faster than a cold one. Inductor puts the header under $TMPDIR, so that moves too.
os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(CACHE / "torchinductor"))
(CACHE / "tmp").mkdir(parents=True, exist_ok=True)
os.environ.setdefault("TMPDIR", str(CACHE / "tmp"))

# Without a GPU, Triton kernels run in Triton's interpreter; it must be chosen before triton is imported.
if shutil.which("nvidia-smi") is None:
    os.environ.setdefault("TRITON_INTERPRET", "1")

pytest_plugins = ["harness"]
