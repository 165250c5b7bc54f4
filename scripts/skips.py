"""The one table of what is not checked, or not run, and why.

- NO_CHECK: snippets with no chapter check (tests/test_facts.py fails on any other snippet without one).
- CANNOT_RUN: stacks a snippet cannot run on. There the recorder does not run it: the record holds one line
  saying why (stdout, and results["cannot_run"]), and its chapter check skips with that line. A record that
  says it cannot run for a reason not in this table fails its check.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from importlib import metadata

NO_CHECK: dict[str, str] = {}


def _release(package: str) -> tuple[int, ...]:
    try:
        version = metadata.version(package)
    except metadata.PackageNotFoundError:
        return ()
    return tuple(int(part) for part in version.split("+")[0].split(".")[:2] if part.isdigit())


def interpreted(env) -> bool:
    """Whether Triton kernels would run in Triton's interpreter: asked for, or no GPU to run them on."""
    return env.get("TRITON_INTERPRET") == "1" or env.get("CUDA_VISIBLE_DEVICES") == ""


@dataclass(frozen=True)
class Limit:
    snippets: frozenset[str]
    reason: str
    applies: object  # (env) -> bool: the environment the snippet's process would run with

    def __call__(self, snippet: str, env) -> str | None:
        return self.reason if snippet in self.snippets and self.applies(env) else None


CANNOT_RUN = [
    Limit(
        frozenset({"dissecting/triton_basics.py", "graph_mode/triton_linear_relu.py"}),
        "not run: Triton 3.6's interpreter calls int() on one-element arrays, which numpy 2.4 and newer "
        "refuse (fixed in Triton 3.7); on a GPU this snippet does not use the interpreter",
        lambda env: (interpreted(env) and (3, 0) <= _release("triton") < (3, 7)
                 and _release("numpy") >= (2, 4)),
    ),
]

REASONS = {limit.reason for limit in CANNOT_RUN}


def cannot_run(snippet: str, env=None) -> str | None:
    """Why snippets/<snippet> cannot run with this Python's packages and environment `env` (default: this
    process's), or None."""
    env = os.environ if env is None else env
    return next((reason for limit in CANNOT_RUN if (reason := limit(snippet, env))), None)
