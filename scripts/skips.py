"""The one table of what is not checked, or not run, and why.

- NO_CHECK: snippets with no chapter check (tests/test_facts.py fails on any other snippet without one).
- CPU_ONLY: snippets that are models made without a GPU: no CUDA record is planned or made.
- CANNOT_RUN: stacks a snippet cannot run on. There the recorder does not run it: the record holds one line
  saying why (stdout, and results["cannot_run"]), and its chapter check skips with that line. A record that
  says it cannot run for a reason not in this table fails its check.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from scripts.run_env import interpreted

SNIPPETS = Path(__file__).resolve().parent.parent / "snippets"

NO_CHECK: dict[str, str] = {}

# Snippets that are a model made without a GPU: they launch no kernel and say they ran on the CPU on any
# machine, so the recorder neither plans nor runs them for a GPU (there it would fail as "ran on cpu").
CPU_ONLY: dict[str, str] = {
    "gpu_code/findings_model.py": "a GPU model made from Inductor's CUDA code without a GPU: it launches no "
                                  "kernel, so its CPU record is the model on any machine",
}


def _release(package: str) -> tuple[int, ...]:
    try:
        version = metadata.version(package)
    except metadata.PackageNotFoundError:
        return ()
    return tuple(int(part) for part in version.split("+")[0].split(".")[:2] if part.isdigit())


def launches_triton_kernels(snippet: str) -> bool:
    """Whether a snippet's own code launches Triton kernels (`kernel[grid](...)` in a file that imports
    triton): where there is no GPU, Triton's interpreter runs them."""
    path = SNIPPETS / snippet
    source = path.read_text() if path.is_file() else ""
    return bool(re.search(r"^\s*(?:import|from) triton\b", source, re.MULTILINE)
                and re.search(r"\w\[.*\]\(", source))


def imports_transformers(snippet: str) -> bool:
    """Whether a snippet builds Hugging Face models (snippets/real_models/)."""
    path = SNIPPETS / snippet
    source = path.read_text() if path.is_file() else ""
    return bool(re.search(r"^\s*(?:import|from) transformers\b", source, re.MULTILINE))


@dataclass(frozen=True)
class Limit:
    which: object  # (snippet) -> bool: the snippets the limit is about, by what their code does
    reason: str
    applies: object  # (env) -> bool: the environment the snippet's process would run with

    def __call__(self, snippet: str, env) -> str | None:
        return self.reason if self.applies(env) and self.which(snippet) else None


CANNOT_RUN = [
    Limit(
        launches_triton_kernels,
        "not run: this snippet launches Triton kernels, and Triton 3.6's interpreter, which runs them without a "
        "GPU, can call int() on one-element arrays, which numpy 2.4 and newer refuse (fixed in Triton 3.7); on a "
        "GPU the interpreter is not used",
        lambda env: (interpreted(env) and (3, 0) <= _release("triton") < (3, 7)
                 and _release("numpy") >= (2, 4)),
    ),
    Limit(
        imports_transformers,
        "not run: this snippet builds its models with Hugging Face transformers, which this Python does not have "
        "(the project's 'models' extra; on a GPU box without a network, install it from wheels carried there: "
        "README, Remake the records on a GPU box)",
        lambda env: not _release("transformers"),
    ),
]

REASONS = {limit.reason for limit in CANNOT_RUN}


def cannot_run(snippet: str, env=None) -> str | None:
    """Why snippets/<snippet> cannot run with this Python's packages and environment `env` (default: this
    process's), or None."""
    env = os.environ if env is None else env
    return next((reason for limit in CANNOT_RUN if (reason := limit(snippet, env))), None)
