"""scripts/regenerate.py (`python -m scripts.regenerate`) on a throw-away tree of tiny snippets: recording,
scrubbing, freshness, atomicity, compiler caches, --list, archives and bad input."""

from __future__ import annotations

import hashlib
import io
import json
import os
import signal
import socket
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

from scripts import budget, records
from scripts.regenerate import cuda_available, recover

pytestmark = pytest.mark.kept  # slow; reads only the checkout: kept while it is unchanged (tests/conftest.py)

ROOT = records.ROOT
# The one bound on a subprocess here: far beyond what load makes of these runs (seconds each), so that only a
# hang reaches it, and says so; no test fails because a loaded machine was slow.
HANG_S = 1800

HELLO = """\
# --8<-- [start:greet]
print("hello from", __file__)
# --8<-- [end:greet]
print("object at 0x7f3a2b4c5d6e")
results = {"answer": 42}
"""

# What the snippet's process sees of its compiler caches, as digests: the paths themselves are scrubbed.
CACHES = """\
import hashlib, os
def digest(name):
    return hashlib.sha256(os.environ[name].encode()).hexdigest()
results = {"inductor": digest("TORCHINDUCTOR_CACHE_DIR"), "triton": digest("TRITON_CACHE_DIR"),
           "cuda_visible": os.environ.get("CUDA_VISIBLE_DEVICES"),
           "interpret": os.environ.get("TRITON_INTERPRET")}
"""

# Writes its pid into its working folder (the record's files/), then waits to be stopped.
SLOW = """\
import os, time
print("new output", flush=True)
with open("pid.tmp", "w") as f:
    f.write(str(os.getpid()))
os.rename("pid.tmp", "pid")
time.sleep(600)
"""


@pytest.fixture
def tree(tmp_path):
    """A project-like layout: snippets/demo/hello.py; outputs/ and failed/ made by the recorder."""
    (tmp_path / "snippets" / "demo").mkdir(parents=True)
    (tmp_path / "snippets" / "demo" / "hello.py").write_text(HELLO)
    return tmp_path


def command(tree, *args, device="cpu", python=sys.executable):
    return [
        python, "-m", "scripts.regenerate", *(["--device", device] if device else []),
        "--snippets-dir", str(tree / "snippets"), "--outputs-dir", str(tree / "outputs"),
        "--failed-dir", str(tree / "failed"), *args,
    ]


def regenerate(tree, *args, device="cpu", env=None, popen=None):
    if popen is not None:
        return subprocess.Popen(command(tree, *args, device=device), cwd=ROOT, text=True, env=env, **popen)
    return subprocess.run(command(tree, *args, device=device), cwd=ROOT, capture_output=True, text=True,
                          timeout=HANG_S, env=env)


def record(tree, name="demo/hello", device="cpu"):
    return tree / "outputs" / device / name


def summary(result):
    return result.stdout.strip().splitlines()[-1]


def listed(result) -> dict[str, str]:
    """snippet -> state, from the lines of `--list` between its header and its count line."""
    lines = result.stdout.strip().splitlines()
    return {line.split()[1]: line.split()[0] for line in lines[1:-1]}


def write(tree, name, text):
    path = tree / "snippets" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def bad(result, message):
    """A usage error: exit status 2 and one line on stderr naming the problem."""
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("regenerate: error:") and message in lines[0], result.stderr
    assert "Traceback" not in result.stderr
    return True


def wait_for(path: Path, seconds: float = HANG_S) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert path.exists(), f"{path} never appeared: the slow snippet never started"


def gone(pid: int, seconds: float = 300) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


# ------------------------------------------------------------------------------------------------ recording


def test_records_stdout_sections_results_and_manifest(tree):
    result = regenerate(tree)
    assert result.returncode == 0, result.stderr
    assert summary(result).startswith("regenerate (cpu): 1 ran, 0 fresh, 0 failed")
    folder = record(tree)
    manifest = json.loads((folder / "manifest.json").read_text())
    assert set(records.MANIFEST_KEYS) <= set(manifest)
    assert manifest["snippet"] == "snippets/demo/hello.py" and manifest["exit_status"] == 0
    assert manifest["sha256"] == hashlib.sha256(HELLO.encode()).hexdigest()
    assert manifest["device"] == "cpu" and manifest["environment"]["python"]
    assert manifest["files"] == ["results.json"]
    assert json.loads((folder / "files" / "results.json").read_text()) == {"answer": 42}
    sections = json.loads((folder / "sections.json").read_text())
    assert sections["greet"].startswith("hello from") and "object at" not in sections["greet"]
    assert "object at" in sections[""]
    assert records.record("demo/hello.py", "cpu", tree / "outputs", tree / "snippets").state == "fresh"
    assert not [p for p in (tree / "outputs").rglob(".*") if p.name != ".lock"], "a hidden folder was left behind"


def test_private_text_is_scrubbed(tree):
    host = socket.gethostname()
    write(tree, "demo/hello.py", HELLO + "import socket\nprint('host', socket.gethostname())\n")
    assert regenerate(tree).returncode == 0
    stdout = (record(tree) / "stdout.txt").read_text()
    assert str(tree) not in stdout and "/tmp/" not in stdout
    assert stdout.startswith("hello from <tmp>/") and "snippets/demo/hello.py\n" in stdout
    assert "object at 0x<addr>" in stdout
    if len(host) >= 3:
        assert host not in stdout and "host <host>" in stdout
    sections = (record(tree) / "sections.json").read_text()
    assert str(tree) not in sections and "<tmp>/" in sections


def test_fresh_records_are_skipped_until_forced_or_edited(tree):
    assert regenerate(tree).returncode == 0
    again = regenerate(tree)
    assert "fresh   demo/hello.py" in again.stdout
    assert summary(again).startswith("regenerate (cpu): 0 ran, 1 fresh, 0 failed")
    assert summary(regenerate(tree, "--force")).startswith("regenerate (cpu): 1 ran, 0 fresh")
    write(tree, "demo/hello.py", HELLO + "print('edited')\n")
    assert listed(regenerate(tree, "--list")) == {"demo/hello.py": "stale"}
    assert summary(regenerate(tree)).startswith("regenerate (cpu): 1 ran")
    assert (record(tree) / "stdout.txt").read_text().endswith("edited\n")


