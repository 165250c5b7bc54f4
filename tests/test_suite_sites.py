"""The suite's built sites (tests/conftest.py): each pytest run builds into a folder of its own and removes only
the folders of runs that have ended, so two runs at once (two contributors' --chapter loops, a run beside CI's)
never delete the site the other is reading."""

from __future__ import annotations

import fcntl
import subprocess
import sys
from pathlib import Path

import pytest

SUITE = Path(__file__).resolve().with_name("conftest.py")


@pytest.fixture(scope="module")
def suite():
    """tests/conftest.py as pytest loaded it."""
    return next(m for m in list(sys.modules.values()) if getattr(m, "__file__", None) == str(SUITE))


def another_run(folder: Path) -> subprocess.Popen:
    """A process that holds `folder`'s `.alive` lock as a live run's controller does, until its stdin closes."""
    code = ("import fcntl, sys\n"
            f"alive = open({str(folder / '.alive')!r}, 'a')\n"
            "fcntl.flock(alive, fcntl.LOCK_SH)\n"
            "print('held', flush=True)\n"
            "sys.stdin.read()\n")
    folder.mkdir(parents=True, exist_ok=True)
    process = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               text=True)
    assert process.stdout.readline() == "held\n"
    return process


def test_a_run_removes_the_sites_of_ended_runs_and_keeps_a_live_runs(suite, tmp_path):
    for run in ("live", "ended", "before-alive-files", "mine"):
        (tmp_path / run / "site").mkdir(parents=True)
    (tmp_path / "ended" / ".alive").touch()  # its controller is gone: nothing holds the lock
    live = another_run(tmp_path / "live")
    try:
        suite.remove_ended(tmp_path, "mine")
        assert sorted(p.name for p in tmp_path.iterdir() if p.is_dir()) == ["live", "mine"]
        assert (tmp_path / "live" / "site").is_dir(), "a live run's site was removed"
    finally:
        live.communicate("")  # that run ends
    suite.remove_ended(tmp_path, "mine")
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_dir()) == ["mine"]


def test_this_run_holds_its_own_folder_alive(suite, request, tmp_path):
    """The controller holds its run's lock from configure on, so another run's clean-up leaves this one's site."""
    if hasattr(request.config, "workerinput"):
        pytest.skip("the controller holds it; an xdist worker holds nothing")
    with open(suite.SITES / suite.run_id(request.config) / ".alive", "a") as alive:
        with pytest.raises(BlockingIOError):
            fcntl.flock(alive, fcntl.LOCK_EX | fcntl.LOCK_NB)  # as another run's remove_ended would
    held = suite.hold_alive(tmp_path, "another")  # a lock like this run's, taken in this process: it holds too
    try:
        suite.remove_ended(tmp_path, "mine")
        assert (tmp_path / "another").is_dir()
    finally:
        held.close()
