"""scripts/regenerate.py on a throw-away tree of tiny snippets: freshness, atomicity, archives, bad input."""

import json
import os
import signal
import subprocess
import sys
import tarfile
import time

import pytest
from harness import ROOT
from regenerate import cuda_available, recover

SCRIPT = ROOT / "scripts" / "regenerate.py"

HELLO = """\
import os, pathlib
# --8<-- [start:greet]
print("hello from", __file__)
# --8<-- [end:greet]
print("object at 0x7f3a2b4c5d6e")
pathlib.Path(os.environ["SNIPPET_OUTPUT_DIR"], "results.json").write_text('{"answer": 42}')
"""


@pytest.fixture
def tree(tmp_path):
    """A project-like layout: snippets/demo/hello.py, and empty outputs and failed folders."""
    (tmp_path / "snippets" / "demo").mkdir(parents=True)
    (tmp_path / "snippets" / "demo" / "hello.py").write_text(HELLO)
    return tmp_path


def regenerate(tree, *args, popen=None):
    command = [
        sys.executable, str(SCRIPT), "--device", "cpu",
        "--snippets-dir", str(tree / "snippets"), "--outputs-dir", str(tree / "outputs"),
        "--failed-dir", str(tree / "failed"), *args,
    ]
    if popen:
        return subprocess.Popen(command, text=True, **popen)
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


def record(tree, name="demo/hello"):
    return tree / "outputs" / "cpu" / name


def summary(result):
    return result.stdout.strip().splitlines()[-1]


def test_records_stdout_sections_files_and_manifest(tree):
    result = regenerate(tree)
    assert result.returncode == 0, result.stderr
    assert summary(result).startswith("regenerate (cpu): 1 ran, 0 fresh, 0 failed")
    folder = record(tree)
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["snippet"] == "snippets/demo/hello.py" and manifest["exit_status"] == 0
    assert manifest["device"] == "cpu" and manifest["environment"]["python"]
    assert manifest["files"] == ["results.json"]
    assert json.loads((folder / "files" / "results.json").read_text()) == {"answer": 42}
    sections = json.loads((folder / "sections.json").read_text())
    assert sections["greet"].startswith("hello from")
    assert "object at" in sections[""]


def test_private_text_is_scrubbed(tree):
    assert regenerate(tree).returncode == 0
    stdout = (record(tree) / "stdout.txt").read_text()
    assert str(tree) not in stdout and "/tmp/" not in stdout
    assert stdout.startswith("hello from <tmp>/") and "snippets/demo/hello.py\n" in stdout
    assert "object at 0x<addr>" in stdout


def test_fresh_records_are_skipped_until_forced_or_edited(tree):
    assert regenerate(tree).returncode == 0
    again = regenerate(tree)
    assert "fresh   demo/hello.py" in again.stdout
    assert summary(again).startswith("regenerate (cpu): 0 ran, 1 fresh, 0 failed")
    assert summary(regenerate(tree, "--force")).startswith("regenerate (cpu): 1 ran")
    (tree / "snippets" / "demo" / "hello.py").write_text(HELLO + "print('edited')\n")
    listed = regenerate(tree, "--list")
    assert listed.stdout.split() == ["stale", "demo/hello.py"]
    assert summary(regenerate(tree)).startswith("regenerate (cpu): 1 ran")


def test_a_failing_snippet_keeps_the_old_record_and_its_output(tree):
    assert regenerate(tree).returncode == 0
    before = (record(tree) / "manifest.json").read_text()
    (tree / "snippets" / "demo" / "hello.py").write_text("print('partial')\nraise SystemExit('broken on purpose')\n")
    result = regenerate(tree)
    assert result.returncode == 1
    assert "FAILED  demo/hello.py" in result.stdout and "broken on purpose" in result.stdout
    assert summary(result).startswith("regenerate (cpu): 0 ran, 0 fresh, 1 failed")
    assert (record(tree) / "manifest.json").read_text() == before
    assert (tree / "failed" / "cpu" / "demo" / "hello" / "stdout.txt").read_text() == "partial\n"


def test_a_hanging_snippet_times_out_and_the_others_go_on(tree):
    (tree / "snippets" / "demo" / "hang.py").write_text("import time\nprint('waiting', flush=True)\ntime.sleep(600)\n")
    result = regenerate(tree, "--timeout", "2")
    assert result.returncode == 1
    assert "timed out after 2 s" in result.stdout
    assert summary(result).startswith("regenerate (cpu): 1 ran, 0 fresh, 1 failed")
    assert (record(tree) / "manifest.json").exists()
    assert not record(tree, "demo/hang").exists()