def test_a_failing_snippet_keeps_the_old_record_and_its_output(tree):
    assert regenerate(tree).returncode == 0
    before = {p.name: p.read_bytes() for p in record(tree).iterdir() if p.is_file()}
    write(tree, "demo/hello.py", "print('partial')\nraise SystemExit('broken on purpose')\n")
    result = regenerate(tree)
    assert result.returncode == 1
    assert "FAILED  demo/hello.py" in result.stdout and "broken on purpose" in result.stdout
    assert summary(result).startswith("regenerate (cpu): 0 ran, 0 fresh, 1 failed")
    assert {p.name: p.read_bytes() for p in record(tree).iterdir() if p.is_file()} == before
    kept = tree / "failed" / "cpu" / "demo" / "hello"
    assert (kept / "stdout.txt").read_text() == "partial\n"
    assert "broken on purpose" in (kept / "stderr.txt").read_text()
    assert json.loads((kept / "manifest.json").read_text())["exit_status"] == 1
    # The record is still the old one, but the snippet as it is now failed: --list says so.
    assert listed(regenerate(tree, "--list")) == {"demo/hello.py": "failed"}


def test_a_failing_snippet_with_no_record_is_listed_as_failed(tree):
    write(tree, "demo/hello.py", "raise SystemExit('broken on purpose')\n")
    assert regenerate(tree).returncode == 1
    assert not record(tree).exists()
    assert listed(regenerate(tree, "--list")) == {"demo/hello.py": "failed"}


def test_a_snippet_that_ran_on_another_device_fails(tree):
    # A CUDA run whose JAX found no GPU would otherwise file CPU results as CUDA ones (here the other way).
    write(tree, "demo/hello.py", "results = {'device': 'cuda'}\n")
    result = regenerate(tree)
    assert result.returncode == 1
    assert "FAILED  demo/hello.py" in result.stdout and "it ran on cuda, not cpu" in result.stdout
    assert not record(tree).exists()
    write(tree, "demo/hello.py", "results = {'device': 'cpu'}\n")
    assert regenerate(tree).returncode == 0 and record(tree).exists()


def test_a_snippet_its_stack_cannot_run_is_recorded_as_the_one_line_why(tree, monkeypatch, capsys):
    from scripts import regenerate as recorder
    from scripts import skips

    why = "not run: this stack cannot (a test's reason)"
    monkeypatch.setattr(skips, "CANNOT_RUN", [skips.Limit(lambda snippet: snippet == "demo/hello.py", why,
                                                          lambda env: env.get("CUDA_VISIBLE_DEVICES") == "")])
    monkeypatch.setattr(recorder.signal, "signal", lambda *args: None)  # leave the test worker's handlers be
    assert recorder.main(command(tree)[3:]) == 0
    assert why in capsys.readouterr().out
    made = records.Record("demo/hello.py", "cpu", record(tree), tree / "snippets", tree / "failed")
    assert made.state == "fresh" and made.stdout == why + "\n"
    assert made.results == {"device": "cpu", "cannot_run": why}


def test_the_known_stack_limits_apply_only_where_they_say():
    from scripts import skips

    limit, transformers_limit = skips.CANNOT_RUN
    assert transformers_limit.which("real_models/model_zoo.py") and not transformers_limit.which("graph_mode/levers.py")
    # Known by what the code does, not by name: every snippet that launches its own Triton kernels.
    assert {s for s in records.find_snippets() if limit.which(s)} >= {
        "dissecting/triton_basics.py", "graph_mode/triton_linear_relu.py", "dissecting/tile_order.py"}
    assert not limit.which("gpu_code/line_maps.py")  # compiles Triton kernels, launches none
    snippet = "dissecting/tile_order.py"
    assert skips.cannot_run("eager_mode/complex_activation.py", {"CUDA_VISIBLE_DEVICES": ""}) is None
    on_gpu = skips.cannot_run(snippet, {})
    assert on_gpu is None  # no interpreter on a GPU
    # CI's pins (triton 3.7.1) run the interpreter fine.
    assert skips.cannot_run(snippet, {"TRITON_INTERPRET": "1"}) is None


def test_a_success_clears_the_kept_failure(tree):
    write(tree, "demo/hello.py", "raise SystemExit('broken on purpose')\n")
    assert regenerate(tree).returncode == 1
    assert (tree / "failed" / "cpu" / "demo" / "hello").exists()
    write(tree, "demo/hello.py", HELLO)
    assert regenerate(tree).returncode == 0
    assert not (tree / "failed" / "cpu" / "demo" / "hello").exists()
    assert listed(regenerate(tree, "--list")) == {"demo/hello.py": "fresh"}


def test_a_hanging_snippet_times_out_and_the_others_go_on(tree):
    write(tree, "demo/hang.py", "import time\nprint('waiting', flush=True)\ntime.sleep(600)\n")
    result = regenerate(tree, "--timeout", "2")
    assert result.returncode == 1
    assert "timed out after 2 s" in result.stdout
    assert summary(result).startswith("regenerate (cpu): 1 ran, 0 fresh, 1 failed")
    assert (record(tree) / "manifest.json").exists()
    assert not record(tree, "demo/hang").exists()
    assert (tree / "failed" / "cpu" / "demo" / "hang" / "stdout.txt").read_text() == "waiting\n"


def test_a_killed_run_leaves_the_old_record(tree):
    assert regenerate(tree).returncode == 0
    before = (record(tree) / "stdout.txt").read_text()
    write(tree, "demo/hello.py", SLOW)
    process = regenerate(tree, popen=dict(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    pid_file = record(tree).parent / f".hello.new-{process.pid}" / "files" / "pid"
    try:
        wait_for(pid_file)
    finally:
        process.kill()  # SIGKILL: no chance to clean up
        process.wait()
    snippet_pid = int(pid_file.read_text())
    os.kill(snippet_pid, signal.SIGKILL)  # in a session of its own, so it outlives the recorder
    assert (record(tree) / "stdout.txt").read_text() == before
    assert records.record("demo/hello.py", "cpu", tree / "outputs", tree / "snippets").state == "stale"
    # The next run clears the half-made folder and records the new version.
    write(tree, "demo/hello.py", HELLO + "print('next')\n")
    assert regenerate(tree).returncode == 0
    assert not pid_file.parent.parent.exists()
    assert (record(tree) / "stdout.txt").read_text().endswith("next\n")


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "Ctrl-C"])
def test_sigterm_stops_like_ctrl_c(tree, stop):
    assert regenerate(tree).returncode == 0
    before = (record(tree) / "stdout.txt").read_text()
    write(tree, "demo/hello.py", SLOW)
    # As in a terminal, whatever this test runs under: Python ignores Ctrl-C if it starts with SIGINT ignored.
    default_sigint = lambda: signal.signal(signal.SIGINT, signal.SIG_DFL)  # noqa: E731
    process = regenerate(tree, popen=dict(stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=default_sigint))
    pid_file = record(tree).parent / f".hello.new-{process.pid}" / "files" / "pid"
    try:
        wait_for(pid_file)
        snippet_pid = int(pid_file.read_text())
        process.send_signal(stop)
        out, err = process.communicate(timeout=HANG_S)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 130, err
    assert err.strip().splitlines() == [
        "regenerate: interrupted; records already replaced stay, the others are as they were"
    ]
    assert gone(snippet_pid), "the snippet outlived the recorder"
    assert (record(tree) / "stdout.txt").read_text() == before
    assert not pid_file.parent.parent.exists(), "the half-made record was left behind"


