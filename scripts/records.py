"""The record store: where a snippet's record lives, how it is read, what state it is in, where it came from.

A record is the folder docs/outputs/<device>/<snippet path without .py>/ that scripts/regenerate.py wrote with
the site's main torch release (the one ci/constraints.txt pins), or docs/outputs/torch-<release>/<device>/...
with any other release (torch-2.11.0/, say):

    manifest.json   snippet, sha256 of its source, device, command, exit status, duration, UTC date, environment
    stdout.txt      everything the snippet printed
    sections.json   that output split by the snippet's named sections ("" for text printed outside them)
    files/          what the snippet left in its working folder, and results.json: its `results` dict

Everything else (the recorder, the mkdocs hook, the figure and notebook renderers, publishing, the tests)
reads records through this module and defines none of this itself. It needs only the standard library.

A page shows, per device, the main release's record, or where there is none (a GPU box runs an older torch)
the newest release's; the records of the other releases are what "What changed between versions" compares.

A record's state, in the words every tool uses:

    fresh     recorded from the snippet as it is now
    stale     recorded from an older version of the snippet
    failed    the last run of the snippet as it is now failed (its output is kept under .cache/regenerate/failed/)
    corrupt   manifest.json is missing a field or is not valid JSON
    missing   never recorded on that device
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from scripts import run_env
from scripts.runner import FILES, RESULTS, SECTIONS, STDOUT

ROOT = Path(__file__).resolve().parents[1]
SNIPPETS = ROOT / "snippets"
OUTPUTS = ROOT / "docs" / "outputs"
# What is kept to be reused and can be made again (figures, built notebooks, kept runs, failed runs, ...), each
# in a folder of its own under one root, and found again by one key (content_key).
CACHE = ROOT / ".cache"
FAILED = CACHE / "regenerate" / "failed"
CONSTRAINTS = run_env.CONSTRAINTS
RELEASE_PREFIX = "torch-"  # docs/outputs/torch-2.11.0/ holds torch 2.11.0's records
DEVICES = ("cuda", "cpu")
STOPS = "budget-stops.json"  # beside a device's records: the snippets a --budget stopped (scripts/budget.py)
LABELS = {"cuda": "CUDA", "cpu": "CPU"}
MANIFEST_KEYS = ("snippet", "sha256", "device", "command", "exit_status", "duration_s", "date", "environment")
STATES = ("fresh", "stale", "failed", "corrupt", "missing")

MANIFEST = "manifest.json"  # the recorder's; the run's own files are named in scripts/runner.py

# The command that remakes records, as a contributor types it after the README's set-up.
REMAKE = ".venv/bin/python -m scripts.regenerate"


@contextlib.contextmanager
def exclusive(lock: Path, waiting: str):
    """Hold `lock` (a file of its own, never replaced) alone: one writer of what it guards at a time; a second one
    says `waiting` and waits its turn. The recorder's device folders and the notebook receipts use it."""
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(waiting, flush=True)
            fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def keep_stops(device_dir: Path, stops: dict[str, dict]) -> None:
    """Add `stops` (snippet -> what a budget's stop showed) to the STOPS file beside a device's records."""
    path = device_dir / STOPS
    said = json.loads(path.read_text()) if path.is_file() else {}
    said.update(stops)
    device_dir.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(dict(sorted(said.items())), indent=1) + "\n")


def release_of(version: str | None) -> str:
    """A torch version without its build tag: '2.15.0+cu132' -> '2.15.0'."""
    return (version or "").split("+")[0]


def version_key(release: str) -> tuple[int, ...]:
    return tuple(int(part) if part.isdigit() else 0 for part in release.split("."))


def main_release(constraints: Path = CONSTRAINTS) -> str:
    """The torch release the site is written against: the one ci/constraints.txt pins."""
    torch = run_env.pins(constraints).get("torch")
    return release_of(torch) if torch else ""


MAIN = main_release()


def release_root(release: str, outputs: Path = OUTPUTS) -> Path:
    """Where one release's records live: the outputs folder itself for the main release."""
    return outputs if release in (MAIN, "") else outputs / f"{RELEASE_PREFIX}{release}"


def release_roots(outputs: Path = OUTPUTS) -> dict[str, Path]:
    """release -> its folder, the main release first, then the others newest first."""
    others = {p.name.removeprefix(RELEASE_PREFIX): p for p in outputs.glob(f"{RELEASE_PREFIX}*") if p.is_dir()}
    return {MAIN: outputs, **dict(sorted(others.items(), key=lambda item: version_key(item[0]), reverse=True))}


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


