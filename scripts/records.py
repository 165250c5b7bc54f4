"""The record store: where a snippet's record lives, how it is read, what state it is in, where it came from.

A record is the folder docs/outputs/<device>/<snippet path without .py>/ that scripts/regenerate.py wrote:

    manifest.json   snippet, sha256 of its source, device, command, exit status, duration, UTC date, environment
    stdout.txt      everything the snippet printed
    sections.json   that output split by the snippet's named sections ("" for text printed outside them)
    files/          what the snippet left in its working folder, and results.json: its `results` dict

Everything else (the recorder, the mkdocs hook, the figure and notebook renderers, publishing, the tests)
reads records through this module and defines none of this itself. It needs only the standard library.

A record's state, in the words every tool uses:

    fresh     recorded from the snippet as it is now
    stale     recorded from an older version of the snippet
    failed    the last run of the snippet as it is now failed (its output is kept under .cache/regenerate/failed/)
    corrupt   manifest.json is missing a field or is not valid JSON
    missing   never recorded on that device
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SNIPPETS = ROOT / "snippets"
OUTPUTS = ROOT / "docs" / "outputs"
FAILED = ROOT / ".cache" / "regenerate" / "failed"
DEVICES = ("cuda", "cpu")
LABELS = {"cuda": "CUDA", "cpu": "CPU"}
MANIFEST_KEYS = ("snippet", "sha256", "device", "command", "exit_status", "duration_s", "date", "environment")
STATES = ("fresh", "stale", "failed", "corrupt", "missing")

STDOUT, SECTIONS, FILES, RESULTS, MANIFEST = "stdout.txt", "sections.json", "files", "results.json", "manifest.json"

# The command that remakes records, as a contributor types it after the README's set-up.
REMAKE = ".venv/bin/python -m scripts.regenerate"


class CorruptRecord(ValueError):
    """A record whose manifest cannot be read; the message names the file."""


def find_snippets(snippets: Path = SNIPPETS) -> list[str]:
    """Every runnable snippet, relative to snippets/ ('eager_mode/complex_activation.py'); files named
    _*.py are helpers, not snippets."""
    return sorted(
        p.relative_to(snippets).as_posix()
        for p in snippets.rglob("*.py")
        if not p.name.startswith("_") and "__pycache__" not in p.parts
    )


def source_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def record_dir(snippet: str, device: str, outputs: Path = OUTPUTS) -> Path:
    return outputs / device / snippet.removesuffix(".py")


@dataclass
class Record:
    """One snippet's record on one device, which may not exist yet. Also used for a fresh in-process run:
    any folder with the same layout reads the same way."""

    snippet: str
    device: str
    folder: Path
    snippets: Path = SNIPPETS
    failed: Path | None = None  # where the recorder keeps failed runs; FAILED for records under OUTPUTS

    # ------------------------------------------------------------------------------------------ manifest

    @property
    def exists(self) -> bool:
        return (self.folder / MANIFEST).exists()

    @cached_property
    def manifest(self) -> dict:
        path = self.folder / MANIFEST
        try:
            manifest = json.loads(path.read_text())
        except FileNotFoundError:
            raise CorruptRecord(f"{self.where(MANIFEST)} does not exist") from None
        except (OSError, ValueError) as error:
            raise CorruptRecord(f"{self.where(MANIFEST)} is not valid JSON ({error})") from None
        if not isinstance(manifest, dict):
            raise CorruptRecord(f"{self.where(MANIFEST)} is not a JSON object")
        missing = [key for key in MANIFEST_KEYS if key not in manifest]
        if missing:
            raise CorruptRecord(f"{self.where(MANIFEST)} lacks {', '.join(missing)}")
        return manifest

    def validate(self) -> dict:
        """The manifest, or CorruptRecord naming the file."""
        return self.manifest

    def where(self, name: str = "") -> str:
        """A path to show people: relative to the repository where it can be."""
        path = self.folder / name if name else self.folder
        try:
            return path.relative_to(ROOT).as_posix()
        except ValueError:
            return path.as_posix()

    @property
    def state(self) -> str:
        if not self.exists:
            return "failed" if self.failed_run() else "missing"
        try:
            manifest = self.manifest
        except CorruptRecord:
            return "corrupt"
        source = self.snippets / self.snippet
        current = source_sha256(source) if source.exists() else None
        if self.failed_run(current):
            return "failed"
        if manifest.get("exit_status") != 0:
            return "failed"
        return "fresh" if manifest.get("sha256") == current else "stale"

    def failed_run(self, sha: str | None = None) -> Path | None:
        """The kept output of a failed run of the snippet as it is now, if the recorder left one."""
        failed = self.failed or (FAILED if self.folder.is_relative_to(OUTPUTS) else None)
        if failed is not None:
            kept = record_dir(self.snippet, self.device, failed)
            if sha is None:
                source = self.snippets / self.snippet
                sha = source_sha256(source) if source.exists() else None
            try:
                if json.loads((kept / MANIFEST).read_text()).get("sha256") == sha:
                    return kept
            except (OSError, ValueError):
                pass
        return None

    # --------------------------------------------------------------------------------------------- content

    @cached_property
    def stdout(self) -> str:
        return (self.folder / STDOUT).read_text()

    @cached_property
    def sections(self) -> dict[str, str]:
        return json.loads((self.folder / SECTIONS).read_text())

    def section(self, name: str) -> str:
        """What one named section printed; an AssertionError naming the record when it printed nothing, so
        a fact check reads `record.section("profile")`."""
        if name not in self.sections:
            raise AssertionError(f"{self.where()}: section '{name}' printed nothing")
        return self.sections[name]

    @property
    def files(self) -> Path:
        return self.folder / FILES

    def file(self, name: str) -> Path:
        return self.files / name

    @cached_property
    def results(self) -> dict:
        path = self.files / RESULTS
        if not path.exists():
            return {}
        try:
            return json.loads(path.read_text())
        except ValueError as error:
            raise CorruptRecord(f"{self.where(FILES + '/' + RESULTS)} is not valid JSON ({error})") from None

    def value(self, key: str):
        """A value from results.json by dotted key ('timing.eager.median_us'); KeyError names what is missing."""
        value = self.results
        for part in key.split("."):
            if isinstance(value, list) and part.isdigit() and int(part) < len(value):
                value = value[int(part)]
            elif isinstance(value, dict) and part in value:
                value = value[part]
            else:
                raise KeyError(f"'{key}' is not in {self.where(FILES + '/' + RESULTS)}")
        return value

    # ------------------------------------------------------------------------------------------ provenance

    @property
    def environment(self) -> dict:
        env = self.manifest.get("environment")
        return env if isinstance(env, dict) else {}

    @property
    def hardware(self) -> str:
        """The GPU's name for a CUDA record, the CPU model for a CPU record."""
        env = self.environment
        if self.device == "cuda":
            return env.get("gpu") or "an unnamed GPU"
        return env.get("cpu") or "an unnamed CPU"

    @property
    def date(self) -> str:
        return str(self.manifest.get("date", ""))[:10]

    def provenance(self) -> str:
        """One line: hardware, versions, date."""
        env = self.environment
        if self.device == "cuda":
            hardware = f"{self.hardware} (CUDA {env.get('cuda')}, driver {env.get('driver')})"
        else:
            hardware = f"{self.hardware} ({env.get('cpu_count')} cores)"
        versions = f"torch {env.get('torch')}" + (f" · triton {env['triton']}" if env.get("triton") else "")
        if env.get("jax"):
            versions += f" · jax {env['jax']}"
        return f"Recorded on {hardware} · {versions} · Python {env.get('python')} · {self.date}"


