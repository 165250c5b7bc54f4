"""Reading the committed records under docs/outputs/, for the record tests and the summary at the end."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from harness import ROOT, SNIPPETS
from regenerate import DEVICES, MANIFEST_KEYS, find_records, source_sha256

OUTPUTS = ROOT / "docs" / "outputs"


@dataclass
class RecordState:
    device: str
    snippet: str  # relative to snippets/, e.g. "eager_mode/complex_activation.py"
    folder: Path

    @property
    def manifest_path(self) -> Path:
        return self.folder / "manifest.json"

    def manifest(self) -> dict:
        return json.loads(self.manifest_path.read_text())

    def is_fresh(self) -> bool:
        source = SNIPPETS / self.snippet
        return source.exists() and self.manifest().get("sha256") == source_sha256(source)


def all_records() -> list[RecordState]:
    """Every record folder, as the recorder finds them."""
    return [
        RecordState(device, folder.relative_to(OUTPUTS / device).as_posix() + ".py", folder)
        for device in DEVICES
        for folder in find_records(OUTPUTS, device)
    ]


def stale_records(device: str) -> list[str]:
    stale = []
    for record in all_records():
        if record.device != device:
            continue
        try:
            fresh = record.is_fresh()
        except ValueError:
            fresh = False
        if not fresh:
            stale.append(record.snippet)
    return stale


def manifest_problems(record: RecordState, root: Path = ROOT) -> list[str]:
    """What is wrong with one record's manifest and files, each message naming the file."""
    where = record.manifest_path.relative_to(root)
    try:
        manifest = record.manifest()
    except ValueError as error:
        return [f"{where} is not valid JSON: {error}"]
    if not isinstance(manifest, dict):
        return [f"{where} is not a JSON object"]
    missing = [key for key in MANIFEST_KEYS if key not in manifest]
    if missing:
        return [f"{where} lacks {missing}"]
    problems = []
    env = manifest["environment"]
    checks = [
        (manifest["snippet"] == f"snippets/{record.snippet}", f"names {manifest['snippet']}"),
        (manifest["device"] == record.device, f"says device {manifest['device']}"),
        (isinstance(manifest["sha256"], str) and re.fullmatch(r"[0-9a-f]{64}", manifest["sha256"]),
         "sha256 is not a hex digest"),
        (manifest["exit_status"] == 0, "records a failed run"),
        (isinstance(manifest["duration_s"], (int, float)) and manifest["duration_s"] >= 0, "has no duration"),
        (isinstance(env, dict) and env.get("torch"), "does not name its torch version"),
        (record.device != "cuda" or (isinstance(env, dict) and env.get("gpu")), "is a CUDA record naming no GPU"),
    ]
    problems += [f"{where} {message}" for ok, message in checks if not ok]
    for name in ("stdout.txt", "sections.json"):
        if not (record.folder / name).is_file():
            problems.append(f"{where.parent}/{name} is missing")
    for name in ("sections.json", "files/results.json"):
        path = record.folder / name
        if path.is_file():
            try:
                json.loads(path.read_text())
            except ValueError as error:
                problems.append(f"{path.relative_to(root)} is not valid JSON: {error}")
    return problems
