"""tests/run_cache.py: a slow run is reused only under the key it passed with."""

import pytest
import run_cache


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setattr(run_cache, "CACHE", tmp_path / "runs")
    monkeypatch.delenv(run_cache.RERUN, raising=False)
    return tmp_path / "runs"


def test_the_key_changes_with_what_ran_and_with_the_environment():
    assert run_cache.key("print(1)") == run_cache.key("print(1)")
    assert run_cache.key("print(1)") != run_cache.key("print(2)")
    assert run_cache.key("x", env={"TORCH_LOGS": "fusion"}) != run_cache.key("x", env={})


def test_the_key_changes_with_the_installs(monkeypatch):
    before = run_cache.key("x")
    monkeypatch.setattr(run_cache, "installed", lambda: "torch==0.0.1")
    assert run_cache.key("x") != before


def test_a_kept_run_is_found_by_its_key_only_and_replaces_older_ones(cache, tmp_path):
    run = tmp_path / "run"
    (run / "files").mkdir(parents=True)
    (run / "stdout.txt").write_text("hello\n")
    assert run_cache.kept("fresh-runs", "a/b.py", "k1") is None
    run_cache.keep("fresh-runs", "a/b.py", "k1", run)
    found = run_cache.kept("fresh-runs", "a/b.py", "k1")
    assert found is not None and (found / "stdout.txt").read_text() == "hello\n"
    assert run_cache.kept("fresh-runs", "a/b.py", "k2") is None
    run_cache.keep("fresh-runs", "a/b.py", "k2", note="ran in 3 s")
    assert run_cache.kept("fresh-runs", "a/b.py", "k1") is None, "an older key was kept beside the new one"
    assert (run_cache.kept("fresh-runs", "a/b.py", "k2") / "passed").read_text() == "ran in 3 s"


def test_rerun_ignores_what_was_kept(cache, monkeypatch):
    run_cache.keep("notebook-runs", "notebooks/x.ipynb", "k")
    assert run_cache.kept("notebook-runs", "notebooks/x.ipynb", "k")
    monkeypatch.setenv(run_cache.RERUN, "1")
    assert run_cache.kept("notebook-runs", "notebooks/x.ipynb", "k") is None