def test_recover_puts_back_a_record_caught_between_the_two_renames(tmp_path):
    device = tmp_path / "cpu"
    (device / "demo" / ".hello.old-99").mkdir(parents=True)
    (device / "demo" / ".hello.old-99" / "manifest.json").write_text("{}")
    (device / "demo" / ".other.new-99").mkdir()
    recover(device)
    assert (device / "demo" / "hello" / "manifest.json").exists()
    assert sorted(p.name for p in (device / "demo").iterdir()) == ["hello"]


def test_each_snippet_gets_compiler_caches_of_its_own(tree):
    write(tree, "demo/hello.py", CACHES)
    write(tree, "demo/other.py", CACHES)
    caller = {"TORCHINDUCTOR_CACHE_DIR": str(tree / "caller-inductor"), "TRITON_CACHE_DIR": str(tree / "caller-triton")}
    result = regenerate(tree, env=dict(os.environ, **caller))
    assert result.returncode == 0, result.stdout + result.stderr
    one = json.loads((record(tree) / "files" / "results.json").read_text())
    two = json.loads((record(tree, "demo/other") / "files" / "results.json").read_text())
    for name, key in (("TORCHINDUCTOR_CACHE_DIR", "inductor"), ("TRITON_CACHE_DIR", "triton")):
        assert one[key] != two[key], f"two snippets shared {name}"
        assert hashlib.sha256(caller[name].encode()).hexdigest() not in (one[key], two[key]), (
            f"a snippet used the caller's {name}"
        )
    assert one["inductor"] != one["triton"]
    # On CPU no GPU is visible; a snippet that launches no Triton kernel gets no interpreter (the suite's own
    # TRITON_INTERPRET does not reach it either), and the manifest says what was set.
    assert (one["cuda_visible"], one["interpret"]) == ("", None)
    manifest = json.loads((record(tree) / "manifest.json").read_text())
    assert manifest["env_overrides"] == {"CUDA_VISIBLE_DEVICES": ""}


def test_only_a_snippet_that_launches_triton_runs_in_triton_s_interpreter(tree):
    write(tree, "demo/hello.py", "import triton  # noqa: F401\n" + CACHES)
    result = regenerate(tree, env=dict(os.environ, TRITON_INTERPRET="0"))
    assert result.returncode == 0, result.stdout + result.stderr
    ran = json.loads((record(tree) / "files" / "results.json").read_text())
    assert (ran["cuda_visible"], ran["interpret"]) == ("", "1")
    manifest = json.loads((record(tree) / "manifest.json").read_text())
    assert manifest["env_overrides"] == {"CUDA_VISIBLE_DEVICES": "", "TRITON_INTERPRET": "1"}
    # One decision for every writer (scripts/run_env.py): the recorder's, the suite's and the notebooks'.
    from scripts import run_env

    assert run_env.launches_triton("import triton\n") and not run_env.launches_triton("import torch\n")
    assert 'os.environ.setdefault("TRITON_INTERPRET", "1")' in run_env.notebook_setup()


def test_the_suite_s_snippets_sleep_when_idle_and_the_recorder_s_wait_as_a_reader_s_do():
    # The suite runs snippets side by side: an idle OpenMP thread that spins takes the core another snippet's
    # thread waits for. The recorder times alone and sets nothing about it (its manifest lists what it sets).
    from scripts import run_env

    assert run_env.suite_defaults()["OMP_WAIT_POLICY"] == "PASSIVE"
    assert os.environ["OMP_WAIT_POLICY"] == "PASSIVE"  # tests/conftest.py: fresh runs inherit it
    assert "OMP_WAIT_POLICY" not in run_env.overrides("cpu", "import torch\n")
    assert "OMP_WAIT_POLICY" not in run_env.settings({"OMP_WAIT_POLICY": "PASSIVE"})  # keys no kept run


def test_a_real_model_snippet_is_not_run_where_transformers_is_missing(monkeypatch):
    """Issue 52: the GPU box has no transformers; its real-model snippets are recorded as the one line why, not
    failed, and every other snippet is unaffected."""
    from scripts import skips

    assert skips.cannot_run("real_models/model_zoo.py") is None  # installed here: the 'models' extra
    monkeypatch.setattr(skips, "_release", lambda package: () if package == "transformers" else (99,))
    reason = skips.cannot_run("real_models/model_zoo.py", env={})
    assert reason and "transformers" in reason and reason in skips.REASONS
    assert skips.cannot_run("graph_mode/levers.py", env={}) is None


# ---------------------------------------------------------------------------------------------------- --list


def test_list_names_the_device_tells_each_state_apart_and_counts(tree):
    for name in ("fresh", "stale", "corrupt", "failed"):
        write(tree, f"demo/{name}.py", f"print({name!r})\n")
    assert regenerate(tree).returncode == 0
    write(tree, "demo/stale.py", "print('edited since')\n")
    (record(tree, "demo/corrupt") / "manifest.json").write_text('{"snippet": "snippets/demo/corrupt.py", ')
    manifest = record(tree, "demo/failed") / "manifest.json"
    manifest.write_text(json.dumps(dict(json.loads(manifest.read_text()), exit_status=1)))
    write(tree, "demo/missing.py", "print('never recorded')\n")

    result = regenerate(tree, "--list")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert lines[0].startswith("CPU records under ") and lines[0].endswith("/cpu/:")
    assert listed(result) == {"demo/corrupt.py": "corrupt", "demo/failed.py": "failed", "demo/fresh.py": "fresh",
                              "demo/hello.py": "fresh", "demo/missing.py": "missing", "demo/stale.py": "stale"}
    assert lines[-1] == "CPU: 6 snippets: 2 fresh, 1 stale, 1 failed, 1 corrupt, 1 missing"
    assert not (tree / "outputs" / "cpu" / "demo" / "missing").exists(), "--list ran a snippet"


def test_list_of_cuda_records_needs_no_gpu(tree):
    result = regenerate(tree, "--list", device="cuda")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines() == [
        f"CUDA records under {tree / 'outputs'}/cuda/:",
        "  missing  demo/hello.py",
        "CUDA: 1 snippets: 1 missing",
    ]


