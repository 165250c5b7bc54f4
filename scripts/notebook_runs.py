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
import fnmatch
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from scripts import chapters, records, run_env

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


def build(out: Path = BUILT, names: list[str] | None = None) -> list[str]:
    """Build the chapters' notebooks (every one, or those `names` names) with the site's builder, in a process of
    its own (only those whose inputs changed are built again); their names (notebooks/<name>.ipynb). Raises
    RuntimeError where it fails."""
    chosen = [arg for name in names or () for arg in ("--name", name)]
    done = subprocess.run([sys.executable, "-m", "scripts.notebooks", "--out", str(out), *chosen], cwd=records.ROOT,
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"building the notebooks failed: {(done.stderr or done.stdout).strip()[-2000:]}")
    return [Path(line).relative_to(out).as_posix() for line in done.stdout.splitlines()
            if line.endswith(".ipynb") and Path(line).is_relative_to(out)]


class NoMatch(ValueError):
    """An --only pattern that names no chapter's notebook: the recorder reports it as bad input (exit 2)."""


def locked(path: Path = RECEIPTS):
    """Hold the receipts file's lock: one writer at a time, so two runs at once keep each other's receipts.
    The lock is a file of its own beside it (hidden, so git ignores it), never replaced as the receipts are."""
    return records.exclusive(path.with_name(f".{path.name}.lock"), f"waiting for another run writing {path.name} ...")


def write(receipts: dict, path: Path = RECEIPTS) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".json.new")
    temporary.write_text(json.dumps(dict(sorted(receipts.items())), indent=1) + "\n")
    temporary.replace(path)


def update(made: dict, keep: set[str] | None = None, path: Path = RECEIPTS) -> None:
    """Put the receipts this run made into the file as it is now, under its lock: read, change those, write.
    With `keep`, drop the receipts of notebooks not in it (a chapter that is gone); every other receipt, another
    run's included, stays as it is on disk."""
    with locked(path):
        receipts = load(path)
        now = {name: receipt for name, receipt in receipts.items() if keep is None or name in keep} | made
        if now != receipts or not path.is_file():
            write(now, path)


def choose(names: list[str], only: list[str] | None) -> list[str]:
    """The notebooks --only names (each pattern a part of the name, or a glob of it); all without it. Raises
    NoMatch on a pattern that names none, as the recorder does for a snippet."""
    if not only:
        return list(names)
    chosen = []
    for pattern in only:
        hits = [n for n in names if fnmatch.fnmatch(n, f"*{pattern}*")]
        if not hits:
            raise NoMatch(f"--only {pattern!r} matches no chapter's notebook (they are "
                          f"{', '.join(Path(n).stem for n in names) or 'none'})")
        chosen += [n for n in hits if n not in chosen]
    return [n for n in names if n in chosen]


def chapter_notebooks() -> list[str]:
    """Every chapter's notebook name, read from the pages (scripts/chapters.py), none built."""
    return list(chapters.notebooks())


def built(names: list[str] | None = None) -> dict:
    """The chapters' notebooks (every one, or those `names` names), built (or taken from the cache) by the site's
    builder: {name: notebook}."""
    import nbformat

    return {name: nbformat.read(BUILT / name, as_version=4) for name in build(names=names)}


def regenerate(force: bool = False, only: list[str] | None = None, path: Path = RECEIPTS) -> int:
    """Run each stale (or, forced, every) notebook that --only names; put its receipt in the file as soon as it
    passes, leaving every other receipt as it is. 1 if any failed. Raises NoMatch, having run and written
    nothing, where an --only pattern names no notebook."""
    names = chapter_notebooks()  # from the pages alone: nothing is built for a notebook --only leaves out
    matched = choose(names, only)
    books = built(matched if only else None)
    receipts = load(path)
    fresh = [n for n in matched if n not in stale({n: books[n] for n in matched}, receipts)]
    chosen = [n for n in matched if force or n not in fresh]
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
        update({name: {"key": key(books[name]), "torch": torch_version(), "seconds": round(seconds, 1),
                       "date": dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat()}}, path=path)
    update({}, keep=set(names), path=path)  # drop the receipts of chapters that are gone
    kept = len(matched) - len(chosen)
    print(f"notebooks: {len(chosen) - len(failed)} ran, {len(failed)} failed, {kept} had a fresh receipt"
          + (f" (--only left out the other {len(names) - len(matched)})" if len(matched) < len(names) else ""))
    return 1 if failed else 0
