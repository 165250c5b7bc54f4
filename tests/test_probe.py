"""The probe of what a call costs before it does any work (scripts/probe.py), which the recorder keeps in every
manifest it writes. Its figures are a description of the host, so nothing here judges their size."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from scripts import probe, records, run_env

pytestmark = pytest.mark.kept  # slow; reads only the checkout: kept while it is unchanged (tests/conftest.py)

ROOT = records.ROOT


@pytest.fixture(autouse=True)
def probing(monkeypatch):
    """The probe runs here (the suite skips it for its other scratch records: tests/conftest.py)."""
    monkeypatch.delenv(run_env.NO_PROBE, raising=False)


def test_the_skip_the_suite_sets_is_said_in_the_manifest(monkeypatch):
    monkeypatch.setenv(run_env.NO_PROBE, "1")
    probe.run.cache_clear()
    try:
        assert probe.run("cpu") == {"skipped": f"{run_env.NO_PROBE} is set"}
    finally:
        probe.run.cache_clear()


def test_the_probe_measures_an_eager_op_and_a_compiled_call_in_a_process_of_its_own():
    probe.run.cache_clear()
    found = probe.run("cpu")
    assert set(found) == {"op_us", "compiled_us", "threads", "measured_at"}, found
    assert found["op_us"] > 0 and found["compiled_us"] > 0 and found["threads"] == 1
    # The tiny kernel's compiled code is kept, so the next probe (the recorder's below) measures without compiling.
    assert any((probe.KEPT).glob("cpu-*/inductor/*")), list(probe.KEPT.glob("*"))


def test_a_probe_that_fails_says_why_and_a_record_is_still_made():
    probe.run.cache_clear()
    try:
        found = probe.run("cuda")  # this machine has no GPU for it
    finally:
        probe.run.cache_clear()
    assert set(found) == {"error"} and found["error"].startswith("the probe failed: "), found


def test_every_record_the_recorder_makes_carries_the_probe(tmp_path):
    (tmp_path / "snippets" / "demo").mkdir(parents=True)
    (tmp_path / "snippets" / "demo" / "hello.py").write_text('results = {"device": "cpu"}\nprint("hello")\n')
    done = subprocess.run([sys.executable, "-m", "scripts.regenerate", "--device", "cpu", "--snippets-dir",
                           str(tmp_path / "snippets"), "--outputs-dir", str(tmp_path / "outputs"), "--failed-dir",
                           str(tmp_path / "failed")], cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    manifest = json.loads((tmp_path / "outputs" / "cpu" / "demo" / "hello" / "manifest.json").read_text())
    assert manifest["environment"]["probe"].get("op_us", 0) > 0, manifest["environment"]["probe"]
    assert "probe: measured in" in done.stdout  # a contributor sees where the time before the snippet went
