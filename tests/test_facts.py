"""Every chapter fact, checked on a fresh CPU run of its snippet and on every committed record."""

from __future__ import annotations

import functools
import os
import traceback
from pathlib import Path

import pytest
import run_cache
from facts import SKIPS, load

from scripts import compiler_setup, manifest, records, regenerate, run_env, runner, skips

CHECKS = load()
SNIPPETS = records.find_snippets()
COMMITTED = [r for r in records.all_records() if r.snippet in CHECKS]
# The one bound on a fresh run: a hang, not a slow run on a loaded machine (the recorder's own --timeout
# default, 900 s, is for a machine that makes records, and load reaches it here).
HANG_S = 3600
# The machine's compiler set-up, made once and shared by the fresh runs (scripts/compiler_setup.py).
SETUP = Path(__file__).resolve().parents[1] / ".cache" / "compiler-setup"


def test_every_snippet_has_a_check():
    unchecked = [s for s in SNIPPETS if s not in CHECKS and s not in SKIPS]
    assert not unchecked, (
        f"no check for {', '.join(unchecked)}: add `@check('<snippet>')` in tests/facts/<snippet>, "
        f"or list it in NO_CHECK in scripts/skips.py with the reason"
    )
    assert not set(CHECKS) - set(SNIPPETS), f"checks for snippets that do not exist: {set(CHECKS) - set(SNIPPETS)}"
    assert all(reason.strip() for reason in SKIPS.values()), "every entry in SKIPS needs its reason"


@functools.cache
def machine() -> dict:
    """What a record's manifest says of this machine (cache sizes, versions), for checks that read it."""
    return regenerate.environment("cpu")


@pytest.mark.parametrize("snippet", [s for s in SNIPPETS if s in CHECKS])
def test_fresh_run(snippet, tmp_path):
    if snippet.startswith("jax/"):
        pytest.importorskip("jax", reason="JAX is the optional jax extra (the README's test command installs it)")
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
    if why := skips.cannot_run(snippet, env):
        pytest.skip(why)
    source = records.SNIPPETS / snippet
    # A run that passed here before, of the same source with the same installs, is checked again as it is;
    # a clean clone (CI) has none (tests/run_cache.py).
    # The code that makes a run and its manifest.
    recorder = (runner, records, regenerate, manifest, run_env, compiler_setup)
    run_key = run_cache.key(source.read_text(), *(Path(m.__file__).read_text() for m in recorder),
                            env=run_env.keying(env))
    folder = run_cache.kept("fresh-runs", snippet, run_key)
    if folder is None and not os.environ.get(run_cache.RERUN):
        # The recorder's own run of it, made here just before from the snippet as it is, by the same code and
        # installs (scripts/regenerate.py recorded_run): the check after a record runs nothing again.
        folder = regenerate.recorded_run(snippet, machine(), env)
    if folder is None:
        # The recorder's own code, in one process, into a scratch folder: the command, environment and
        # manifest a record gets, with compiler caches of its own, started from the machine's compiler set-up
        # (the check times no compile). One process (the check reads what it printed and kept, not its
        # spread); no limit that load can reach, only one for a hang (HANG_S).
        spec = regenerate.RunSpec("cpu", tmp_path / "outputs", tmp_path / "failed", processes=1, timeout=HANG_S,
                                  setup=compiler_setup.prepare(SETUP))
        ok, _, message = regenerate.run_one(snippet, spec, machine())
        if not ok:
            pytest.fail(f"snippets/{snippet}: {message}", pytrace=False)
        folder = records.record_dir(snippet, "cpu", spec.outputs_dir)
    run = records.Record(snippet, "cpu", folder)
    # The recorder files a record under the device its snippet says it ran on; every snippet says so.
    assert run.results.get("device") == "cpu", f"snippets/{snippet}: results['device'] is {run.results.get('device')!r}"
    CHECKS[snippet](run)
    if folder != run_cache.kept("fresh-runs", snippet, run_key):
        run_cache.keep("fresh-runs", snippet, run_key, folder)


@pytest.mark.parametrize("record", COMMITTED, ids=[f"{r.device}/torch-{r.release}/{r.snippet}" for r in COMMITTED])
def test_committed_record(record):
    if record.release != records.MAIN and record.state == "stale":
        pytest.skip(f"{record.where()} was made by torch {record.release} from an older version of the snippet, "
                    f"which today's check need not fit: remake it in a venv with that release (docs/reproduce.md)")
    if why := record.results.get("cannot_run"):  # made on a stack that cannot run it: the one line says why
        assert why in skips.REASONS, f"{record.where()} was not run, for a reason scripts/skips.py does not list: {why}"
        pytest.skip(why)
    try:
        CHECKS[record.snippet](record)
    except AssertionError as error:
        # The check's own line, so that a bare `assert` still says what it held.
        where = traceback.extract_tb(error.__traceback__)[-1]
        raise AssertionError(f"{record.where()} contradicts its chapter: {str(error) or where.line}\n"
                             f"  at {Path(where.filename).relative_to(Path(__file__).parent)}:{where.lineno}") from None
