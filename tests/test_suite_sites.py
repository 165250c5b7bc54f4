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


def finished_build(folder: Path, key: str, code: str = "0") -> None:
    (folder / "site").mkdir(parents=True)
    (folder / "site" / "index.html").write_text("<html>built</html>")
    (folder / "key").write_text(key)
    (folder / "returncode").write_text(code)
    (folder / "build.log").write_text("")


def test_a_run_reuses_a_site_built_from_the_same_inputs_as_links(suite, tmp_path):
    finished_build(tmp_path / "earlier", "k1")
    (tmp_path / "mine").mkdir()
    assert suite.reuse(tmp_path, "mine", "k1")
    built, linked = tmp_path / "earlier" / "site" / "index.html", tmp_path / "mine" / "site" / "index.html"
    assert linked.read_text() == "<html>built</html>" and linked.stat().st_ino == built.stat().st_ino
    assert (tmp_path / "mine" / "reused").read_text() == "earlier"
    assert (tmp_path / "mine" / "returncode").read_text() == "0"
    suite.remove_ended(tmp_path, "mine")  # the earlier run's folder goes; this run's links stay
    assert not (tmp_path / "earlier").exists() and linked.read_text() == "<html>built</html>"


@pytest.mark.parametrize("key, code", [("other inputs", "0"), ("k1", "1"), (None, "0")])
def test_a_run_builds_where_the_inputs_changed_or_the_earlier_build_failed(suite, tmp_path, key, code):
    finished_build(tmp_path / "earlier", "k1", code)
    (tmp_path / "mine").mkdir()
    assert not suite.reuse(tmp_path, "mine", key)
    assert not (tmp_path / "mine" / "site").exists()


def test_the_build_key_follows_every_file_the_build_can_read_and_not_the_tests(suite, tmp_path, monkeypatch):
    def git(*args):
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    git("init", "-q")
    for name, text in {"docs/page.md": "# Page\n", "tests/test_page.py": "x = 1\n", ".gitignore": "site/\n",
                       "mkdocs.yml": "site_name: x\n"}.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    git("add", ".")
    monkeypatch.setattr(suite, "ROOT", tmp_path)
    first = suite.build_key()
    (tmp_path / "tests" / "test_page.py").write_text("x = 2\n")  # a test: the build does not read it
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "index.html").write_text("ignored")  # an ignored file: not an input
    assert suite.build_key() == first
    (tmp_path / "docs" / "page.md").write_text("# Page, changed\n")
    changed = suite.build_key()
    assert changed != first
    (tmp_path / "docs" / "new.md").write_text("# New\n")  # untracked, not ignored: the build reads it
    added = suite.build_key()
    assert added not in (first, changed)
    monkeypatch.setenv("SITE_URL", "https://example.org/")  # mkdocs.yml reads it
    assert suite.build_key() not in (first, changed, added)


class Options:
    """What concerned_snippets reads of a pytest config: its arguments and its -k and --chapter options."""

    def __init__(self, args, keyword=""):
        self.args, self.keyword = args, keyword

    def getoption(self, name, default=None):
        return {"keyword": self.keyword}.get(name, default)


def test_a_run_ends_with_the_cuda_records_of_the_snippets_it_checks(suite):
    concerned = suite.concerned_snippets
    facts = ["tests/test_facts.py"]
    assert concerned(Options(["tests/test_records.py"])) == set()  # not its business
    assert concerned(Options(facts)) is None  # every snippet's
    assert concerned(Options(facts, "eager_mode/complex_activation")) == {"eager_mode/complex_activation.py"}
    # Words no snippet's path holds select nothing; a -k that names no snippet keeps them all.
    assert concerned(Options(facts, "gpu_code/memory_model and committed")) == {"gpu_code/memory_model.py"}
    assert concerned(Options(facts, "committed_record and cuda")) is None
    # A model made without a GPU is never listed as lacking a CUDA record: no GPU box would make one.
    from scripts import skips

    assert skips.CPU_ONLY and not set(skips.CPU_ONLY) & set(suite.cuda_states(None))
    assert set(suite.cuda_states({"eager_mode/complex_activation.py"})) == {"eager_mode/complex_activation.py"}


