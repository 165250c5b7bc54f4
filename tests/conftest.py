"""Test-wide setup that must happen before torch or triton is imported, and the site built once per run."""

import fcntl
import functools
import os
import shutil
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from scripts import run_env  # the standard library only: torch and triton are not imported yet

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / ".cache"

# Keep Inductor's compiled kernels and its precompiled header between runs, in Inductor's default place
# under $TMPDIR: a warm suite is several times faster than a cold one.
(CACHE / "tmp").mkdir(parents=True, exist_ok=True)
os.environ.setdefault("TMPDIR", str(CACHE / "tmp"))

# JAX would take 75% of a GPU's memory at import, leaving too little for the torch snippets run after it.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
# The recorder's scratch records made by the tests skip the machine probe (scripts/probe.py: a tiny compile per
# regeneration); tests/test_probe.py runs it, and a record made with it, without this.
os.environ.setdefault(run_env.NO_PROBE, "1")

# Idle OpenMP threads sleep, as the suite runs snippets side by side; without a GPU, Triton kernels run in
# Triton's interpreter, chosen before triton is imported. scripts/run_env.py decides both (the interpreter for
# the suite as for the recorder and the notebooks).
for _name, _value in run_env.suite_defaults().items():
    os.environ.setdefault(_name, _value)


class ShareRunId:
    """xdist hands each worker the run's id, so all workers share one built site, and the checkout's digest
    as the run began, so all key their kept tests alike."""

    def pytest_configure_node(self, node):
        node.workerinput["mlc_run_id"] = node.config.option.mlc_run_id
        node.workerinput["mlc_tree_key"] = node.config.option.mlc_tree_key


def pytest_configure(config):
    if not hasattr(config, "workerinput"):
        config.option.mlc_run_id = uuid.uuid4().hex[:12]
        # Taken before any test runs: a file a test makes in the checkout and removes does not move the key.
        config.option.mlc_tree_key = tree_digest(tests=True)
        if config.pluginmanager.hasplugin("xdist"):
            config.pluginmanager.register(ShareRunId())
        ALIVE.append(hold_alive(SITES, config.option.mlc_run_id))


def run_id(config) -> str:
    return config.workerinput["mlc_run_id"] if hasattr(config, "workerinput") else config.option.mlc_run_id


BUILDS: list[subprocess.Popen] = []  # waited for when the session ends (pytest_sessionfinish)
# No fixed limit that load can reach: a build that takes long is slow, not broken (a loaded 2-core runner took
# longer than the 300 s that once killed it). One past SLOW_BUILD_S is reported at the end of the run; only
# one past HANG_S, far beyond anything load has made of it, is taken for a hang, stopped and failed with that
# message (CI's own limit is 90 minutes).
SLOW_BUILD_S = 300
HANG_S = 3600
# The build runs at a lower CPU priority (nice), so that beside the snippets' fresh runs it yields to them
# rather than racing them: they are the slow part of a run, and a timed one should not share its cores.
NICE = ["nice", "-n", "10"] if shutil.which("nice") else []


def hold_alive(base: Path, run: str):
    """Mark the run's folder under `base` as in use for as long as this process (the run's controller) lives:
    a shared lock on its `.alive` file, which the kernel lets go of however the process ends. Returns the open
    file, to keep."""
    with open(base / ".lock", "a") as registry:  # not while another run's clean-up looks at the folders
        fcntl.flock(registry, fcntl.LOCK_EX)
        (base / run).mkdir(parents=True, exist_ok=True)
        alive = open(base / run / ".alive", "a")  # noqa: SIM115 (held open until the process ends)
        fcntl.flock(alive, fcntl.LOCK_SH)
    return alive


