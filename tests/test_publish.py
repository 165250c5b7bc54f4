"""scripts/publish.py refuses while any record is stale, failed or corrupt, naming each one, and allows
missing records, listing them with --check. On throw-away trees."""

from __future__ import annotations

import hashlib
import json
import shutil

import pytest

from scripts import publish, records


def write_record(tree, device, name, source, **changes):
    folder = tree / "outputs" / device / "demo" / name
    folder.mkdir(parents=True)
    manifest = {"snippet": f"snippets/demo/{name}.py", "sha256": hashlib.sha256(source.encode()).hexdigest(),
                "device": device, "command": "python scripts/runner.py ...", "exit_status": 0, "duration_s": 0.1,
                "date": "2026-11-21T12:00:00+00:00", "environment": {"torch": "2.13.0"}, **changes}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    (folder / "stdout.txt").write_text("")
    (folder / "sections.json").write_text("{}")
    return folder


def source(name):
    return f"print({name!r})\n"


@pytest.fixture
def tree(tmp_path):
    """demo/{fresh,stale,failed,corrupt,missing}.py, recorded on both devices as their names say."""
    (tmp_path / "snippets" / "demo").mkdir(parents=True)
    for name in ("fresh", "stale", "failed", "corrupt", "missing"):
        (tmp_path / "snippets" / "demo" / f"{name}.py").write_text(source(name))
    for device in records.DEVICES:
        write_record(tmp_path, device, "fresh", source("fresh"))
        write_record(tmp_path, device, "stale", "print('an older version')\n")
        write_record(tmp_path, device, "failed", source("failed"), exit_status=1)
        folder = write_record(tmp_path, device, "corrupt", source("corrupt"))
        (folder / "manifest.json").write_text('{"snippet": "snippets/demo/corrupt.py", ')
    return tmp_path


def only_fresh_and_missing(tree):
    """The tree with every refused record made fresh, so only missing ones remain."""
    for device in records.DEVICES:
        for name in ("stale", "failed", "corrupt"):
            shutil.rmtree(tree / "outputs" / device / "demo" / name)
            write_record(tree, device, name, source(name))
    return tree


def check(tree):
    return publish.check(tree / "outputs", tree / "snippets")


def test_check_names_each_stale_failed_and_corrupt_record_and_lists_missing_ones(tree):
    problems, missing = check(tree)
    assert sorted(line.split() for line in problems) == sorted(
        [state, device, f"snippets/demo/{state}.py"]
        for state in ("stale", "failed", "corrupt") for device in records.DEVICES
    )
    assert sorted(line.split() for line in missing) == sorted(
        ["missing", device, "snippets/demo/missing.py"] for device in records.DEVICES
    )


def test_check_finds_no_problem_when_every_record_is_fresh_or_missing(tree):
    problems, missing = check(only_fresh_and_missing(tree))
    assert problems == []
    assert len(missing) == 2


def test_a_failed_run_kept_for_the_current_source_refuses(tree, monkeypatch):
    monkeypatch.setattr(records, "OUTPUTS", tree / "outputs")
    monkeypatch.setattr(records, "FAILED", tree / "failed")
    only_fresh_and_missing(tree)
    kept = tree / "failed" / "cpu" / "demo" / "fresh"
    kept.mkdir(parents=True)
    (kept / "manifest.json").write_text(json.dumps({"sha256": hashlib.sha256(source("fresh").encode()).hexdigest(),
                                                    "exit_status": 1}))
    problems, _ = check(tree)
    assert [line.split() for line in problems] == [["failed", "cpu", "snippets/demo/fresh.py"]]


@pytest.fixture
def checked(tree, monkeypatch):
    """publish.main() checking the tree instead of the repository."""
    real = publish.check
    monkeypatch.setattr(publish, "check", lambda: real(tree / "outputs", tree / "snippets"))
    monkeypatch.setattr(publish.subprocess, "run", lambda *a, **k: pytest.fail(f"publish built the site: {a}"))
    return tree


@pytest.mark.parametrize("flags", [["--check"], [], ["--deploy"]])
def test_main_refuses_naming_each_record_and_builds_nothing(checked, capsys, flags):
    assert publish.main(flags) == 1
    out = capsys.readouterr()
    for state in ("stale", "failed", "corrupt"):
        for device in records.DEVICES:
            assert f"{state:8} {device:4}  snippets/demo/{state}.py" in out.out
    assert "missing" not in out.out
    assert out.err.startswith("publish: refusing, 6 record(s) stale, failed or corrupt.")
    assert records.REMAKE in out.err


def test_main_check_allows_missing_records_and_lists_them(checked, capsys):
    only_fresh_and_missing(checked)
    assert publish.main(["--check"]) == 0
    out = capsys.readouterr()
    lines = out.out.strip().splitlines()
    assert lines[0] == ("publish: no record is stale, failed or corrupt; missing, shown as not yet recorded: "
                        "1 CUDA, 1 CPU")
    assert sorted(line.split() for line in lines[1:]) == sorted(
        ["missing", device, "snippets/demo/missing.py"] for device in records.DEVICES
    )
    assert out.err == ""


def test_main_check_with_every_record_present(checked, capsys):
    only_fresh_and_missing(checked)
    for device in records.DEVICES:
        write_record(checked, device, "missing", source("missing"))
    assert publish.main(["--check"]) == 0
    assert capsys.readouterr().out == "publish: no record is stale, failed or corrupt; every device has every record\n"


def test_main_builds_strictly_once_the_check_passes(checked, monkeypatch):
    only_fresh_and_missing(checked)
    calls = []

    class Done:
        returncode = 0

    monkeypatch.setattr(publish.subprocess, "run", lambda command, **kwargs: calls.append(command) or Done())
    assert publish.main([]) == 0
    assert publish.main(["--deploy"]) == 0
    assert [c[2:] for c in calls] == [["mkdocs", "build", "--strict"], ["mkdocs", "gh-deploy", "--strict", "--force"]]


def test_check_and_deploy_do_not_go_together(capsys):
    with pytest.raises(SystemExit) as exit_:
        publish.main(["--check", "--deploy"])
    assert exit_.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err
