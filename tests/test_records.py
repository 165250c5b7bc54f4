"""The committed records: well formed, naming real snippets, private to no machine, and fresh on CPU."""

import getpass
import json
import re
import socket
from pathlib import Path

import pytest
from harness import ROOT, SNIPPETS, all_snippets
from records import OUTPUTS, RecordState, all_records, manifest_problems
from regenerate import GENERIC_USERS, source_sha256

RECORDS = all_records()
IDS = [f"{r.device}/{r.snippet}" for r in RECORDS]


def private_patterns() -> list[re.Pattern]:
    """Text that must never reach a record: this machine's paths, user and host, raw temp paths."""
    patterns = [re.escape(str(ROOT)), r"/home/\w", r"/Users/\w", r"(?<![\w<])/tmp/\w", r"/private/var/folders/"]
    home = str(Path.home())
    if home not in ("/", ""):
        patterns.append(re.escape(home) + "/")
    host = socket.gethostname()
    if len(host) >= 3:
        patterns.append(rf"\b{re.escape(host)}\b")
    user = getpass.getuser()
    if user not in GENERIC_USERS and len(user) >= 3:
        patterns.append(rf"\b{re.escape(user)}\b")
    return [re.compile(p) for p in patterns]


def test_records_exist():
    assert RECORDS, f"no records under {OUTPUTS}: run python scripts/regenerate.py --device cpu"


@pytest.mark.parametrize("record", RECORDS, ids=IDS)
def test_manifest_is_well_formed(record):
    problems = manifest_problems(record)
    assert not problems, "\n".join(problems)


def test_a_corrupt_manifest_is_reported_by_file(tmp_path):
    folder = tmp_path / "cpu" / "demo" / "hello"
    folder.mkdir(parents=True)
    (folder / "manifest.json").write_text('{"snippet": "snippets/demo/hello.py", ')  # cut off mid-write
    problems = manifest_problems(RecordState("cpu", "demo/hello.py", folder), root=tmp_path)
    assert problems == [problems[0]] and problems[0].startswith("cpu/demo/hello/manifest.json is not valid JSON")


@pytest.mark.parametrize("record", RECORDS, ids=IDS)
def test_record_names_an_existing_snippet(record):
    assert (SNIPPETS / record.snippet).is_file(), (
        f"docs/outputs/{record.device}/{record.snippet[:-3]} records snippets/{record.snippet}, which does not "
        f"exist: delete the record or restore the snippet"
    )


@pytest.mark.parametrize("record", RECORDS, ids=IDS)
def test_record_holds_nothing_private(record):
    patterns = private_patterns()
    for path in sorted(record.folder.rglob("*")):
        if not path.is_file():
            continue
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            continue
        for pattern in patterns:
            match = pattern.search(text)
            assert not match, f"{path.relative_to(ROOT)} holds private text {match.group(0)!r}"


@pytest.mark.parametrize("snippet", all_snippets())
def test_every_snippet_has_a_fresh_cpu_record(snippet):
    record = OUTPUTS / "cpu" / snippet[:-3]
    assert (record / "manifest.json").exists(), (
        f"snippets/{snippet} has no CPU record: python scripts/regenerate.py --device cpu --only {snippet}"
    )
    manifest = json.loads((record / "manifest.json").read_text())
    assert manifest["sha256"] == source_sha256(SNIPPETS / snippet), (
        f"the CPU record of snippets/{snippet} is stale (the snippet changed since): "
        f"python scripts/regenerate.py --device cpu --only {snippet}"
    )