def remove_ended(base: Path, run: str) -> None:
    """Remove the folders of the runs that have ended (nothing holds their `.alive` lock), never another live
    run's: two pytest runs at once each keep their own built site."""
    with open(base / ".lock", "a") as registry:
        fcntl.flock(registry, fcntl.LOCK_EX)
        for old in base.iterdir():
            if not old.is_dir() or old.name == run:
                continue
            try:
                with open(old / ".alive", "a") as alive:
                    fcntl.flock(alive, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    shutil.rmtree(old, ignore_errors=True)
            except BlockingIOError:  # a run still going
                continue
            except OSError:  # gone meanwhile
                continue


def tree_digest(tests: bool) -> str | None:
    """One digest of every file git sees (tracked, or untracked and not ignored) and its content, with or
    without the tests; None where git cannot list the files."""
    import hashlib

    try:
        listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                                capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    digest = hashlib.sha256()
    for name in sorted(set(filter(None, listed.split(b"\0")))):
        if not tests and (name.startswith(b"tests/") or name == b"conftest.py"):
            continue
        path = ROOT / os.fsdecode(name)
        digest.update(name + b"\0" + (hashlib.sha256(path.read_bytes()).digest() if path.is_file() else b"gone"))
    return digest.hexdigest()


def build_key() -> str | None:
    """What a build of the site follows from, as one digest: every file git sees (tracked, or untracked and not
    ignored) but the tests, which the build never reads; each installed distribution's version (mkdocs, its
    theme and plugins, matplotlib); Python's; the checkout's place; the settings mkdocs.yml reads from the
    environment. The caches the
    build reads (.cache/figures, .cache/notebooks) are keyed by their own inputs, which are among these files.
    None where git cannot list the files: then nothing is reused."""
    import hashlib
    from importlib import metadata

    files = tree_digest(tests=False)
    if files is None:
        return None
    digest = hashlib.sha256(files.encode())
    for line in sorted(f"{d.metadata['Name']}=={d.version}" for d in metadata.distributions()):
        digest.update(line.encode() + b"\0")
    digest.update(f"{ROOT}\0{sys.version}\0{os.environ.get('SITE_URL')}\0{os.environ.get('REPO_URL')}".encode())
    return digest.hexdigest()


def reuse(base: Path, run: str, key: str | None) -> bool:
    """Give this run the site an earlier run built from the same inputs (the same build_key, and it passed), as
    hard links into its own folder, instead of building it again; False where there is none. A run whose
    inputs changed at all (one page, one record, one script) builds the whole site: see build_site."""
    if key is None:
        return False
    out = base / run
    with open(base / ".lock", "a") as registry:  # the earlier folder is not removed while it is linked from
        fcntl.flock(registry, fcntl.LOCK_EX)
        for old in sorted(base.iterdir(), key=lambda p: p.stat().st_mtime, reverse=True):
            done = [old / name for name in ("key", "returncode", "build.log")]
            if old.name == run or not old.is_dir() or not all(p.is_file() for p in done):
                continue
            if done[0].read_text() != key or done[1].read_text() != "0" or not (old / "site").is_dir():
                continue
            shutil.copytree(old / "site", out / "site", copy_function=os.link)
            for name in ("key", "returncode", "build.log"):
                shutil.copyfile(old / name, out / name)
            (out / "reused").write_text(old.name)
            return True
    return False


SITES = CACHE / "test-site"  # a folder per run: its site, build.log, returncode, seconds
SITES.mkdir(parents=True, exist_ok=True)
ALIVE: list = []  # this run's `.alive` file, held open by its controller (hold_alive)


def build_site(run: str) -> Path:
    """Build the site with `mkdocs build --strict` once per test run, however many workers ask (they take turns
    on the run's lock), into the run's own folder; another run's build goes on beside it. Where an earlier run
    built it from the same inputs (build_key), its site is reused instead. Returns the run's folder: the site,
    build.log (the build's stderr) and returncode.

    A run whose inputs changed builds the whole site: mkdocs renders no page alone (--dirty skips the pages
    whose Markdown did not change, yet every page carries the nav of all titles, the search index is written
    from the pages rendered, md:changes, md:findings and md:atlas read every page, the glossary's terms are put
    on every page, and the strict build's link and anchor checks cover only the pages rendered), so a partial
    build would let the site-wide checks pass on pages that no longer match their inputs. The slow parts of a
    build, the figures and the notebooks, are cached by their own inputs, and only those are made again."""
    out = SITES / run
    out.mkdir(parents=True, exist_ok=True)
    with open(out / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (out / "build.log").exists():
            key = build_key()
            if reuse(SITES, run, key):
                remove_ended(SITES, run)
                return out
            remove_ended(SITES, run)  # sites of earlier runs, not of one still going
            (out / "key").write_text(key or "")
            started = time.monotonic()
            process = subprocess.Popen(
                [*NICE, sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out / "site")],
                cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                env=dict(os.environ, NO_MKDOCS_2_WARNING="1", REPO_URL="https://example.org/repository"),
            )
            BUILDS.append(process)
            try:
                _, stderr = process.communicate(timeout=HANG_S)
                code = str(process.returncode)
            except subprocess.TimeoutExpired:
                process.kill()
                _, stderr = process.communicate()
                code = (f"stopped: the build ran for {HANG_S} s, beyond anything load has made of it (it takes "
                        f"minutes on a loaded 2-core machine): a hang, not a slow build")
            out.mkdir(parents=True, exist_ok=True)
            if key is not None and build_key() != key:  # a file changed while it built: no later run reuses it
                (out / "key").write_text("")
            (out / "seconds").write_text(f"{time.monotonic() - started:.0f}")
            (out / "returncode").write_text(code)
            (out / "build.log").write_text(stderr)
    return out


def pytest_collection_finish(session):
    """A run with a test that reads the built site starts the build now, beside the tests that do not need it
    (the snippets' fresh runs go first), so that no worker sits idle waiting for it later."""
    if not session.config.option.collectonly and any("built_site" in i.fixturenames for i in session.items):
        threading.Thread(target=build_site, args=(run_id(session.config),), name="site build", daemon=True).start()


def pytest_sessionfinish(session, exitstatus):
    """A build still running when this process's tests are done is waited for: another worker of the run may
    be waiting for the site it builds (killing it failed that worker's tests with "exit -9"). Only an
    interrupted run stops it."""
    for process in BUILDS:
        if process.poll() is None:
            if exitstatus == pytest.ExitCode.INTERRUPTED:
                process.kill()
            else:
                process.wait()


@pytest.fixture(scope="session")
def built_site(request) -> Path:
    """The site this run built (build_site); its build's stderr is in build.log beside it."""
    out = build_site(run_id(request.config))
    code = (out / "returncode").read_text()
    if code != "0":
        pytest.fail(f"mkdocs build --strict failed ({code if not code.lstrip('-').isdigit() else 'exit ' + code}):"
                    f"\n{(out / 'build.log').read_text()[-3000:]}", pytrace=False)
    return out / "site"


@functools.cache
def recorded_seconds(snippet: str) -> float:
    """About what one run of snippets/<snippet> takes: its CPU record's duration, per process for a timed
    snippet (the recorder runs those in several processes); 0 where there is no record."""
    from scripts import records

    record = records.record(snippet, "cpu")
    if not record.exists:
        return 0.0
    seconds = record.manifest.get("duration_s", 0.0)
    pooled = any("processes" in timing for _, timing in records.timings_in(record.results))
    return seconds / records.PROCESSES if pooled else seconds


def expected_seconds(item) -> float:
    """What a snippet's fresh run should take, from the records; 0 for other tests."""
    params = getattr(getattr(item, "callspec", None), "params", {})
    if getattr(item, "originalname", "") == "test_fresh_run":
        return recorded_seconds(params["snippet"])
    return 0.0


def chapter_of(config) -> dict | None:
    """What --chapter selects: the page's snippets, notebook and URL."""
    page = config.getoption("--chapter", None)
    if not page:
        return None
    from scripts import chapters

    path = (ROOT / page).resolve()
    if not path.is_file() or chapters.DOCS not in path.parents:
        raise pytest.UsageError(f"--chapter {page}: no such page under docs/")
    src = path.relative_to(chapters.DOCS).as_posix()
    stem = src.removesuffix(".md")
    url = "" if stem == "index" else stem.removesuffix("/index") + "/"
    snippets = chapters.page_snippets(path.read_text())
    return {"snippets": snippets, "notebook": chapters.notebook_name(path), "urls": {url, url.rstrip("/"), src}}


def in_chapter(item, chosen: dict) -> bool:
    """Whether a test belongs to the chosen chapter: a test parametrized by one of its snippets, records,
    notebook or page, or one marked site_wide (it reads the whole site: its links and anchors, every notebook,
    the glossary, the diagrams, the counts pages state, the versions page, so a new chapter can break it) that
    takes no parameter."""
    params = getattr(getattr(item, "callspec", None), "params", {})
    if not params and item.get_closest_marker("site_wide"):
        return True
    for value in params.values():
        snippet = getattr(value, "snippet", value)  # a record, or a snippet's name
        if isinstance(snippet, str) and (snippet in chosen["snippets"] or snippet == chosen["notebook"]
                                         or snippet in chosen["urls"]):
            return True
    return False


def paired_for_prefetch(runs: list, workers: int) -> list:
    """`runs`, longest first, reordered for how xdist starts: worker i is handed the i-th unit and then the
    (workers + i)-th before it runs either (a worker starts a test only once it knows the next). The first wave
    goes out shortest first and the second longest first, so that the longest run is paired with the shortest
    of the second wave: three runs of 163, 115 and 39 s on two workers take 163 s, not 163 + 39."""
    first, second = runs[:workers], runs[workers:2 * workers]
    return first[::-1] + second + runs[2 * workers:]


@pytest.hookimpl(trylast=True)  # after -k and -m have deselected: the pairing is of the runs that run
def pytest_collection_modifyitems(config, items):
    """With `--dist loadgroup`: the browser's per-page tests spread over all workers (they are the slowest
    part); fresh snippet runs spread too; the rest of each module stays on one worker. Fresh runs go before
    the other single tests, longest first (paired for xdist's start, paired_for_prefetch), so that no worker is
    left with one at the end while the other idles; xdist itself hands out groups of many tests first."""
    for item in items:
        module = item.module.__name__
        if module in ("test_browser", "test_facts"):
            continue
        item.add_marker(pytest.mark.xdist_group(module))
    if (chosen := chapter_of(config)) is not None:
        kept = [item for item in items if in_chapter(item, chosen)]
        config.hook.pytest_deselected(items=[item for item in items if item not in kept])
        items[:] = kept
    order = {item.nodeid: (0 if getattr(item, "originalname", "") == "test_fresh_run" else 1,
                           -expected_seconds(item)) for item in items}
    items.sort(key=lambda item: order[item.nodeid])  # stable: the rest keep their order
    fresh = sum(1 for item in items if order[item.nodeid][0] == 0)
    workers = getattr(config, "workerinput", {}).get("workercount", 1)
    items[:fresh] = paired_for_prefetch(items[:fresh], workers)


# ------------------------------------------------------------------------------------------------ kept tests


def tree_key(config) -> str | None:
    """Every file git sees, the tests included, as the run began: all that a test marked `kept` may read of
    the checkout."""
    if hasattr(config, "workerinput"):
        return config.workerinput.get("mlc_tree_key")
    return getattr(config.option, "mlc_tree_key", None)


def kept_key(item) -> str | None:
    """A kept test's key: the checkout's files, the test, every install, this machine and the settings that
    change a run (tests/run_cache.py); None where git cannot list the files (then nothing is kept)."""
    import run_cache

    if (tree := tree_key(item.config)) is None:
        return None
    return run_cache.key(tree, item.nodeid, env=run_env.keying(os.environ))


def kept_name(item) -> str:
    import hashlib

    return hashlib.sha256(item.nodeid.encode()).hexdigest()[:24]  # a test id can be longer than a file name


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """A slow test marked `kept` that passed before with every file, install and setting as they are now is
    skipped before its fixtures are made (a warm suite's cost was mostly such tests)."""
    import run_cache

    if item.get_closest_marker("kept") and (key := kept_key(item)) and run_cache.kept("tests", kept_name(item),
                                                                                    key):
        pytest.skip(f"passed on this machine with every file, install and setting as they are now (.cache/runs/; "
                    f"{run_cache.RERUN}=1 runs it again)")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Keep a `kept` test that passed, set-up, call and teardown."""
    import run_cache

    report = (yield).get_result()
    if not item.get_closest_marker("kept"):
        return
    if report.when == "call":
        item.stash[PASSED] = report.passed
    elif report.when == "teardown" and report.passed and item.stash.get(PASSED, False):
        if key := kept_key(item):
            run_cache.keep("tests", kept_name(item), key, note=item.nodeid)


PASSED = pytest.StashKey[bool]()


def pytest_terminal_summary(terminalreporter):
    """A slow site build is reported (not killed); CUDA records that are missing or stale are listed, not
    failed: only a GPU box can remake them."""
    if hasattr(terminalreporter.config, "workerinput"):
        return
    seconds = SITES / run_id(terminalreporter.config) / "seconds"
    reused = seconds.with_name("reused")
    if reused.is_file():
        terminalreporter.section("site build")
        terminalreporter.line(f"nothing the site is built from changed since run {reused.read_text()}: its site "
                              "was reused, not built again")
    if seconds.is_file() and int(seconds.read_text()) > SLOW_BUILD_S:
        terminalreporter.section("slow site build")
        terminalreporter.line(f"mkdocs build --strict took {seconds.read_text()} s beside the other tests (more "
                              f"than {SLOW_BUILD_S} s: a loaded machine; reported, not failed)")
    concerned = concerned_snippets(terminalreporter.config)
    states = cuda_states(concerned)
    lacking = {state: [s for s, st in states.items() if st == state] for state in ("missing", "stale", "failed")}
    if any(lacking.values()):
        terminalreporter.section("CUDA records (made on a GPU box: python3 -m scripts.regenerate --device cuda)")
        for state, snippets in lacking.items():
            if snippets:
                named = f": {', '.join(snippets)}" if concerned is not None else ""
                terminalreporter.line(f"{state:8} {len(snippets)} of {len(states)} snippets{named}")


def cuda_states(concerned: set[str] | None) -> dict[str, str]:
    """snippet -> the state of its CUDA record, for the snippets that concern the run (None: all). A model made
    without a GPU (skips.CPU_ONLY) has no CUDA record to make, as the recorder says, and is left out."""
    from scripts import records, skips

    return {s: state for s, state in records.states("cuda").items()
            if (concerned is None or s in concerned) and s not in skips.CPU_ONLY}


def concerned_snippets(config) -> set[str] | None:
    """The snippets whose CUDA records concern this run: a chapter's (--chapter), those a `-k` expression names
    (`-k optimizations/two_ops`), all of them (None) for any other run of the snippets' checks or of the whole
    suite, none for a run of other tests (the state of the CUDA records is not its business). Read from the
    command line, as the controller of an xdist run holds no items."""
    if (chosen := chapter_of(config)) is not None:
        return set(chosen["snippets"])
    paths = [Path(arg.split("::")[0]).resolve() for arg in config.args] or [ROOT]
    if not any(path.is_dir() or path.name == "test_facts.py" for path in paths):
        return set()
    if keyword := config.getoption("keyword", ""):  # `-k optimizations/two_ops`: the snippets it names
        from _pytest.mark.expression import Expression

        from scripts import records

        snippets = records.find_snippets()
        expression = Expression.compile(keyword)
        parts = {part.removesuffix(".py") for s in snippets for part in s.split("/")}

        def names(snippet: str, name: str, **_) -> bool:
            """A word with a '/', or a snippet's folder or name, selects the snippets it is in; any other word
            ('committed_record', 'cuda') selects nothing, and stays true, so it narrows nothing."""
            if "/" in name or name.removesuffix(".py") in parts:
                return name.lower() in snippet.lower()
            return True

        named = {s for s in snippets if expression.evaluate(functools.partial(names, s))}
        if named and len(named) < len(snippets):
            return named
    return None