def test_a_model_made_without_a_gpu_is_not_planned_for_cuda(tree):
    # skips.CPU_ONLY names it by its path under snippets/: a CUDA record of it would repeat its CPU record.
    (tree / "snippets" / "gpu_code").mkdir()
    (tree / "snippets" / "gpu_code" / "findings_model.py").write_text(HELLO)
    listed_cuda = regenerate(tree, "--list", device="cuda")
    assert listed_cuda.returncode == 0, listed_cuda.stderr
    assert "findings_model" not in listed_cuda.stdout and "CUDA: 1 snippets: 1 missing" in listed_cuda.stdout
    asked = regenerate(tree, "--list", "--only", "gpu_code/*", device="cuda")
    assert "not for cuda: gpu_code/findings_model.py: a GPU model made from Inductor's CUDA code" in asked.stdout
    on_cpu = regenerate(tree, "--list")
    assert "gpu_code/findings_model.py" in on_cpu.stdout and "CPU: 2 snippets: 2 missing" in on_cpu.stdout


def test_list_into_a_closed_pipe_ends_quietly(tree):
    # Far more than a pipe (64 KiB) and Python's buffer hold, so the recorder is still writing when the reader
    # goes away: 600 lines of over 200 characters.
    (tree / "snippets" / "many").mkdir()
    for i in range(600):
        (tree / "snippets" / "many" / f"{'a_long_name_' * 16}{i:04}.py").touch()
    process = regenerate(tree, "--list", popen=dict(stdout=subprocess.PIPE, stderr=subprocess.PIPE))
    first = process.stdout.readline()  # `| head -1`
    process.stdout.close()
    err = process.stderr.read()
    process.wait(timeout=HANG_S)
    assert first.startswith("CPU records under")
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
    assert process.returncode == 0


# ------------------------------------------------------------------------------------------------ arguments


def test_help_shows_the_examples():
    result = subprocess.run([sys.executable, "-m", "scripts.regenerate", "--help"], cwd=ROOT,
                            capture_output=True, text=True, timeout=HANG_S)
    assert result.returncode == 0
    assert "examples:" in result.stdout
    examples = [line.strip() for line in result.stdout.split("examples:", 1)[1].splitlines()
                if line.strip().startswith("python -m scripts.regenerate ")]
    for flag in ("--device cpu", "--list --device cuda", "--archive", "--unpack", "--only", "--force"):
        assert any(flag in example for example in examples), f"no example uses {flag}"