def content_key(*parts: bytes | str | Path, length: int = 20) -> str:
    """The one cache key: a digest of the digest of each part, in order (bytes, text, or a file's bytes), so
    that what a kept thing was made from, and the code that made it, find it again; `length` hex digits."""
    digest = hashlib.sha256()
    for part in parts:
        data = part.read_bytes() if isinstance(part, Path) else part.encode() if isinstance(part, str) else part
        digest.update(hashlib.sha256(data).digest())
    return digest.hexdigest()[:length]


def source_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def record_dir(snippet: str, device: str, outputs: Path = OUTPUTS) -> Path:
    return outputs / device / snippet.removesuffix(".py")


def site_path(snippet: str, device: str, release: str = "") -> str:
    """Where the record of snippets/<snippet> on `device` made with a torch release (the main one if not
    said) is in the site, relative to docs/."""
    folder = "" if release in (MAIN, "") else f"{RELEASE_PREFIX}{release}/"
    return f"{OUTPUTS.name}/{folder}{device}/{snippet.removesuffix('.py')}"


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

    @property
    def committed(self) -> bool:
        """A record under docs/outputs, which a page shows; not a fresh run in the test suite, which ran on
        whatever machine runs the tests."""
        return self.folder.resolve().is_relative_to(OUTPUTS.resolve())

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
        if self.failed is not None:
            kept = record_dir(self.snippet, self.device, self.failed)
        elif self.folder.is_relative_to(OUTPUTS):
            kept = FAILED / self.folder.relative_to(OUTPUTS)
        else:
            kept = None
        if kept is not None:
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

    @property
    def processes(self) -> int | None:
        """The fresh processes its timings were pooled over (the fewest, if they differ); None if it times nothing."""
        counts = [timing.get("processes", 1) for _, timing in timings_in(self.results)] if self.exists else []
        return min(counts, default=None)

    @property
    def draft(self) -> bool:
        """A record of a timed snippet made in fewer fresh processes than the method's (`--processes 1`): for
        reading one's output while writing, never to commit (tests/test_records.py refuses one)."""
        return (self.processes or PROCESSES) < PROCESSES

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
    def release(self) -> str:
        """The torch release that made it ('2.15.0'), from its manifest."""
        return release_of(self.environment.get("torch"))

    @property
    def site_path(self) -> str:
        """Where it is in the site, relative to docs/: by the release folder it sits in."""
        root = self.folder.parents[len(Path(self.snippet).parts)]
        release = root.name.removeprefix(RELEASE_PREFIX) if root.name.startswith(RELEASE_PREFIX) else ""
        return site_path(self.snippet, self.device, release)

    def made_with(self, release: tuple[int, ...]) -> bool:
        """Whether torch `release` or newer made it: a check states a fact that holds only from some release
        on as `if record.made_with((2, 15)): ...`."""
        return version_key(self.release) >= release

    @property
    def machine(self) -> str:
        """What tells the machines that made records apart, as one label: a CUDA record's GPU; a CPU record's
        model, its caches (two runners that both call themselves "AMD EPYC" differ in L1d) and, where the
        manifest names it, torch's detected vector instruction set. Timings compare across releases only
        between records with the same label."""
        env = self.environment
        if self.device == "cuda":
            return self.hardware
        caches = env.get("caches") or {}
        sizes = [f"{name} {size // 2**20} MiB" if size >= 2**20 else f"{name} {size // 2**10} KiB"
                 for name in ("L1d", "L2", "L3") if isinstance(size := caches.get(name), int)]
        isa = (env.get("cpu_isa") or {}).get("capability")
        return ", ".join([self.hardware, *sizes, *([isa] if isa else [])])

    @property
    def hardware(self) -> str:
        """The GPU's name for a CUDA record, the CPU model for a CPU record."""
        env = self.environment
        if self.device == "cuda":
            return env.get("gpu") or "an unnamed GPU"
        return env.get("cpu") or "an unnamed CPU"

    @property
    def bf16_matmul(self) -> bool:
        """Whether oneDNN had a bfloat16 matmul on the CPU that made it. Records made before manifests named
        the instruction set say nothing; theirs is read as True: each shows "medium" changing a CPU matmul,
        which needs one."""
        return bool((self.environment.get("cpu_isa") or {}).get("mkldnn_bf16", True))

    @property
    def amx_bf16(self) -> bool:
        """Whether the CPU that made it has AMX's bfloat16 tiles (where oneDNN's "medium" matmul rounds its inputs
        to bfloat16). Records made before manifests named the instruction set say nothing: read as False."""
        return "amx_bf16" in ((self.environment.get("cpu_isa") or {}).get("flags") or [])

    @property
    def date(self) -> str:
        return str(self.manifest.get("date", ""))[:10]

    def provenance(self) -> str:
        """One line: hardware (a CPU with what tells such machines apart: caches, vector instruction set),
        versions, how timings were taken, date."""
        env = self.environment
        if self.device == "cuda":
            hardware = f"{self.hardware} (CUDA {env.get('cuda')}, driver {env.get('driver')})"
        else:
            told = self.machine.removeprefix(self.hardware).removeprefix(", ")
            hardware = f"{self.hardware} ({env.get('cpu_count')} cores" + (f"; {told})" if told else ")")
        versions = f"torch {env.get('torch')}" + (f" · triton {env['triton']}" if env.get("triton") else "")
        if env.get("jax"):
            versions += f" · jax {env['jax']}"
        line = f"Recorded on {hardware} · {versions} · Python {env.get('python')}"
        timed = [t for _, t in timings_in(self.results)]
        if timed:
            threads = sorted({str(t["threads"]) for t in timed if t.get("threads")})
            processes = max(t.get("processes", 1) for t in timed)
            line += " · timed" + (f" on {'/'.join(threads)} thread{'s' * (threads != ['1'])}" if threads else "")
            line += f" in {processes} fresh process{'es' * (processes > 1)}"
            if (beside := self.manifest.get("side_by_side")) and self.manifest.get("timed_sections", {}).get("alone"):
                line += f", beside up to {beside - 1} other snippet{'s' * (beside > 2)} paused while it timed"
            if moved := self.manifest.get("clock_moved"):
                line += f" · the GPU's SM clock moved while timing {', '.join(moved)}"
        return f"{line} · {self.date}"


