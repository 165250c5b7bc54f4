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


def pytest_terminal_summary(terminalreporter):
    """Stale or missing CUDA records are listed, not failed: only a GPU box can remake them."""
    from harness import all_snippets
    from records import OUTPUTS, stale_records

    missing = [s for s in all_snippets() if not (OUTPUTS / "cuda" / s[:-3] / "manifest.json").exists()]
    stale = stale_records("cuda")
    if missing or stale:
        terminalreporter.section("CUDA records (remake on a GPU box: python scripts/regenerate.py --device cuda)")
        for snippet in stale:
            terminalreporter.line(f"stale    snippets/{snippet}")
        terminalreporter.line(f"missing  {len(missing)} of {len(all_snippets())} snippets have no CUDA record")


def pytest_collection_modifyitems(items):
    """With `--dist loadgroup`, keep each test module on one worker (its snippet runs once there), but
    spread the browser's per-page tests over all workers: they are the slowest part of the suite."""
    import pytest

    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        if not (item.module.__name__ == "test_browser" and "path" in params):
            item.add_marker(pytest.mark.xdist_group(item.module.__name__))
