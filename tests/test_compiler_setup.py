"""scripts/compiler_setup.py: the suite's fresh runs start from the machine's compiler set-up; records do not."""

import os
import subprocess
import sys

import pytest
from test_facts import SETUP

from scripts import compiler_setup, regenerate

pytestmark = pytest.mark.kept  # slow; reads only the checkout: kept while it is unchanged (tests/conftest.py)


def test_the_set_up_is_made_once_and_holds_the_test_programs_and_the_shared_tmpdir():
    folder = compiler_setup.prepare(SETUP)
    made = (folder / compiler_setup.READY).stat().st_mtime_ns
    assert compiler_setup.prepare(SETUP) == folder  # made once: the next caller finds it
    assert (folder / compiler_setup.READY).stat().st_mtime_ns == made
    programs = list((folder / compiler_setup.ISA_PROGRAMS).rglob("*.so.load_ok"))
    assert programs, "no vector-ISA test program was built and loaded"
    assert (folder / compiler_setup.HEADERS).is_dir()


def test_a_suite_run_starts_from_the_set_up_and_a_record_s_run_from_nothing(tmp_path):
    folder = compiler_setup.prepare(SETUP)
    env, _ = regenerate.snippet_env(tmp_path / "suite", "cpu", "import torch\n", folder)
    cache = tmp_path / "suite" / "cache" / "inductor"
    assert env["TORCHINDUCTOR_CACHE_DIR"] == str(cache) and list(cache.rglob("*.so.load_ok"))
    assert env["TMPDIR"] == str(folder / compiler_setup.HEADERS)
    # The recorder's processes build it all, as a reader's first run does: a compile time includes it.
    env, _ = regenerate.snippet_env(tmp_path / "record", "cpu", "import torch\n")
    assert not (tmp_path / "record" / "cache" / "inductor").exists()
    assert env["TMPDIR"] == str(tmp_path / "record" / "tmp")
    assert regenerate.RunSpec("cpu", tmp_path, tmp_path).setup is None


def test_inductor_finds_the_set_up_s_test_programs_and_builds_none(tmp_path):
    """A run started from the set-up asks the compiler nothing to learn the vector ISA: Inductor finds each
    test program built and loaded, and picks the ISA the set-up's own process picked."""
    folder = compiler_setup.prepare(SETUP)
    env, _ = regenerate.snippet_env(tmp_path, "cpu", "import torch\n", folder)
    before = sorted(p.name for p in (tmp_path / "cache" / "inductor").rglob("*"))
    picked = subprocess.run([sys.executable, "-c", compiler_setup.BUILD], env=env, capture_output=True,
                            text=True, cwd=os.getcwd())
    assert picked.returncode == 0, picked.stderr
    assert picked.stdout == (folder / compiler_setup.READY).read_text()
    assert sorted(p.name for p in (tmp_path / "cache" / "inductor").rglob("*")) == before