@pytest.mark.parametrize("seconds", ["0", "-1", "soon"])
def test_a_timeout_that_is_not_positive_is_refused(tree, seconds):
    result = regenerate(tree, "--timeout", seconds)
    assert result.returncode == 2
    errors = [line for line in result.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1 and "--timeout" in errors[0], result.stderr
    assert not (tree / "outputs").exists()


@pytest.mark.parametrize("flags, names", [
    (["--list", "--unpack", "x.tar.gz"], "--unpack"),
    (["--list", "--archive", "x.tar.gz"], "--archive"),
])
def test_flags_that_make_no_sense_together_get_one_clear_error(tree, flags, names):
    result = regenerate(tree, *flags, device=None)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1 and names in errors[0], result.stderr
    assert not (tree / "outputs").exists() and not (tree / "x.tar.gz").exists()


def test_a_python_without_torch_gets_one_line_saying_what_to_do(tree):
    python = getattr(sys, "_base_executable", None) or "python3"
    has_torch = "import importlib.util as u; print(u.find_spec('torch') is not None)"
    probe = subprocess.run([python, "-s", "-E", "-c", has_torch], capture_output=True, text=True, timeout=HANG_S)
    if probe.stdout.strip() != "False":
        pytest.skip(f"{python} has torch, so the refusal cannot be shown with it")
    result = subprocess.run([python, "-s", "-E", *command(tree)[1:]], cwd=ROOT, capture_output=True, text=True,
                            timeout=HANG_S)
    assert bad(result, "has no torch")
    assert records.REMAKE in result.stderr
    assert not (tree / "outputs").exists()


def test_an_only_that_matches_nothing_is_refused(tree):
    assert bad(regenerate(tree, "--only", "nope/*"), "--only 'nope/*' matches no snippet")
    assert not (tree / "outputs").exists()


def test_cuda_without_cuda_is_refused(tree):
    if cuda_available():
        pytest.skip("this machine has CUDA, so the refusal cannot be shown here")
    assert bad(regenerate(tree, device="cuda"), "--device cuda")
    assert not (tree / "outputs").exists()


def test_an_unwritable_output_folder_is_refused(tree):
    (tree / "outputs").write_text("a file where the outputs folder should be")
    assert bad(regenerate(tree), "cannot write records to")
    assert (tree / "outputs").read_text().startswith("a file")


# -------------------------------------------------------------------------------------------------- archives


def test_archive_round_trip(tree):
    archive = tree / "records.tar.gz"
    result = regenerate(tree, "--archive", str(archive))
    assert result.returncode == 0, result.stderr
    assert "packed 1 cpu records" in result.stdout
    with tarfile.open(archive) as tar:
        names = tar.getnames()
        assert "cpu/demo/hello/manifest.json" in names
        assert not [n for n in names if "/." in n or n.startswith(".")], "hidden files were packed"
        assert {(m.uid, m.gid, m.uname, m.gname) for m in tar.getmembers()} == {(0, 0, "", "")}
    elsewhere = tree / "unpacked"
    unpacked = subprocess.run(
        [sys.executable, "-m", "scripts.regenerate", "--unpack", str(archive), "--outputs-dir", str(elsewhere)],
        cwd=ROOT, capture_output=True, text=True, timeout=HANG_S,
    )
    assert unpacked.returncode == 0, unpacked.stderr
    assert "unpacked 1 records" in unpacked.stdout
    originals = sorted(record(tree).rglob("*"))
    assert originals
    for original in originals:
        copy = elsewhere / original.relative_to(tree / "outputs")
        assert copy.exists() and (original.is_dir() or copy.read_bytes() == original.read_bytes())
    assert not list(elsewhere.rglob(".*")), "unpacking left hidden folders behind"
    assert records.record("demo/hello.py", "cpu", elsewhere, tree / "snippets").state == "fresh"


def test_an_archive_is_refused_while_a_snippet_failed_and_carries_failures_when_asked(tree):
    assert regenerate(tree).returncode == 0
    (tree / "snippets" / "demo" / "hello.py").write_text(HELLO + "raise SystemExit('broken on this box')\n")
    archive = tree / "records.tar.gz"
    refused = regenerate(tree, "--archive", str(archive))
    assert refused.returncode == 1 and "not packing" in refused.stderr and "--pack-failed" in refused.stderr
    assert not archive.exists()
    packed = regenerate(tree, "--archive", str(archive), "--pack-failed")
    assert "with 1 failed run(s)" in packed.stdout
    with tarfile.open(archive) as tar:
        assert "failed/cpu/demo/hello/manifest.json" in tar.getnames()
    home = tree / "home"
    unpacked = subprocess.run(
        [sys.executable, "-m", "scripts.regenerate", "--unpack", str(archive), "--outputs-dir", str(home / "o"),
         "--failed-dir", str(home / "failed")], cwd=ROOT, capture_output=True, text=True, timeout=HANG_S)
    assert unpacked.returncode == 0, unpacked.stderr
    at_home = records.Record("demo/hello.py", "cpu", home / "o" / "cpu" / "demo" / "hello", tree / "snippets",
                             home / "failed")
    assert at_home.state == "failed"  # the old record came along, but it does not read fresh


def unpack(tree, archive):
    return subprocess.run(
        [sys.executable, "-m", "scripts.regenerate", "--unpack", str(archive), "--outputs-dir", str(tree / "o")],
        cwd=ROOT, capture_output=True, text=True, timeout=HANG_S,
    )


@pytest.mark.parametrize("member", ["../escape.txt", "/abs/escape.txt", "gpu/demo/hello/manifest.json"])
def test_an_archive_with_a_bad_member_is_refused(tree, member):
    evil = tree / "evil.tar.gz"
    with tarfile.open(evil, "w:gz") as tar:
        info = tarfile.TarInfo(member)  # named as given: tar.add would drop a leading /
        info.size = 1
        tar.addfile(info, io.BytesIO(b"x"))
    assert bad(unpack(tree, evil), f"refusing member {member!r}")
    assert not (tree / "escape.txt").exists() and not (tree / "o" / "gpu").exists()


def test_an_archive_with_a_link_is_refused(tree):
    evil = tree / "evil.tar.gz"
    with tarfile.open(evil, "w:gz") as tar:
        info = tarfile.TarInfo("cpu/demo/hello/stdout.txt")
        info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
        tar.addfile(info)
    assert bad(unpack(tree, evil), "refusing member 'cpu/demo/hello/stdout.txt'")


def test_an_archive_with_a_corrupt_record_is_refused_and_nothing_is_put_in_place(tree):
    evil = tree / "evil.tar.gz"
    manifest = tree / "manifest.json"
    manifest.write_text('{"snippet": ')
    with tarfile.open(evil, "w:gz") as tar:
        tar.add(manifest, arcname="cpu/demo/hello/manifest.json")
    assert bad(unpack(tree, evil), "cpu/demo/hello")
    assert not (tree / "o" / "cpu" / "demo" / "hello").exists()


def test_a_file_that_is_not_an_archive_is_refused(tree):
    junk = tree / "junk.tar.gz"
    junk.write_text("not an archive")
    assert bad(unpack(tree, junk), "cannot read archive")


# A snippet that "times" something: each process draws its own median, and says whether its compiler cache
# was empty when it started.
TIMED = """\
import os, random
median = random.uniform(1, 100)
cache = os.environ["TORCHINDUCTOR_CACHE_DIR"]
cold = 0 if os.path.exists(cache) else 1
os.makedirs(cache, exist_ok=True)
open(os.path.join(cache, "kernel"), "w").close()
results = {"timing": {"f": {"median_us": median, "times_us": [median] * 3, "n": 3, "work": "f()", "threads": 1}},
           "printed": median, "cold": cold}
print("median", median)
"""


def test_a_timed_snippet_runs_in_several_processes_and_pools_its_timings(tree):
    (tree / "snippets" / "demo" / "timed.py").write_text(TIMED)
    result = regenerate(tree, "--only", "demo/timed.py", "--processes", "3")
    assert result.returncode == 0, result.stderr
    assert "process 3/3" in result.stdout
    results = json.loads((record(tree, "demo/timed") / "files" / "results.json").read_text())
    timing = results["timing"]["f"]
    assert timing["processes"] == 3 and len(timing["process_medians_us"]) == 3 and timing["n"] == 9
    assert len(set(timing["process_medians_us"])) == 3  # three processes, three draws
    # The printout is the first process's; a number the processes measured differently is their median.
    stdout = (record(tree, "demo/timed") / "stdout.txt").read_text()
    assert stdout == f"median {timing['process_medians_us'][0]}\n"
    assert results["printed"] == sorted(timing["process_medians_us"])[1]
    # Each process compiled from cold: none found the cache an earlier one filled.
    assert results["cold"] == 1 and "cold" not in results.get("process_values", {})
    provenance = records.Record("demo/timed.py", "cpu", record(tree, "demo/timed"), tree / "snippets").provenance()
    assert "timed on 1 thread in 3 fresh processes" in provenance


def test_a_draft_is_remade_by_the_next_run_with_more_processes_and_listed_as_a_draft(tree):
    (tree / "snippets" / "demo" / "timed.py").write_text(TIMED)
    assert regenerate(tree, "--only", "demo/timed.py", "--processes", "1").returncode == 0
    listed = regenerate(tree, "--list", "--only", "demo/timed.py").stdout
    assert "draft" in next(line for line in listed.splitlines() if line.endswith("demo/timed.py"))
    assert "(1 of them drafts, made in one process)" in listed
    again = regenerate(tree, "--only", "demo/timed.py", "--processes", "1")
    assert "1 fresh" in summary(again)  # a draft run again as a draft: nothing to do
    full = regenerate(tree, "--only", "demo/timed.py", "--processes", "3")
    assert full.returncode == 0 and "process 3/3" in full.stdout and "1 ran" in summary(full)
    results = json.loads((record(tree, "demo/timed") / "files" / "results.json").read_text())
    assert results["timing"]["f"]["processes"] == 3
    assert "1 fresh" in summary(regenerate(tree, "--only", "demo/timed.py", "--processes", "3"))


def test_a_snippet_whose_later_process_fails_keeps_its_old_record(tree):
    snippet = tree / "snippets" / "demo" / "timed.py"
    snippet.write_text(TIMED)
    assert regenerate(tree, "--only", "demo/timed.py", "--processes", "2").returncode == 0
    before = (record(tree, "demo/timed") / "files" / "results.json").read_text()
    # The first process passes; every later one finds the mark the first left, and fails.
    snippet.write_text(TIMED + 'mark = os.environ["FAIL_MARK"]\nif os.path.exists(mark):\n'
                               '    raise SystemExit("a later process failed")\nopen(mark, "w").close()\n')
    result = regenerate(tree, "--only", "demo/timed.py", "--processes", "3",
                        env=dict(os.environ, FAIL_MARK=str(tree / "mark")))
    assert result.returncode == 1
    assert "in process 2 of 3" in result.stdout
    assert (record(tree, "demo/timed") / "files" / "results.json").read_text() == before


def test_unpacking_files_each_record_under_the_torch_release_that_made_it(tree):
    # A GPU box on an older torch: its records go beside the main release's, never over them.
    assert regenerate(tree).returncode == 0
    manifest = record(tree) / "manifest.json"
    made = json.loads(manifest.read_text())
    manifest.write_text(json.dumps({**made, "environment": {**made["environment"], "torch": "2.11.0+cu130"}}))
    archive = tree / "records.tar.gz"
    assert regenerate(tree, "--archive", str(archive)).returncode == 0
    home = tree / "home"
    unpacked = subprocess.run(
        [sys.executable, "-m", "scripts.regenerate", "--unpack", str(archive), "--outputs-dir", str(home)],
        cwd=ROOT, capture_output=True, text=True, timeout=HANG_S)
    assert unpacked.returncode == 0, unpacked.stderr
    assert (home / "torch-2.11.0" / "cpu" / "demo" / "hello" / "manifest.json").is_file()
    assert not (home / "cpu").exists()
    shown = records.record("demo/hello.py", "cpu", home, tree / "snippets")
    assert shown.release == "2.11.0" and shown.site_path == "outputs/torch-2.11.0/cpu/demo/hello"


def test_list_by_default_gives_a_column_per_torch_release():
    result = subprocess.run([sys.executable, "-m", "scripts.regenerate", "--list", "--device", "cpu",
                             "--only", "eager_mode/*"], cwd=ROOT, capture_output=True, text=True, timeout=HANG_S)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[1].split()[:2] == ["torch", records.MAIN]
    assert any(line.startswith(f"CPU, torch {records.MAIN} (main): ") for line in lines)
    made = [r for r in records.release_roots() if records.find_records("cpu", records.release_root(r))]
    assert len([line for line in lines if line.startswith("CPU, torch ")]) == len(set(made) | {records.MAIN})


def test_the_venv_the_recorder_runs_in_is_scrubbed_wherever_it_lies():
    from scripts import regenerate as recorder

    scrub = recorder.scrubber([])
    inside = f"{sys.prefix}/lib/site-packages/torch/profiler.py:2: UserWarning"
    assert scrub(inside) == ("<venv>/lib/site-packages/torch/profiler.py:2: UserWarning"
                             if sys.prefix != sys.base_prefix else inside)


# ---------------------------------------------------------------------------------------------- budgeted parts


def with_duration(tree, name: str, seconds: float) -> None:
    """Say that a snippet's last record took `seconds`, which a budgeted run expects it to take again."""
    path = record(tree, f"demo/{name}") / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest["duration_s"] = seconds
    path.write_text(json.dumps(manifest))


def members(archive: Path) -> set[str]:
    with tarfile.open(archive) as tar:
        return {Path(n).parts[2] for n in tar.getnames() if len(Path(n).parts) > 2}


def test_a_budgeted_run_starts_only_what_fits_packs_what_it_made_and_the_next_part_goes_on(tree):
    for name in ("a", "b", "c"):
        (tree / "snippets" / "demo" / f"{name}.py").write_text(f"print('{name}')\nresults = {{}}\n")
    assert regenerate(tree).returncode == 0
    with_duration(tree, "b", 1000)  # expected to take longer than the first part's budget
    for name in ("a", "b", "c", "hello"):  # every record stale
        path = tree / "snippets" / "demo" / f"{name}.py"
        path.write_text(path.read_text() + "# changed\n")
    first = regenerate(tree, "--budget", "60", "--archive", str(tree / "part1.tar.gz"))
    assert first.returncode == 0, first.stderr
    assert "later   demo/b.py: expected 1000 s" in first.stdout
    assert "3 ran, 0 fresh, 0 failed" in first.stdout and "1 left for a later part" in first.stdout
    assert members(tree / "part1.tar.gz") == {"a", "c", "hello"}  # what this part made, not b's old record

    second = regenerate(tree, "--budget", "30m", "--archive", str(tree / "part2.tar.gz"))
    assert second.returncode == 0, second.stderr
    assert "1 ran, 3 fresh, 0 failed" in second.stdout
    assert members(tree / "part2.tar.gz") == {"b"}

    home = tree / "home"
    both = subprocess.run([sys.executable, "-m", "scripts.regenerate", "--unpack", str(tree / "part1.tar.gz"),
                           str(tree / "part2.tar.gz"), "--outputs-dir", str(home)],
                          cwd=ROOT, capture_output=True, text=True, timeout=HANG_S)
    assert both.returncode == 0, both.stderr
    assert both.stdout.count("unpacked") == 2
    states = {name: records.Record(f"demo/{name}.py", "cpu", home / "cpu" / "demo" / name, tree / "snippets").state
              for name in ("a", "b", "c", "hello")}
    assert states == dict.fromkeys(states, "fresh")


def test_a_budgeted_run_stops_a_snippet_that_overruns_the_budget(tree):
    assert regenerate(tree).returncode == 0
    (tree / "snippets" / "demo" / "hello.py").write_text(SLOW)
    with_duration(tree, "hello", 1)  # it took a second last time; now it hangs
    started = time.monotonic()
    done = regenerate(tree, "--budget", "26")  # 20 s of it are kept for packing: 6 s to run in
    assert time.monotonic() - started < 26
    assert done.returncode == 1 and "timed out after" in done.stdout
    assert (record(tree) / "stdout.txt").read_text().startswith("hello from")  # the old record stands


def test_a_snippet_the_budget_stops_is_expected_at_home_to_need_at_least_what_it_showed(tree):
    assert regenerate(tree).returncode == 0
    (tree / "snippets" / "demo" / "hello.py").write_text(SLOW)
    with_duration(tree, "hello", 0.1)  # the estimate says a tenth of a second; it needs more (a cut is >= 1 s)
    done = regenerate(tree, "--budget", "26", "--archive", str(tree / "part.tar.gz"))
    assert done.returncode == 1 and "the budget stopped it" in done.stdout, done.stdout
    seen = json.loads((tree / "outputs" / "cpu" / records.STOPS).read_text())["demo/hello.py"]
    assert seen["at_least_s"] >= seen["ran_s"] >= 1 and "timed out after" in seen["detail"]
    with tarfile.open(tree / "part.tar.gz") as tar:
        assert f"cpu/{records.STOPS}" in tar.getnames()  # it travels home with the part
    home = tree / "home"
    unpacked = subprocess.run([sys.executable, "-m", "scripts.regenerate", "--unpack", str(tree / "part.tar.gz"),
                               "--outputs-dir", str(home)], cwd=ROOT, capture_output=True, text=True, timeout=HANG_S)
    assert unpacked.returncode == 0, unpacked.stderr
    assert json.loads((home / "cpu" / records.STOPS).read_text()) == {"demo/hello.py": seen}
    plan = regenerate(tree, "--list", "--budget", "9m")
    line = next(line for line in plan.stdout.splitlines() if line.strip().endswith(")") and "hello" in line)
    assert "a budget stopped it" in line and float(line.split()[0]) == pytest.approx(seen["at_least_s"], abs=0.1)


def test_a_stopped_snippet_needs_the_processes_it_did_not_reach():
    """What finished counts as it was; each process not reached takes at least their mean and the cut one."""
    assert budget.at_least(184.4, "timed out after 77.9 s in process 2 of 5", 5) == pytest.approx(532.5)
    assert budget.at_least(300, "timed out after 120 s in process 3 of 5", 5) == pytest.approx(540)
    assert budget.at_least(50, "timed out after 50 s", 5) == 50  # the first process: whether it repeats is unknown


def test_the_plan_shares_the_work_between_parts_in_priority_order(tree):
    for name in ("a", "b", "c"):
        (tree / "snippets" / "demo" / f"{name}.py").write_text("results = {}\n")
    assert regenerate(tree).returncode == 0
    for name, seconds in (("a", 300), ("b", 200), ("c", 600), ("hello", 100)):
        with_duration(tree, name, seconds)
        path = tree / "snippets" / "demo" / f"{name}.py"
        path.write_text(path.read_text() + "# changed\n")
    plan = regenerate(tree, "--list", "--budget", "9m")
    assert plan.returncode == 0, plan.stderr
    lines = plan.stdout.splitlines()
    assert "part 1: 2 snippets, about 300 s" in lines  # hello and b, shortest first
    assert "part 2: 1 snippets, about 300 s" in lines
    assert any(line.startswith("no part: demo/c.py") for line in lines)


@pytest.mark.parametrize("budget", ["0", "20s", "nine minutes", "-5m"])
def test_a_budget_that_leaves_nothing_to_run_is_refused(tree, budget):
    result = regenerate(tree, "--budget", budget)
    errors = [line for line in result.stderr.splitlines() if "error:" in line]
    assert result.returncode == 2 and len(errors) == 1 and "--budget" in errors[0], result.stderr
    assert not (tree / "outputs").exists()


def test_a_stopped_budgeted_part_still_packs_what_it_finished(tree):
    assert regenerate(tree).returncode == 0
    hello = tree / "snippets" / "demo" / "hello.py"
    hello.write_text(hello.read_text() + "# changed\n")
    (tree / "snippets" / "demo" / "slow.py").write_text(SLOW)  # expected to take as long as hello did
    archive = tree / "part.tar.gz"
    running = regenerate(tree, "--budget", "9m", "--archive", str(archive),
                         popen={"stdout": subprocess.PIPE, "stderr": subprocess.PIPE})
    deadline = time.monotonic() + 60
    while not list(record(tree).parent.glob(".slow.new-*/files/pid")) and time.monotonic() < deadline:
        time.sleep(0.1)
    running.send_signal(signal.SIGTERM)
    _, err = running.communicate(timeout=HANG_S)
    assert running.returncode == 130
    assert "stopped: packed the 1 cpu records this part made" in err
    assert members(archive) == {"hello"}


TIMES_SOMETHING = """\
import time
start = time.perf_counter()
results = {"timing": {"median_us": 1.0, "times_us": [1.0] * 10, "n": 10, "iqr_us": 0.0}}
"""


def test_jobs_run_side_by_side_and_what_the_lock_cannot_cover_alone_in_its_turn(tree):
    for name in ("a", "b", "c"):
        (tree / "snippets" / "demo" / f"{name}.py").write_text(HELLO)
    (tree / "snippets" / "demo" / "timed.py").write_text(TIMES_SOMETHING)  # a clock the lock cannot see
    (tree / "snippets" / "demo" / "z.py").write_text(HELLO)
    result = regenerate(tree, "--jobs", "3", "--processes", "1")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("--jobs 3: 5 snippet(s) run up to 3 at a time")
    assert "the 1 that time a compile" in lines[0]
    events = [(line.split()[1], line.split()[2]) for line in lines if " running " in line or " ran " in line]
    timed_start = events.index(("running", "demo/timed.py"))
    timed_end = events.index(("ran", "demo/timed.py"))
    # Alone in its turn: every snippet before it had finished when it started, and none started until it ended.
    assert {name for kind, name in events[:timed_start] if kind == "ran"} == {f"demo/{n}.py" for n in "abc"} | {
        "demo/hello.py"}
    assert timed_end == timed_start + 1 and events[timed_end + 1] == ("running", "demo/z.py")
    for name in ("a", "b", "c", "hello", "z"):
        assert json.loads((record(tree, f"demo/{name}") / "manifest.json").read_text())["side_by_side"] == 3
    assert "side_by_side" not in json.loads((record(tree, "demo/timed") / "manifest.json").read_text())
    assert "regenerate (cpu): 6 ran, 0 fresh, 0 failed" in lines[-1]


def test_jobs_must_be_at_least_one(tree):
    result = regenerate(tree, "--jobs", "0")
    assert result.returncode == 2 and "--jobs must be 1 or more, not 0" in result.stderr


def test_a_cuda_estimate_from_a_cpu_record_counts_the_processes_of_a_snippet_that_times_only_on_a_gpu(tree):
    # Its CPU record holds no timing, but its code makes timings (benchmark.Timer): on a GPU it runs in
    # records.PROCESSES fresh processes, so one CPU run's duration is one process's share.
    (tree / "snippets" / "demo" / "gpu_timed.py").write_text(
        "# on a GPU: benchmark.Timer(...).blocked_autorange()\nresults = {}\n")
    (tree / "snippets" / "demo" / "untimed.py").write_text("results = {}\n")
    assert regenerate(tree).returncode == 0
    with_duration(tree, "gpu_timed", 40)
    with_duration(tree, "untimed", 40)
    plan = regenerate(tree, "--list", "--budget", "9m", device="cuda")
    assert plan.returncode == 0, plan.stderr
    words = " ".join(plan.stdout.split())  # the columns' widths are the printout's business
    assert f"200.0 s demo/gpu_timed.py (its CPU record × {records.PROCESSES} processes" in words
    assert "40.0 s demo/untimed.py (its CPU record (torch" in words


# ------------------------------------------------------------------------------ the recorder on the ground floor

# The modules that make and judge records, which the GPU box runs with nothing but torch (issue 53).
RECORDER = ("scripts.runner", "scripts.run_env", "scripts.records", "scripts.measures", "scripts.skips",
            "scripts.budget", "scripts.regenerate", "scripts.reproducibility", "scripts.notebook_runs",
            "scripts.directives", "scripts.manifest", "scripts.packing", "scripts.probe", "scripts.alone",
            "scripts.nvml", "scripts.side_by_side", "scripts.compiler_setup")
# What builds the site: the docs tools, the charts, and every module that renders a page or a notebook.
SITE = ("mkdocs", "mkdocs_jupyter", "matplotlib", "scripts.render", "scripts.mkdocs_hooks", "scripts.notebooks",
        "scripts.plots", "scripts.changelog", "scripts.findings", "scripts.atlas", "scripts.explorer",
        "scripts.diagrams", "scripts.glossary", "scripts.publish", "scripts.vendor_assets")
# Run before the code under test: the site's packages cannot be imported at all, as on the GPU box.
NO_SITE = ("import sys\n"
           "for name in ('mkdocs', 'mkdocs_jupyter', 'matplotlib'):\n"
           "    sys.modules[name] = None  # `import mkdocs` (or mkdocs.utils) now raises ImportError\n")


def loaded_by(module: str) -> list[str]:
    """The modules a clean interpreter holds after importing `module` alone."""
    code = f"import importlib, json, sys\nimportlib.import_module({module!r})\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=HANG_S)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.parametrize("module", RECORDER)
def test_a_recorder_module_imports_nothing_of_the_site(module):
    site = [name for name in loaded_by(module) if name.split(".")[0] in SITE or name in SITE]
    assert not site, f"importing {module} loads {', '.join(site)}: the recorder must run without the site"


def run_without_site(*argv: str) -> subprocess.CompletedProcess:
    code = NO_SITE + (f"import runpy\nsys.argv = ['scripts.regenerate', *{list(argv)!r}]\n"
                      "runpy.run_module('scripts.regenerate', run_name='__main__', alter_sys=True)\n")
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=HANG_S)