def record(snippet: str, device: str, outputs: Path = OUTPUTS, snippets: Path = SNIPPETS) -> Record:
    """The record a page shows: the main release's, or where it has none the newest release's that exists;
    the main release's (missing) record where no release has one."""
    found = releases_of(snippet, device, outputs, snippets)
    return found[0] if found else Record(snippet, device, record_dir(snippet, device, outputs), snippets)


def releases_of(snippet: str, device: str, outputs: Path = OUTPUTS, snippets: Path = SNIPPETS) -> list[Record]:
    """The records of one snippet on one device that exist, one per release: the main release first, then the
    others newest first."""
    found = (Record(snippet, device, record_dir(snippet, device, root), snippets)
             for root in release_roots(outputs).values())
    return [r for r in found if r.exists]


def find_records(device: str, outputs: Path = OUTPUTS, snippets: Path = SNIPPETS) -> list[Record]:
    """Every record folder of a device in one release's folder (one holding manifest.json), skipping the hidden
    folders of a run in progress or a half-done swap."""
    base = outputs / device
    if not base.exists():
        return []
    return [
        Record(m.parent.relative_to(base).as_posix() + ".py", device, m.parent, snippets)
        for m in sorted(base.rglob(MANIFEST))
        if not any(part.startswith(".") for part in m.parent.relative_to(base).parts)
    ]


def all_records(outputs: Path = OUTPUTS, snippets: Path = SNIPPETS) -> list[Record]:
    """Every record of every device and release."""
    return [r for root in release_roots(outputs).values() for device in DEVICES
            for r in find_records(device, root, snippets)]


def states(device: str, outputs: Path = OUTPUTS, snippets: Path = SNIPPETS) -> dict[str, str]:
    """snippet -> the state of the record a page shows on one device, for every snippet there is."""
    return {s: record(s, device, outputs, snippets).state for s in find_snippets(snippets)}


def remake_hint(snippet: str, device: str) -> str:
    return f"{REMAKE} --device {device} --only {snippet}"


# ------------------------------------------------------------------------------------------ timings in a record

PROCESSES = 5  # the fresh processes the recorder runs a timed snippet in (scripts/measures.py pools them)


def is_timing(value) -> bool:
    return isinstance(value, dict) and "median_us" in value


def timings_in(value, key: str = ""):
    """(dotted key, timing) for every timing in a results tree."""
    if is_timing(value):
        yield key, value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from timings_in(v, f"{key}.{k}" if key else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from timings_in(v, f"{key}.{i}" if key else str(i))