class Passed:
    """What pytest hands the report hook: a phase's report."""

    def __init__(self, when, passed=True):
        self.when, self.passed = when, passed

    def get_result(self):
        return self


class Item:
    """What the kept-test hooks read of a test: its id, its `kept` marker and a stash."""

    def __init__(self, nodeid, kept=True):
        self.nodeid, self.kept, self.stash, self.config = nodeid, kept, {}, None

    def get_closest_marker(self, name):
        return self.kept if name == "kept" else None


def ran(suite, item, *phases) -> None:
    """Report each phase (when, passed) of one run of the test to the suite's hook."""
    for when, passed in phases:
        hook = suite.pytest_runtest_makereport(item, None)
        next(hook)
        with pytest.raises(StopIteration):
            hook.send(Passed(when, passed))


def skipped(suite, item) -> bool:
    try:
        suite.pytest_runtest_setup(item)
    except pytest.skip.Exception:
        return True
    return False


def test_a_kept_test_that_passed_is_skipped_until_a_file_changes(suite, tmp_path, monkeypatch):
    import run_cache

    monkeypatch.setattr(run_cache, "CACHE", tmp_path / "runs")
    monkeypatch.delenv(run_cache.RERUN, raising=False)
    tree = {"digest": "checkout as it is"}
    monkeypatch.setattr(suite, "tree_key", lambda config: tree["digest"])
    item = Item("tests/test_x.py::test_slow[a very long id " + "x" * 300 + "]")
    assert not skipped(suite, item)
    ran(suite, item, ("setup", True), ("call", False), ("teardown", True))  # failed: not kept
    assert not skipped(suite, item)
    ran(suite, item, ("setup", True), ("call", True), ("teardown", True))
    assert skipped(suite, item)
    assert not skipped(suite, Item("tests/test_x.py::test_other"))  # another test's pass keeps nothing of this
    assert not skipped(suite, Item(item.nodeid, kept=False))  # unmarked tests always run
    monkeypatch.setenv(run_cache.RERUN, "1")
    assert not skipped(suite, item)
    monkeypatch.delenv(run_cache.RERUN)
    tree["digest"] = "one file edited"
    assert not skipped(suite, item)
    ran(suite, item, ("setup", True), ("call", True), ("teardown", False))  # a failed teardown keeps nothing
    assert not skipped(suite, item)


def xdist_start(durations: list[float], workers: int) -> list[float]:
    """Each worker's busy time when xdist hands out units in this order: worker i gets the i-th and the
    (workers + i)-th at the start, and a worker that finishes a unit takes the next one left."""
    busy = [0.0] * workers
    for i, seconds in enumerate(durations[:2 * workers]):
        busy[i % workers] += seconds
    for seconds in durations[2 * workers:]:
        busy[busy.index(min(busy))] += seconds
    return busy


@pytest.mark.parametrize("durations", [[163, 115, 39], [163, 115, 39, 20], [240, 216, 196, 140, 78, 66, 66, 65]])
def test_the_fresh_runs_are_paired_so_the_longest_does_not_wait_behind_another(suite, durations):
    """The real-model chapter's three fresh runs (163, 115 and 39 s) took 206 s on two workers: xdist queued the
    shortest behind the longest before either started. Paired, the longest runs with the shortest of the second
    wave, and no worker ends later than it did in the order longest first."""
    paired = suite.paired_for_prefetch(durations, 2)
    assert sorted(paired) == sorted(durations)
    assert max(xdist_start(paired, 2)) <= max(xdist_start(durations, 2))


def test_paired_the_chapter_s_runs_end_with_the_longest_and_one_worker_keeps_the_order(suite):
    assert max(xdist_start(suite.paired_for_prefetch([163, 115, 39], 2), 2)) == 163
    assert suite.paired_for_prefetch([5, 4, 3], 1) == [5, 4, 3]