def test_the_recorder_lists_and_plans_with_mkdocs_and_matplotlib_unimportable():
    helped = run_without_site("--help")
    assert helped.returncode == 0 and "--list" in helped.stdout, helped.stderr
    listed = run_without_site("--list", "--device", "cpu")
    assert listed.returncode == 0, listed.stderr
    assert "eager_mode/complex_activation.py" in listed.stdout and "snippets:" in listed.stdout
    # A budgeted plan reads the pages' md:compare directives: the grammar, without mkdocs.
    planned = run_without_site("--list", "--device", "cuda", "--budget", "10m")
    assert planned.returncode == 0, planned.stderr
    assert "records are fresh" in planned.stdout or "compared" in planned.stdout


def test_the_budget_reads_md_compare_with_the_grammar_and_skips_code(tmp_path):
    from scripts import budget

    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text(
        "# A\n\nIt is <!-- md:compare x/one.py t.a t.b device=cpu --> here.\n\n"
        "```markdown\n<!-- md:compare x/shown.py t.a t.b -->\n```\n")
    assert budget.compared(tmp_path / "docs") == {"x/one.py"}


# A snippet timed under load: its first process measures 50 µs, every later one 2,900 µs (58×, as the
# contributor's walk of issue 53 saw); which process it is, it counts in a file beside itself.
UNSTEADY = """\
from pathlib import Path
count = Path(__file__).with_suffix(".count")
number = len(count.read_text()) if count.exists() else 0
count.write_text("x" * (number + 1))
median = 50.0 if number == 0 else 2900.0
results = {"timing": {"f": {"median_us": median, "times_us": [median] * 3, "n": 3, "work": "f()", "threads": 1}}}
print("timed")
"""


