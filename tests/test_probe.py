"""The probe of what a call costs before it does any work (scripts/probe.py), which the recorder keeps in every
manifest it writes. Its figures are a description of the host, so nothing here judges their size."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from scripts import probe, records

ROOT = records.ROOT


def test_the_probe_measures_an_eager_op_and_a_compiled_call_in_a_process_of_its_own():
    # Measured here (kept for the hour), so the recorder's run below reuses it: one tiny compile for the file.
    found = probe.run("cpu")
    assert set(found) == {"op_us", "compiled_us", "threads", "measured_at"}, found
    assert found["op_us"] > 0 and found["compiled_us"] > 0 and found["threads"] == 1


def test_a_probe_that_fails_says_why_and_a_record_is_still_made():
    found = probe.fresh("cuda")  # this machine has no GPU for it
    assert set(found) == {"error"} and found["error"].startswith("the probe failed: "), found


def test_kept_figures_under_an_hour_old_stand_and_older_ones_are_measured_again(tmp_path, monkeypatch):
    monkeypatch.setattr(probe, "KEPT", tmp_path)
    measured = []
    monkeypatch.setattr(probe, "fresh", lambda device: measured.append(device) or {"op_us": 1.0})
    probe.run.cache_clear()
    try:
        assert probe.run("cpu") == {"op_us": 1.0} and measured == ["cpu"]
        probe.run.cache_clear()
        assert probe.run("cpu") == {"op_us": 1.0} and measured == ["cpu"]  # kept, not measured
        kept = next(tmp_path.glob("cpu-*.json"))
        os.utime(kept, (time.time() - probe.KEPT_S - 1,) * 2)
        probe.run.cache_clear()
        probe.run("cpu")
        assert measured == ["cpu", "cpu"]
    finally:
        probe.run.cache_clear()


def test_every_record_the_recorder_makes_carries_the_probe(tmp_path):
    (tmp_path / "snippets" / "demo").mkdir(parents=True)
    (tmp_path / "snippets" / "demo" / "hello.py").write_text('results = {"device": "cpu"}\nprint("hello")\n')
    done = subprocess.run([sys.executable, "-m", "scripts.regenerate", "--device", "cpu", "--snippets-dir",
                           str(tmp_path / "snippets"), "--outputs-dir", str(tmp_path / "outputs"), "--failed-dir",
                           str(tmp_path / "failed")], cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    manifest = json.loads((tmp_path / "outputs" / "cpu" / "demo" / "hello" / "manifest.json").read_text())
    assert manifest["environment"]["probe"].get("op_us", 0) > 0, manifest["environment"]["probe"]
