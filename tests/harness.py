"""How the tests run snippets: in this process (several times faster than a process each), once per module.

    from harness import snippet

    run = snippet("eager_mode/complex_activation.py")   # a module-scoped fixture named `run`

    def test_six_ops(run):
        assert run.results["profile"]["op_count"] == 6

Every snippet under snippets/ must be named this way in some tests/test_*.py, or be listed in SKIPS with
its reason; tests/test_snippets.py checks that.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
SNIPPETS = ROOT / "snippets"
sys.path.insert(0, str(ROOT / "scripts"))

from regenerate import find_snippets  # noqa: E402
from snippet_runner import run as run_in_process  # noqa: E402

# Snippets the tests do not run, each with the reason. Keep it empty where you can.
SKIPS: dict[str, str] = {}


@dataclass
class Run:
    snippet: str
    stdout: str
    sections: dict[str, str]
    results: dict[str, Any]
    files: Path
    globals: dict[str, Any] = field(repr=False)

    @property
    def device(self) -> str:
        return self.results.get("device", "cpu")

    def section(self, name: str) -> str:
        assert name in self.sections, f"{self.snippet} printed nothing in section '{name}'"
        return self.sections[name]


def run_snippet(snippet: str, out: Path) -> Run:
    """Run snippets/<snippet> as __main__ with $SNIPPET_OUTPUT_DIR and the working folder set to `out`."""
    saved_env, saved_cwd = os.environ.get("SNIPPET_OUTPUT_DIR"), os.getcwd()
    os.environ["SNIPPET_OUTPUT_DIR"] = str(out)
    os.chdir(out)
    try:
        result = run_in_process(SNIPPETS / snippet)
    finally:
        os.chdir(saved_cwd)
        if saved_env is None:
            os.environ.pop("SNIPPET_OUTPUT_DIR", None)
        else:
            os.environ["SNIPPET_OUTPUT_DIR"] = saved_env
        reset_torch()
    results_file = out / "results.json"
    results = json.loads(results_file.read_text()) if results_file.exists() else {}
    return Run(snippet, result.stdout, result.sections, results, out, result.globals)


def reset_torch() -> None:
    """Forget compiled graphs, so the next snippet in this process compiles as it would on its own."""
    if "torch" in sys.modules:
        import torch

        torch._dynamo.reset()


def snippet(name: str):
    """A module-scoped fixture that runs snippets/<name> once and returns its Run."""
    if not (SNIPPETS / name).is_file():
        raise FileNotFoundError(f"snippets/{name} does not exist")

    @pytest.fixture(scope="module")
    def _run(tmp_path_factory) -> Run:
        if name in SKIPS:
            pytest.skip(SKIPS[name])
        return run_snippet(name, tmp_path_factory.mktemp(name.replace("/", "-")[:-3]))

    return _run


def build_site(out: Path) -> subprocess.CompletedProcess:
    """`mkdocs build --strict` of the whole site into `out`."""
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=300, env=dict(os.environ, NO_MKDOCS_2_WARNING="1"),
    )


def all_snippets() -> list[str]:
    return find_snippets(SNIPPETS)
