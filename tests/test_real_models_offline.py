"""Issue 52: the real-model snippets build their models from configs in code and download nothing. Each snippet's
model section runs in a fresh interpreter whose audit hook refuses every network connection and name lookup, and
with the Hugging Face hub told it is offline off: a download attempt would fail the run, not be skipped."""

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.kept  # slow; reads only the checkout: kept while it is unchanged (tests/conftest.py)

ROOT = Path(__file__).resolve().parent.parent
SNIPPETS = {"real_models/model_zoo.py": "models", "real_models/generation.py": "model",
            "real_models/resnet_layout.py": "model"}

GUARD = """
import socket, sys
def refuse(event, args):
    if event in ("socket.connect", "socket.getaddrinfo", "socket.gethostbyname", "urllib.Request"):
        raise ConnectionRefusedError(f"network use during a real-model snippet: {event} {args[:2]}")
sys.addaudithook(refuse)
"""


def section(path: Path, name: str) -> str:
    """The snippet's imports and set-up up to the end of section `name`."""
    text = path.read_text()
    end = text.index(f"# --8<-- [end:{name}]")
    return text[:end]


@pytest.mark.parametrize("snippet", sorted(SNIPPETS))
def test_a_real_model_snippet_builds_its_models_without_the_network(snippet, tmp_path):
    code = section(ROOT / "snippets" / snippet, SNIPPETS[snippet])
    build = textwrap.dedent("""
        built = []
        for spec in globals().get("MODELS", {}).values():
            model_class, config, make_inputs = spec
            built.append(type(model_class(config)).__name__)
            make_inputs()
        if "model" in globals():
            built.append(type(model).__name__)
        print("built:", ", ".join(built))
    """)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "HF_HOME": str(tmp_path / "hf"),
           "CUDA_VISIBLE_DEVICES": ""}  # no HF_HUB_OFFLINE: a download must be refused, not skipped
    run = subprocess.run([sys.executable, "-c", GUARD + code + build], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    built = run.stdout.split("built:")[-1]
    expected = 5 if snippet.endswith("model_zoo.py") else 1
    assert len(built.split(",")) == expected, run.stdout
    # The guard is live: the same interpreter refuses a connection.
    connect = "import socket; socket.create_connection(('1.1.1.1', 80), 1)"
    probe = subprocess.run([sys.executable, "-c", GUARD + connect], env=env, capture_output=True, text=True,
                           timeout=60)
    assert probe.returncode != 0 and "network use during a real-model snippet" in probe.stderr, probe.stderr