def record(snippet: str, device: str, outputs: Path = OUTPUTS, snippets: Path = SNIPPETS) -> Record:
    return Record(snippet, device, record_dir(snippet, device, outputs), snippets)


def find_records(device: str, outputs: Path = OUTPUTS, snippets: Path = SNIPPETS) -> list[Record]:
    """Every record folder of a device (one holding manifest.json), skipping the hidden folders of a run
    in progress or a half-done swap."""
    base = outputs / device
    if not base.exists():
        return []
    return [
        Record(m.parent.relative_to(base).as_posix() + ".py", device, m.parent, snippets)
        for m in sorted(base.rglob(MANIFEST))
        if not any(part.startswith(".") for part in m.parent.relative_to(base).parts)
    ]


def all_records(outputs: Path = OUTPUTS, snippets: Path = SNIPPETS) -> list[Record]:
    return [r for device in DEVICES for r in find_records(device, outputs, snippets)]


def states(device: str, outputs: Path = OUTPUTS, snippets: Path = SNIPPETS) -> dict[str, str]:
    """snippet -> state on one device, for every snippet there is."""
    return {s: record(s, device, outputs, snippets).state for s in find_snippets(snippets)}


def remake_hint(snippet: str, device: str) -> str:
    return f"{REMAKE} --device {device} --only {snippet}"


# ------------------------------------------------------------------------------------------ judging words

def timing_band(a: dict, b: dict) -> tuple[float, float, float]:
    """(ratio of medians a/b, lowest and highest ratio the interquartile ranges allow)."""
    def quartiles(t):
        half = t.get("iqr_us", 0) / 2
        return t.get("q1_us", t["median_us"] - half), t.get("q3_us", t["median_us"] + half)

    (a1, a3), (b1, b3) = quartiles(a), quartiles(b)
    return a["median_us"] / b["median_us"], a1 / b3, a3 / b1


def judge(a: dict, b: dict) -> str:
    """How b compares with a, in words bound to the numbers, by the site's one rule: when the ratio of the
    medians a/b could be 1 within both interquartile ranges, they are "about the same"; otherwise b is
    "N× faster" (or slower) than a, with N the ratio of the medians."""
    ratio, lo, hi = timing_band(a, b)
    if lo <= 1 <= hi:
        return "about the same"
    factor = ratio if ratio > 1 else 1 / ratio
    return f"{factor:.{1 if factor < 10 else 0}f}× " + ("faster" if ratio > 1 else "slower")
