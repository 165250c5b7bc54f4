"""Receipts that each chapter's notebook ran top to bottom in a fresh kernel, made where records are made.

A notebook runs the same snippets its chapter's records ran, so running every notebook in every test run
would run each snippet a third time. Instead the recorder runs a notebook whose code changed, as a reader
would (a fresh kernel, an empty folder, none of the project's or the suite's environment variables, this
machine's CPU), and keeps a receipt: the digest of its code cells and torch's version, when it ran, how long
it took. The suite proves the notebooks without a kernel (the plumbing rule, ruff's undefined-name check, cells
equal to the snippets' lines) and fails on a missing or stale receipt, as it does on a stale record: the same
model as Quarto's freeze or sphinx-gallery's checksums.

    python -m scripts.regenerate --notebooks            # run the notebooks whose receipt is missing or stale
    python -m scripts.regenerate --notebooks --force    # run them all

Needs the docs and notebook extras (mkdocs, nbclient, ipykernel): the project's venv after the README's test
set-up. The notebooks are built by the site's own builder (scripts/notebooks.py) in a process of its own, into
its cache (a notebook whose inputs did not change is not built again): this module, part of the recorder,
imports nothing of the site.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from scripts import records, run_env

RECEIPTS = records.OUTPUTS / "notebook-runs.json"
BUILT = records.CACHE / "notebooks"  # where scripts/notebooks.py builds them (its CACHE)
CELL_LIMIT_S = 900
COMMAND = f"{records.REMAKE} --notebooks"  # the hint a stale receipt prints, as a record's does


def torch_version() -> str:
    from importlib.metadata import version

    return version("torch")


def key(notebook) -> str:
    """What a run proves: these code cells, with this torch."""
    digest = hashlib.sha256(torch_version().encode())
    for cell in notebook.cells:
        if cell.cell_type == "code":
            digest.update(hashlib.sha256(cell.source.encode()).digest())
    return digest.hexdigest()


def load(path: Path = RECEIPTS) -> dict:
    return json.loads(path.read_text()) if path.is_file() else {}


def stale(notebooks: dict, receipts: dict) -> list[str]:
    """The names of the notebooks whose receipt is missing or was made for other code cells or another torch."""
    return [name for name, notebook in notebooks.items() if receipts.get(name, {}).get("key") != key(notebook)]


def run(notebook, folder: Path) -> float:
    """Run a notebook in a fresh kernel, in an empty folder, with a reader's environment; seconds taken.
    Raises nbclient's CellExecutionError on a failing cell."""
    import nbclient

    env = run_env.readers(os.environ)
    client = nbclient.NotebookClient(notebook, timeout=CELL_LIMIT_S, kernel_name="python3",
                                     resources={"metadata": {"path": str(folder)}})
    start = time.perf_counter()
    client.execute(env=env)
    return time.perf_counter() - start


def build(out: Path = BUILT) -> list[str]:
    """Build every chapter's notebook with the site's builder, in a process of its own (only those whose inputs
    changed are built again); their names (notebooks/<name>.ipynb). Raises RuntimeError where it fails."""
    done = subprocess.run([sys.executable, "-m", "scripts.notebooks", "--out", str(out)], cwd=records.ROOT,
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"building the notebooks failed: {(done.stderr or done.stdout).strip()[-2000:]}")
    return [Path(line).relative_to(out).as_posix() for line in done.stdout.splitlines()
            if line.endswith(".ipynb") and Path(line).is_relative_to(out)]


def write(receipts: dict, path: Path = RECEIPTS) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".json.new")
    temporary.write_text(json.dumps(dict(sorted(receipts.items())), indent=1) + "\n")
    temporary.replace(path)


def regenerate(force: bool = False, only: list[str] | None = None) -> int:
    """Run each stale (or, forced, every) notebook; write its receipt as soon as it passes. 1 if any failed."""
    import fnmatch

    import nbformat

    names = build()
    books = {name: nbformat.read(BUILT / name, as_version=4) for name in names}
    receipts = {name: receipt for name, receipt in load().items() if name in books}  # drop removed chapters
    chosen = [n for n in (list(books) if force else stale(books, receipts))
              if not only or any(fnmatch.fnmatch(n, f"*{pattern}*") for pattern in only)]
    failed = []
    for number, name in enumerate(chosen, 1):
        print(f"[{number}/{len(chosen)}] {name} ...", end=" ", flush=True)
        with tempfile.TemporaryDirectory(prefix="notebook-run-") as folder:
            try:
                seconds = run(books[name], Path(folder))
            except Exception as error:  # a failing cell, a dead kernel, a timeout: the receipt stays as it was
                print("failed")
                print("    " + str(error).strip().splitlines()[-1][:300], file=sys.stderr)
                failed.append(name)
                continue
        print(f"ran in {seconds:.0f} s")
        receipts[name] = {"key": key(books[name]), "torch": torch_version(), "seconds": round(seconds, 1),
                          "date": dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat()}
        write(receipts)
    write(receipts)
    print(f"notebooks: {len(chosen) - len(failed)} ran, {len(failed)} failed, "
          f"{len(books) - len(chosen)} had a fresh receipt")
    return 1 if failed else 0
