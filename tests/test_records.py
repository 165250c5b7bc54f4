"""The committed records: well formed, naming real snippets, private to no machine, and fresh on CPU."""

import getpass
import json
import re
import socket
from pathlib import Path

import pytest
from harness import ROOT, SNIPPETS, all_snippets
from records import OUTPUTS, all_records
from regenerate import GENERIC_USERS, MANIFEST_KEYS, source_sha256

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
    try:
        manifest = record.manifest()
    except ValueError as error:
        pytest.fail(f"{record.manifest_path.relative_to(ROOT)} is not valid JSON: {error}")
    where = record.manifest_path.relative_to(ROOT)
    missing = [key for key in MANIFEST_KEYS if key not in manifest]
    assert not missing, f"{where} lacks {missing}"
    assert manifest["snippet"] == f"snippets/{record.snippet}", f"{where} names {manifest['snippet']}"
    assert manifest["device"] == record.device, f"{where} says device {manifest['device']}"
    assert re.fullmatch(r"[0-9a-f]{64}", manifest["sha256"]), f"{where}: sha256 is not a hex digest"
    assert manifest["exit_status"] == 0, f"{where}: a failed run was recorded"
    assert isinstance(manifest["duration_s"], (int, float)) and manifest["duration_s"] >= 0
    assert isinstance(manifest["environment"], dict) and manifest["environment"].get("torch")
    if record.device == "cuda":
        assert manifest["environment"].get("gpu"), f"{where}: a CUDA record must name its GPU"
    for name in ("stdout.txt", "sections.json"):
        assert (record.folder / name).is_file(), f"{where.parent} lacks {name}"
    json.loads((record.folder / "sections.json").read_text())
    results = record.folder / "files" / "results.json"
    if results.exists():
        json.loads(results.read_text())


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