def test_a_killed_run_leaves_the_old_record(tree):
    assert regenerate(tree).returncode == 0
    before = (record(tree) / "stdout.txt").read_text()
    slow = 'import os, time\nprint("new output", flush=True)\n' \
           'open(os.environ["SNIPPET_OUTPUT_DIR"] + "/pid", "w").write(str(os.getpid()))\ntime.sleep(600)\n'
    (tree / "snippets" / "demo" / "hello.py").write_text(slow)
    process = regenerate(tree, popen=dict(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    pid_file = record(tree).parent / f".hello.new-{process.pid}" / "files" / "pid"
    deadline = time.monotonic() + 60
    while not pid_file.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert pid_file.exists(), "the slow snippet never started"
    while not pid_file.read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    process.kill()  # SIGKILL: no chance to clean up
    process.wait()
    os.kill(int(pid_file.read_text()), signal.SIGKILL)
    assert (record(tree) / "stdout.txt").read_text() == before
    # The next run clears the half-made folder and records the new version.
    (tree / "snippets" / "demo" / "hello.py").write_text(HELLO + "print('next')\n")
    assert regenerate(tree).returncode == 0
    assert not pid_file.parent.parent.exists()
    assert (record(tree) / "stdout.txt").read_text().endswith("next\n")


def test_recover_puts_back_a_record_caught_between_the_two_renames(tmp_path):
    device = tmp_path / "cpu"
    (device / "demo" / ".hello.old-99").mkdir(parents=True)
    (device / "demo" / ".hello.old-99" / "manifest.json").write_text("{}")
    (device / "demo" / ".other.new-99").mkdir()
    recover(device)
    assert (device / "demo" / "hello" / "manifest.json").exists()
    assert sorted(p.name for p in (device / "demo").iterdir()) == ["hello"]


def test_archive_round_trip(tree):
    archive = tree / "records.tar.gz"
    result = regenerate(tree, "--archive", str(archive))
    assert result.returncode == 0 and "packed 1 cpu records" in result.stdout
    with tarfile.open(archive) as tar:
        assert "cpu/demo/hello/manifest.json" in tar.getnames()
    elsewhere = tree / "unpacked"
    unpacked = subprocess.run(
        [sys.executable, str(SCRIPT), "--unpack", str(archive), "--outputs-dir", str(elsewhere)],
        capture_output=True, text=True, timeout=60,
    )
    assert unpacked.returncode == 0, unpacked.stderr
    for original in sorted(record(tree).rglob("*")):
        copy = elsewhere / original.relative_to(tree / "outputs")
        assert copy.exists() and (original.is_dir() or copy.read_bytes() == original.read_bytes())
    assert not [p for p in elsewhere.rglob(".*")], "unpacking left hidden folders behind"


def bad(result, message):
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("regenerate: error:") and message in lines[0], result.stderr
    return True


def test_an_only_that_matches_nothing_is_refused(tree):
    assert bad(regenerate(tree, "--only", "nope/*"), "--only 'nope/*' matches no snippet")
    assert not (tree / "outputs").exists()


def test_cuda_without_cuda_is_refused(tree):
    if cuda_available():
        pytest.skip("this machine has CUDA, so the refusal cannot be shown here")
    command = [sys.executable, str(SCRIPT), "--device", "cuda", "--snippets-dir", str(tree / "snippets"),
               "--outputs-dir", str(tree / "outputs")]
    assert bad(subprocess.run(command, capture_output=True, text=True, timeout=60), "--device cuda")
    assert not (tree / "outputs").exists()


def test_an_unwritable_output_folder_is_refused(tree):
    (tree / "outputs").write_text("a file where the outputs folder should be")
    assert bad(regenerate(tree), "cannot write records to")
    assert (tree / "outputs").read_text().startswith("a file")


def test_a_bad_archive_is_refused(tree):
    evil = tree / "evil.tar.gz"
    with tarfile.open(evil, "w:gz") as tar:
        payload = tree / "payload"
        payload.write_text("x")
        tar.add(payload, arcname="../escape.txt")
    result = subprocess.run([sys.executable, str(SCRIPT), "--unpack", str(evil), "--outputs-dir", str(tree / "o")],
                            capture_output=True, text=True, timeout=60)
    assert bad(result, "refusing member '../escape.txt'")
    assert not (tree / "escape.txt").exists()
