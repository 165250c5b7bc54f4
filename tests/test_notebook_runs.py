"""The notebook runner's bookkeeping (scripts/notebook_runs.py): which notebooks --only picks, what its summary
says, and that it writes only the receipts it made, under a lock. No kernel runs here: `built` and `run` are
stand-ins, the receipts file a temporary one."""

from __future__ import annotations

import fcntl
import json
import threading
import time

import nbformat
import pytest

from scripts import notebook_runs, regenerate

NAMES = ("notebooks/dead-code.ipynb", "notebooks/buffer-reuse.ipynb", "notebooks/dissecting__guards.ipynb")


def notebook(code: str):
    book = nbformat.v4.new_notebook()
    book.cells = [nbformat.v4.new_code_cell(code)]
    return book


class Books(dict):
    asked: list

    def __init__(self, *args):
        super().__init__(*args)
        self.asked = []


@pytest.fixture
def books(monkeypatch, tmp_path):
    """Three built notebooks, none run yet; `ran` lists the ones the runner ran, in order, and `made.asked` the
    names each build was asked for (None: all)."""
    made = Books({name: notebook(f"print({i})") for i, name in enumerate(NAMES)})
    ran = []
    monkeypatch.setattr(notebook_runs, "chapter_notebooks", lambda: list(NAMES))

    def built(names=None):
        made.asked.append(names)
        return {name: book for name, book in made.items() if names is None or name in names}

    monkeypatch.setattr(notebook_runs, "built", built)
    monkeypatch.setattr(notebook_runs, "RECEIPTS", tmp_path / "notebook-runs.json")

    def run(book, folder):
        ran.append(next(name for name, b in made.items() if b is book))
        return 1.0

    monkeypatch.setattr(notebook_runs, "run", run)
    return made, ran, tmp_path / "notebook-runs.json"


def receipt_for(book) -> dict:
    return {"key": notebook_runs.key(book), "torch": notebook_runs.torch_version(), "seconds": 1.0, "date": "then"}


def test_only_that_names_no_notebook_is_bad_input_and_runs_and_writes_nothing(books, capsys):
    made, ran, path = books
    with pytest.raises(notebook_runs.NoMatch, match=r"--only 'no-such-chapter' matches no chapter's notebook"):
        notebook_runs.regenerate(only=["dead-code", "no-such-chapter"], path=path)
    assert ran == [] and not path.exists()


def test_the_recorder_exits_2_with_one_line_where_only_names_no_notebook(books, monkeypatch, capsys):
    made, ran, path = books
    monkeypatch.setattr(notebook_runs, "regenerate",
                        lambda force, only: notebook_runs.choose(list(made), only) and 0)
    assert regenerate.main(["--notebooks", "--only", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("regenerate: error: --only 'nope' matches no chapter's notebook (they are dead-code, ")
    assert len(err.strip().splitlines()) == 1


def test_the_summary_counts_only_the_notebooks_only_picked(books, capsys):
    made, ran, path = books
    path.write_text(json.dumps({NAMES[0]: receipt_for(made[NAMES[0]])}))
    assert notebook_runs.regenerate(only=["dead-code"], path=path) == 0
    out = capsys.readouterr().out
    assert ran == []
    assert "notebooks: 0 ran, 0 failed, 1 had a fresh receipt (--only left out the other 2)" in out
    assert notebook_runs.regenerate(only=["buffer", "dissecting"], path=path) == 0
    assert ran == [NAMES[1], NAMES[2]]
    assert "notebooks: 2 ran, 0 failed, 0 had a fresh receipt (--only left out the other 1)" in capsys.readouterr().out
    # --only builds only the notebooks it names; without it, every one.
    assert made.asked[:2] == [[NAMES[0]], [NAMES[1], NAMES[2]]]
    assert notebook_runs.regenerate(path=path) == 0
    assert "notebooks: 0 ran, 0 failed, 3 had a fresh receipt\n" in capsys.readouterr().out


def test_a_run_keeps_the_receipts_another_run_wrote_meanwhile_and_drops_only_gone_chapters(books, monkeypatch):
    """Read-modify-write: while this run ran a notebook, another one finished and wrote its receipt; both stay."""
    made, ran, path = books
    path.write_text(json.dumps({"notebooks/gone.ipynb": {"key": "x"}}))
    theirs = receipt_for(made[NAMES[2]])

    def run(book, folder):  # the other run writes its receipt while this one's notebook runs
        ran.append(book)
        notebook_runs.update({NAMES[2]: theirs}, path=path)
        return 1.0

    monkeypatch.setattr(notebook_runs, "run", run)
    assert notebook_runs.regenerate(only=["dead-code"], path=path) == 0
    receipts = json.loads(path.read_text())
    assert set(receipts) == {NAMES[0], NAMES[2]}, "a receipt was lost, or a gone chapter's was kept"
    assert receipts[NAMES[2]] == theirs


def test_a_run_waits_for_the_lock_another_writer_holds(books):
    made, ran, path = books
    done = threading.Event()
    with open(path.with_name(f".{path.name}.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        worker = threading.Thread(target=lambda: (notebook_runs.regenerate(path=path), done.set()))
        worker.start()
        time.sleep(0.5)
        assert not done.is_set() and not path.exists(), "it wrote while another writer held the lock"
        path.write_text(json.dumps({"notebooks/other.ipynb": {"key": "y"}}))  # what that writer wrote
        fcntl.flock(lock, fcntl.LOCK_UN)
        worker.join(30)
    assert done.is_set()
    assert set(json.loads(path.read_text())) == set(NAMES), "its three receipts, the gone chapter's dropped"
