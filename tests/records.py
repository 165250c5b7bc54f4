"""Reading the committed records under docs/outputs/, for the record tests and the summary at the end."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from harness import ROOT, SNIPPETS
from regenerate import DEVICES, source_sha256

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
    """Every record folder (one holding manifest.json), skipping the hidden folders of a run in progress."""
    found = []
    for device in DEVICES:
        base = OUTPUTS / device
        for manifest in sorted(base.rglob("manifest.json")) if base.exists() else []:
            relative = manifest.parent.relative_to(base)
            if any(part.startswith(".") for part in relative.parts):
                continue
            found.append(RecordState(device, relative.as_posix() + ".py", manifest.parent))
    return found


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