def test_a_record_whose_processes_disagree_is_marked_unsteady_warned_and_listed(tree):
    (tree / "snippets" / "demo" / "noisy.py").write_text(UNSTEADY)
    (tree / "snippets" / "demo" / "timed.py").write_text(TIMED.replace("random.uniform(1, 100)", "50.0"))
    made = regenerate(tree, "--only", "demo/noisy.py", "--only", "demo/timed.py", "--processes", "3")
    assert made.returncode == 0, made.stderr  # a record made under load is a record, but never a silent one
    assert "UNSTEADY" in made.stdout and "timing.f: process medians 50.0 to 2,900.0 µs (58×)" in made.stdout
    assert "1 record(s) made unsteady" in made.stderr and "demo/noisy.py" in made.stderr
    manifest = json.loads((record(tree, "demo/noisy") / "manifest.json").read_text())
    assert manifest["unsteady"] == {"timing.f": [50.0, 2900.0]}
    assert "unsteady" not in json.loads((record(tree, "demo/timed") / "manifest.json").read_text())
    listed = regenerate(tree, "--list")
    line = next(line for line in listed.stdout.splitlines() if line.rstrip().endswith(")") and "noisy" in line)
    assert "unsteady: timing.f 50.0–2,900.0 µs" in line
    assert not any("unsteady" in line for line in listed.stdout.splitlines() if "demo/timed.py" in line)
    assert "1 unsteady (made under load)" in listed.stdout


