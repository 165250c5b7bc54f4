"""Record what every snippet prints and writes, on this machine, under docs/outputs/<device>/.

    python scripts/regenerate.py                      # every stale snippet, on the best device present
    python scripts/regenerate.py --device cpu         # CPU records, also on a GPU box
    python scripts/regenerate.py --only 'eager_mode/*' --force
    python scripts/regenerate.py --archive records.tar.gz   # also pack this device's records into one file
    python scripts/regenerate.py --unpack records.tar.gz    # put a packed set of records in place

Each snippet runs in a fresh process (scripts/snippet_runner.py). Its record, the folder
docs/outputs/<device>/<snippet path without .py>/, holds:

    manifest.json   snippet, sha256 of its source, command, exit status, duration, UTC date, environment
    stdout.txt      what it printed; stderr.txt beside it
    sections.json   stdout split by the snippet's named sections
    files/          what it wrote to $SNIPPET_OUTPUT_DIR (results.json, traces, ...)

Text is scrubbed of what is private to the machine (repo, home and temp paths, user and host names, object
addresses). A record is replaced only once its new run has succeeded, by renaming a finished folder into
place: a failing snippet, a timeout or a killed run leaves the previous record as it was, and the failed
run's output is kept under .cache/regenerate/failed/ for reading. A snippet whose record has the same
source hash is fresh and is skipped unless --force.

Needs only the Python standard library and what the snippets import (torch, triton, numpy, matplotlib).
Exit status: 0 all recorded or fresh, 1 some snippet failed, 2 bad arguments (nothing written).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import fcntl
import fnmatch
import getpass
import hashlib
import json
import os
import platform
import re
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUNNER = Path(__file__).resolve().parent / "snippet_runner.py"
DEVICES = ("cuda", "cpu")
MANIFEST_KEYS = ("snippet", "sha256", "device", "command", "exit_status", "duration_s", "date", "environment")
GENERIC_USERS = {"root", "user", "runner", "ubuntu", "admin", "nobody"}


class UsageError(Exception):
    """Bad input: reported on one line, exit status 2, nothing written."""


# ---------------------------------------------------------------------------------------------- snippets


def find_snippets(snippets_dir: Path) -> list[str]:
    """Every runnable snippet, as a path relative to snippets/ ('eager_mode/complex_activation.py')."""
    return sorted(
        p.relative_to(snippets_dir).as_posix()
        for p in snippets_dir.rglob("*.py")
        if not p.name.startswith("_") and "__pycache__" not in p.parts
    )


def select(snippets: list[str], patterns: list[str] | None) -> list[str]:
    if not patterns:
        return snippets
    chosen = []
    for pattern in patterns:
        hits = [s for s in snippets if fnmatch.fnmatch(s, pattern) or fnmatch.fnmatch(s[:-3], pattern)]
        if not hits:
            raise UsageError(f"--only {pattern!r} matches no snippet under snippets/ (try --list)")
        chosen += [s for s in hits if s not in chosen]
    return sorted(chosen)


def source_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def record_dir(outputs: Path, device: str, snippet: str) -> Path:
    return outputs / device / snippet[: -len(".py")]


def find_records(outputs_dir: Path, device: str) -> list[Path]:
    """Every record folder of a device (one holding manifest.json), skipping the hidden folders of a run
    in progress or a half-done swap."""
    base = outputs_dir / device
    if not base.exists():
        return []
    return sorted(
        m.parent for m in base.rglob("manifest.json")
        if not any(part.startswith(".") for part in m.parent.relative_to(base).parts)
    )


def read_manifest(record: Path) -> dict | None:
    try:
        manifest = json.loads((record / "manifest.json").read_text())
    except (OSError, ValueError):
        return None
    return manifest if isinstance(manifest, dict) else None


def is_fresh(record: Path, sha: str) -> bool:
    manifest = read_manifest(record)
    return bool(manifest) and manifest.get("sha256") == sha and manifest.get("exit_status") == 0


# ----------------------------------------------------------------------------------------- environment


def cuda_available() -> bool:
    # Importing torch costs a second or two; skip it where there is plainly no NVIDIA driver.
    if shutil.which("nvidia-smi") is None and not Path("/dev/nvidiactl").exists():
        return False
    import torch

    return torch.cuda.is_available()


def version_of(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def cpu_model() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def environment(device: str) -> dict:
    env = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "torch": version_of("torch"),
        "triton": version_of("triton"),
        "numpy": version_of("numpy"),
        "cpu": cpu_model(),
        "cpu_count": os.cpu_count(),
    }
    if device == "cuda":
        import torch

        props = torch.cuda.get_device_properties(0)
        env.update(
            gpu=props.name,
            gpu_count=torch.cuda.device_count(),
            gpu_memory_gib=round(props.total_memory / 2**30, 1),
            sm_count=props.multi_processor_count,
            compute_capability=f"{props.major}.{props.minor}",
            cuda=torch.version.cuda,
            driver=nvidia_driver(),
        )
    return env


def nvidia_driver() -> str | None:
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=30, check=True,
        ).stdout
        return out.strip().splitlines()[0]
    return None


# -------------------------------------------------------------------------------------------- scrubbing


def scrubber(extra_paths: list[Path]):
    """Return a function that replaces what is private to this machine with stable placeholders."""
    paths = {str(ROOT): "<repo>", str(Path.home()): "~", tempfile.gettempdir(): "<tmp>"}
    paths.update({str(p): "<tmp>" for p in extra_paths})
    for original, placeholder in list(paths.items()):
        with contextlib.suppress(OSError):
            paths.setdefault(os.path.realpath(original), placeholder)
    # Longest first, so the repo inside home becomes <repo>, not ~/...
    ordered = sorted((p for p in paths.items() if len(p[0]) > 1), key=lambda p: -len(p[0]))
    rules: list[tuple[re.Pattern, str]] = [(re.compile(re.escape(p)), r) for p, r in ordered]
    rules += [
        (re.compile(r"/tmp/[\w.\-]+"), "<tmp>"),
        (re.compile(r"\bat 0x[0-9a-fA-F]+"), "at 0x<addr>"),
        (re.compile(r"\b0x(?:7f|55|56)[0-9a-fA-F]{10}\b"), "0x<addr>"),
    ]
    host = socket.gethostname()
    if len(host) >= 3:
        rules.append((re.compile(rf"\b{re.escape(host)}\b"), "<host>"))
    user = getpass.getuser()
    if user not in GENERIC_USERS and len(user) >= 3:
        rules.append((re.compile(rf"\b{re.escape(user)}\b"), "<user>"))

    def scrub(text: str) -> str:
        for pattern, placeholder in rules:
            text = pattern.sub(placeholder, text)
        return text

    return scrub


def scrub_tree(folder: Path, scrub) -> None:
    for path in folder.rglob("*"):
        if path.is_file():
            try:
                text = path.read_text(encoding="utf-8")
            except (UnicodeDecodeError, OSError):
                continue  # binary files are kept as written
            path.write_text(scrub(text), encoding="utf-8")


# ---------------------------------------------------------------------------------------- atomic writes


def swap_into_place(new: Path, final: Path) -> None:
    """Replace `final` with the finished folder `new` by two renames; recover() undoes a half-done swap."""
    old = final.with_name(f".{final.name}.old-{os.getpid()}")
    if final.exists():
        final.rename(old)
    new.rename(final)
    shutil.rmtree(old, ignore_errors=True)


def recover(device_dir: Path) -> None:
    """Tidy after a killed run: put back a record caught between the two renames, drop half-made ones."""
    if not device_dir.exists():
        return
    for path in sorted(device_dir.rglob(".*")):
        if not path.is_dir():
            continue
        match = re.fullmatch(r"\.(.+)\.(old|new)-\d+", path.name)
        if not match:
            continue
        final = path.with_name(match.group(1))
        if match.group(2) == "old" and not final.exists():
            path.rename(final)
        else:
            shutil.rmtree(path, ignore_errors=True)


@contextlib.contextmanager
def exclusive(device_dir: Path):
    with open(device_dir / ".lock", "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise UsageError(f"another regeneration is writing to {device_dir}; wait for it to finish")
        yield


def check_writable(device_dir: Path) -> None:
    try:
        device_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=device_dir):
            pass
    except OSError as error:
        raise UsageError(f"cannot write records to {device_dir}: {error.strerror or error}")


# ---------------------------------------------------------------------------------------------- running


def run_one(snippet: str, args, env_info: dict) -> tuple[bool, float, str]:
    """Run one snippet into a hidden folder beside its record; swap it in if it succeeded."""
    source = args.snippets_dir / snippet
    final = record_dir(args.outputs_dir, args.device, snippet)
    final.parent.mkdir(parents=True, exist_ok=True)
    work = final.with_name(f".{final.name}.new-{os.getpid()}")
    shutil.rmtree(work, ignore_errors=True)
    (work / "files").mkdir(parents=True)
    scratch = Path(tempfile.mkdtemp(prefix="regenerate-"))
    scrub = scrubber([scratch, work])

    env = dict(os.environ, SNIPPET_OUTPUT_DIR=str(work / "files"), PYTHONUNBUFFERED="1")
    overrides = {}
    if args.device == "cpu":
        # Hide any GPU so the snippet picks the CPU, and let Triton kernels run in its interpreter.
        overrides = {"CUDA_VISIBLE_DEVICES": "", "TRITON_INTERPRET": "1"}
    env.update(overrides)
    command = [sys.executable, str(RUNNER), str(source), str(work / "sections.json")]
    started = time.monotonic()
    with open(work / "stdout.txt", "wb") as out, open(work / "stderr.txt", "wb") as err:
        process = subprocess.Popen(command, cwd=scratch, env=env, stdout=out, stderr=err, start_new_session=True)
        try:
            status = process.wait(timeout=args.timeout)
            reason = f"exit status {status}"
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            status, reason = None, f"timed out after {args.timeout:g} s"
        except BaseException:  # Ctrl-C or SIGTERM: stop the snippet too, drop its half-made record
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            shutil.rmtree(work, ignore_errors=True)
            shutil.rmtree(scratch, ignore_errors=True)
            raise
    duration = time.monotonic() - started
    shutil.rmtree(scratch, ignore_errors=True)
    scrub_tree(work, scrub)

    if status != 0:
        kept = args.failed_dir / args.device / snippet[: -len(".py")]
        shutil.rmtree(kept, ignore_errors=True)
        kept.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(work), kept)
        tail = (kept / "stderr.txt").read_text(errors="replace").strip().splitlines()[-15:]
        detail = "\n".join("      " + line for line in tail)
        return False, duration, f"{reason}; output kept in {kept}\n{detail}"

    manifest = {
        "snippet": f"snippets/{snippet}",
        "sha256": source_sha256(source),
        "device": args.device,
        "command": scrub(" ".join(["python", str(RUNNER.relative_to(ROOT)), f"snippets/{snippet}", "sections.json"])),
        "env_overrides": overrides,
        "exit_status": status,
        "duration_s": round(duration, 2),
        "date": dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat(),
        "environment": env_info,
        "files": sorted(p.relative_to(work / "files").as_posix() for p in (work / "files").rglob("*") if p.is_file()),
    }
    (work / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    swap_into_place(work, final)
    return True, duration, ""


def regenerate(args) -> int:
    snippets = find_snippets(args.snippets_dir)
    if not snippets:
        raise UsageError(f"no snippets found under {args.snippets_dir}")
    chosen = select(snippets, args.only)
    if args.list:
        for snippet in chosen:
            sha = source_sha256(args.snippets_dir / snippet)
            state = "fresh" if is_fresh(record_dir(args.outputs_dir, args.device, snippet), sha) else "stale"
            print(f"{state:5}  {snippet}")
        return 0
    device_dir = args.outputs_dir / args.device
    check_writable(device_dir)
    with exclusive(device_dir):
        recover(device_dir)
        counts = {"ran": 0, "fresh": 0, "failed": 0}
        env_info = None
        started = time.monotonic()
        width = len(str(len(chosen)))
        for index, snippet in enumerate(chosen, start=1):
            prefix = f"[{index:>{width}}/{len(chosen)}]"
            sha = source_sha256(args.snippets_dir / snippet)
            if not args.force and is_fresh(record_dir(args.outputs_dir, args.device, snippet), sha):
                counts["fresh"] += 1
                print(f"{prefix} fresh   {snippet}", flush=True)
                continue
            if env_info is None:
                env_info = environment(args.device)
            print(f"{prefix} running {snippet} ...", flush=True)
            ok, duration, detail = run_one(snippet, args, env_info)
            counts["ran" if ok else "failed"] += 1
            verdict = "ran    " if ok else "FAILED "
            print(f"{prefix} {verdict} {snippet} in {duration:.1f} s" + (f": {detail}" if detail else ""), flush=True)
        if args.archive:
            packed = pack(args.outputs_dir, args.device, args.archive)
            print(f"packed {packed} {args.device} records into {args.archive}")
    total = time.monotonic() - started
    print(
        f"regenerate ({args.device}): {counts['ran']} ran, {counts['fresh']} fresh, "
        f"{counts['failed']} failed in {total:.1f} s"
    )
    return 1 if counts["failed"] else 0


# ------------------------------------------------------------------------------------ archive transport


def pack(outputs_dir: Path, device: str, archive: Path) -> int:
    """Write every record of `device` into one .tar.gz (atomically), members named <device>/<record>/..."""
    records = find_records(outputs_dir, device)
    archive = Path(archive)
    partial = archive.with_name(f".{archive.name}.partial")
    with tarfile.open(partial, "w:gz") as tar:
        for record in records:
            tar.add(record, arcname=record.relative_to(outputs_dir).as_posix(), filter=_plain)
    partial.rename(archive)
    return len(records)


def _plain(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def unpack(archive: Path, outputs_dir: Path) -> int:
    """Put each record of an archive made by --archive in place, one atomic swap per record."""
    try:
        tar = tarfile.open(archive, "r:*")
    except (OSError, tarfile.TarError) as error:
        raise UsageError(f"cannot read archive {archive}: {error}")
    with tar, tempfile.TemporaryDirectory(dir=_mkdir(outputs_dir), prefix=".unpack-") as tmp:
        members = tar.getmembers()
        for member in members:
            parts = Path(member.name).parts
            if (
                member.name.startswith("/") or ".." in parts or not parts or parts[0] not in DEVICES
                or not (member.isfile() or member.isdir())
            ):
                raise UsageError(f"{archive}: refusing member {member.name!r} (not a record under cpu/ or cuda/)")
        tar.extractall(tmp, filter="data") if sys.version_info >= (3, 12) else tar.extractall(tmp)
        records = sorted(p.parent for p in Path(tmp).rglob("manifest.json"))
        for record in records:
            relative = record.relative_to(tmp)
            if read_manifest(record) is None:
                raise UsageError(f"{archive}: {relative}/manifest.json is not a valid manifest")
        for record in records:
            final = outputs_dir / record.relative_to(tmp)
            final.parent.mkdir(parents=True, exist_ok=True)
            swap_into_place(record, final)
    return len(records)


def _mkdir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


# ------------------------------------------------------------------------------------------------- main


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Run snippets and record their outputs under docs/outputs/<device>/.",
        epilog="Exit status: 0 ok, 1 a snippet failed, 2 bad arguments.",
    )
    parser.add_argument("--device", choices=DEVICES, help="default: cuda when torch sees one, else cpu")
    parser.add_argument("--only", action="append", metavar="GLOB",
                        help="snippets to consider, e.g. 'eager_mode/*' (repeatable)")
    parser.add_argument("--force", action="store_true", help="rerun snippets whose record is fresh")
    parser.add_argument("--list", action="store_true", help="say which records are fresh or stale; run nothing")
    parser.add_argument("--archive", type=Path, metavar="FILE",
                        help="after running, pack all of this device's records into FILE (.tar.gz)")
    parser.add_argument("--unpack", type=Path, metavar="FILE",
                        help="put the records packed in FILE in place under the outputs folder; run nothing")
    parser.add_argument("--timeout", type=float, default=900, metavar="S", help="per-snippet limit (default 900)")
    parser.add_argument("--snippets-dir", type=Path, default=ROOT / "snippets", help=argparse.SUPPRESS)
    parser.add_argument("--outputs-dir", type=Path, default=ROOT / "docs" / "outputs", help=argparse.SUPPRESS)
    parser.add_argument("--failed-dir", type=Path, default=ROOT / ".cache" / "regenerate" / "failed",
                        help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    # A polite kill (SIGTERM) unwinds like Ctrl-C, so the running snippet is stopped with us.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    try:
        if args.unpack:
            count = unpack(args.unpack, args.outputs_dir)
            print(f"unpacked {count} records from {args.unpack} into {args.outputs_dir}")
            return 0
        if args.device == "cuda" and not cuda_available():
            raise UsageError("--device cuda, but torch sees no CUDA device on this machine")
        args.device = args.device or ("cuda" if cuda_available() else "cpu")
        if args.archive and not args.archive.parent.is_dir():
            raise UsageError(f"--archive {args.archive}: folder {args.archive.parent} does not exist")
        return regenerate(args)
    except UsageError as error:
        print(f"regenerate: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("regenerate: interrupted; records already replaced stay, the others are as they were",
              file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
