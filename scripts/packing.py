"""Records in transport: a GPU box packs what it recorded into one archive (--archive), and home unpacks it
(--unpack), each record swapped into place atomically under the torch release that made it.

Needs only the standard library: the GPU box runs it.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tarfile
import tempfile
from pathlib import Path

from scripts import records
from scripts.records import DEVICES, STOPS


class ArchiveError(Exception):
    """An archive that cannot be unpacked; the message is one line and nothing was written."""


def swap_into_place(new: Path, final: Path) -> None:
    """Replace `final` with the finished folder `new` by two renames; recover() undoes a half-done swap."""
    old = final.with_name(f".{final.name}.old-{os.getpid()}")
    if final.exists():
        final.rename(old)
    new.rename(final)
    shutil.rmtree(old, ignore_errors=True)


def pack(outputs_dir: Path, device: str, archive: Path, failed_dir: Path | None = None,
         only: list[str] | None = None) -> tuple[int, int]:
    """Write every record of `device` (or those of the snippets in `only`) into one .tar.gz (atomically),
    members named <device>/<record>/..., and the kept output of each failed run as failed/<device>/<record>/...,
    so that at home the record it failed to replace reads "failed", never "fresh". Returns (records, failed
    runs)."""
    found = [r for r in records.find_records(device, outputs_dir) if only is None or r.snippet in only]
    failed = records.find_records(device, failed_dir) if failed_dir is not None else []
    archive = Path(archive)
    partial = archive.with_name(f".{archive.name}.partial")
    with tarfile.open(partial, "w:gz") as tar:
        for record in found:
            tar.add(record.folder, arcname=record.folder.relative_to(outputs_dir).as_posix(), filter=_plain)
        for record in failed:
            tar.add(record.folder, arcname="failed/" + record.folder.relative_to(failed_dir).as_posix(),
                    filter=_plain)
        stops = outputs_dir / device / STOPS
        if stops.is_file():  # what a budget's stops showed, for the plans at home
            tar.add(stops, arcname=f"{device}/{STOPS}", filter=_plain)
    partial.rename(archive)
    return len(found), len(failed)


def _plain(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def unpack(archive: Path, outputs_dir: Path, failed_dir: Path = records.FAILED) -> int:
    """Put each record of an archive made by --archive in place, one atomic swap per record, under the torch
    release that made it (a GPU box's older torch goes to docs/outputs/torch-<release>/); failed runs
    (failed/<device>/...) go where the recorder keeps failed runs, so their records read "failed"."""
    try:
        tar = tarfile.open(archive, "r:*")
    except (OSError, tarfile.TarError) as error:
        raise ArchiveError(f"cannot read archive {archive}: {' '.join(str(error).split())}") from None
    with tar, tempfile.TemporaryDirectory(dir=_mkdir(outputs_dir), prefix=".unpack-") as tmp:
        members = tar.getmembers()
        for member in members:
            parts = Path(member.name).parts
            if parts and parts[0] == "failed":
                parts = parts[1:]
            if (
                member.name.startswith("/") or ".." in parts or not parts or parts[0] not in DEVICES
                or not (member.isfile() or member.isdir())
            ):
                raise ArchiveError(f"{archive}: refusing member {member.name!r} (not a record under cpu/ or cuda/)")
        tar.extractall(tmp, filter="data") if sys.version_info >= (3, 12) else tar.extractall(tmp)
        found = []
        for device in DEVICES:
            found += records.find_records(device, Path(tmp))
        for record in found:
            try:
                record.validate()
            except records.CorruptRecord as error:
                raise ArchiveError(f"{archive}: {record.device}/{record.snippet[:-3]}: {error}") from None
        for record in found:  # each into the folder of the torch release that made it
            final = records.release_root(record.release, outputs_dir) / record.folder.relative_to(tmp)
            final.parent.mkdir(parents=True, exist_ok=True)
            swap_into_place(record.folder, final)
        for device in DEVICES:
            merge_stops(Path(tmp) / device / STOPS, outputs_dir, device)
            for record in records.find_records(device, Path(tmp) / "failed"):
                final = (records.release_root(record.release, failed_dir)
                         / record.folder.relative_to(Path(tmp) / "failed"))
                final.parent.mkdir(parents=True, exist_ok=True)
                swap_into_place(record.folder, final)
    return len(found)


def merge_stops(carried: Path, outputs_dir: Path, device: str) -> None:
    """Add the stops an archive carries (records.STOPS) to those kept at home, each under the torch release
    that saw it; a stop that a record made since then answers is dropped by the plans, not here."""
    if not carried.is_file():
        return
    for snippet, seen in json.loads(carried.read_text()).items():
        records.keep_stops(records.release_root(records.release_of(seen["torch"]), outputs_dir) / device,
                           {snippet: seen})


def _mkdir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path