def test_the_recorder_s_own_cpu_run_is_the_suite_s_fresh_run_while_nothing_changed(tree, tmp_path):
    from scripts import regenerate as recorder

    assert regenerate(tree, "--processes", "1").returncode == 0
    spec = recorder.RunSpec("cpu", tree / "outputs", tree / "failed", snippets_dir=tree / "snippets")
    machine, env, notes = {"cpu": "Test CPU", "torch": "2.15.0"}, {"OMP_NUM_THREADS": "2"}, tmp_path / "notes"

    def found(**changed):
        return recorder.recorded_run("demo/hello.py", changed.get("machine", machine), changed.get("env", env),
                                     notes, tree / "snippets")

    assert found() is None  # nothing noted: a clean clone runs every snippet
    # The recorder notes its run with the probe it measured (manifest.environment(probe=True)); the suite asks
    # without one: the probe keys nothing (a contributor's walk found every check after a record ran again).
    probed = {**machine, "probe": {"eager_op_s": 1e-5, "measured_at": "2026-11-29T13:00:00"}}
    recorder.note_recorded("demo/hello.py", spec, probed, env, notes)
    assert found() == record(tree)
    # Recording it on another torch release afterwards keeps this release's note.
    recorder.note_recorded("demo/hello.py", spec, {**machine, "torch": "2.11.0"}, env, notes)
    assert found() == record(tree)
    # What the recorder and the suite each decide for a run (caches, no GPU, the interpreter, the suite's
    # sleeping idle threads) keys nothing; any other setting that changes a run, another machine or an edit of
    # the snippet makes it run again.
    assert found(env={**env, "TRITON_INTERPRET": "1", "TMPDIR": "/elsewhere", "CUDA_VISIBLE_DEVICES": "",
                      "OMP_WAIT_POLICY": "PASSIVE"})
    assert found(env={**env, "OMP_NUM_THREADS": "3"}) is None
    assert found(machine={**machine, "cpu": "Another CPU"}) is None
    write(tree, "demo/hello.py", HELLO + "print('edited')\n")
    assert found() is None
