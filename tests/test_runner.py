"""scripts/runner.py: a snippet's printed sections, its `results` dict kept as JSON (timings, profiler traces,
FX graphs, tensors), and its working folder, on throw-away snippets."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from scripts import runner

SECTIONED = """\
def shout(text):
    print(text.upper())


print("before")
# --8<-- [start:one]
print("in one")
shout("called from one")
# --8<-- [start:inner]
print("in inner")
# --8<-- [end:inner]
# --8<-- [end:one]
print("between")
#  --8<-- [start:two-words]
print("in two")
#  --8<-- [end:two-words]
print("after")
"""


def snippet(tmp_path: Path, source: str, name: str = "snippet.py") -> Path:
    path = tmp_path / "snippets" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source))
    return path


def run(tmp_path: Path, source: str) -> tuple[Path, dict]:
    """Run a snippet into tmp_path/record; return the folder and its results.json (or {})."""
    folder = tmp_path / "record"
    runner.run(snippet(tmp_path, source), folder)
    results = folder / "files" / "results.json"
    return folder, json.loads(results.read_text()) if results.exists() else {}


# ----------------------------------------------------------------------------------------------- sections


def test_section_lines_finds_each_named_section_without_its_markers():
    assert runner.section_lines(SECTIONED) == {"one": (7, 11), "inner": (10, 10), "two-words": (15, 15)}


@pytest.mark.parametrize("source, message", [
    ("# --8<-- [start:a]\n# --8<-- [start:a]\n# --8<-- [end:a]\n", "line 2: section 'a' starts twice"),
    ("# --8<-- [end:a]\n", "line 1: section 'a' ends but never starts"),
    ("# --8<-- [start:a]\n# --8<-- [start:b]\n# --8<-- [end:b]\n", "section(s) never end: a"),
])
def test_section_lines_refuses_markers_that_do_not_pair(source, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        runner.section_lines(source)


def test_printed_text_is_split_by_section_and_the_rest_filed_under_empty(tmp_path, capsys):
    folder, _ = run(tmp_path, SECTIONED)
    sections = json.loads((folder / "sections.json").read_text())
    assert sections == {
        "": "before\nbetween\nafter\n",
        "one": "in one\nCALLED FROM ONE\n",  # printed by a function defined outside, called inside
        "inner": "in inner\n",  # the innermost section wins
        "two-words": "in two\n",
    }
    everything = "before\nin one\nCALLED FROM ONE\nin inner\nbetween\nin two\nafter\n"
    assert (folder / "stdout.txt").read_text() == everything
    assert capsys.readouterr().out == everything, "the snippet's output should still reach the caller's stdout"
    assert not (folder / "files" / "results.json").exists(), "no `results`, no results.json"


def test_a_failing_snippet_still_leaves_its_sections_and_restores_the_caller(tmp_path):
    cwd, stdout, argv = os.getcwd(), sys.stdout, sys.argv
    folder = tmp_path / "record"
    source = snippet(tmp_path, "# --8<-- [start:a]\nprint('so far')\n# --8<-- [end:a]\nraise RuntimeError('boom')\n")
    with pytest.raises(RuntimeError, match="boom"):
        runner.run(source, folder)
    assert json.loads((folder / "sections.json").read_text()) == {"a": "so far\n"}
    assert (os.getcwd(), sys.stdout, sys.argv) == (cwd, stdout, argv)


# -------------------------------------------------------------------------------------------- working folder


def test_the_snippet_runs_in_the_records_files_folder_and_the_callers_cwd_is_kept(tmp_path):
    cwd = os.getcwd()
    folder, results = run(tmp_path, """\
        import os, sys
        from pathlib import Path
        Path("left.txt").write_text("for the lesson")
        results = {"cwd": os.getcwd(), "argv": sys.argv, "name": __name__}
        """)
    assert os.getcwd() == cwd
    assert results["cwd"] == str((folder / "files").resolve())
    assert results["argv"] == [str((tmp_path / "snippets" / "snippet.py").resolve())]
    assert results["name"] == "__main__"
    assert (folder / "files" / "left.txt").read_text() == "for the lesson"
    assert sorted(p.name for p in (folder / "files").iterdir()) == ["left.txt", "results.json"]


def test_a_relative_record_folder_works_as_an_absolute_one(tmp_path, monkeypatch):
    """`python scripts/runner.py SNIPPET FOLDER` with FOLDER relative to where it is run: what the runner
    writes after changing into FOLDER/files must still land in FOLDER/files."""
    monkeypatch.chdir(tmp_path)
    source = snippet(tmp_path, "print('hi')\nresults = {'n': 1}\n")
    runner.run(source, Path("record"))
    assert os.getcwd() == str(tmp_path)
    assert json.loads((tmp_path / "record" / "files" / "results.json").read_text()) == {"n": 1}
    assert json.loads((tmp_path / "record" / "sections.json").read_text()) == {"": "hi\n"}


def test_the_command_line_runs_the_snippet_with_its_own_folder_first_on_the_import_path(tmp_path):
    snippet(tmp_path, "GREETING = 'hello from a helper'\n", "_helper.py")
    source = snippet(tmp_path, "import _helper\nprint(_helper.GREETING)\nresults = {'ok': True}\n")
    folder = tmp_path / "record"
    result = subprocess.run([sys.executable, runner.__file__, str(source), str(folder)], cwd=tmp_path,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "hello from a helper\n"
    assert json.loads((folder / "files" / "results.json").read_text()) == {"ok": True}
    assert not (folder / "stdout.txt").exists(), "the recorder captures stdout itself"
    usage = subprocess.run([sys.executable, runner.__file__], capture_output=True, text=True, timeout=60)
    assert usage.returncode == 2 and "usage: runner.py SNIPPET FOLDER" in usage.stderr


# ----------------------------------------------------------------------------------------- keeping results


def test_plain_values_tensors_tuples_sets_dtypes_and_paths_become_json(tmp_path):
    pytest.importorskip("torch")
    np = pytest.importorskip("numpy")
    assert np
    _, results = run(tmp_path, """\
        import math
        from pathlib import Path
        import numpy as np
        import torch
        results = {
            "int": 65536, "float": 0.5, "bool": True, "none": None, "text": "x",
            "inf": math.inf, "nan": float("nan"),
            "tensor": torch.tensor([[1, 2], [3, 4]]), "scalar": torch.tensor(2.5),
            "numpy": np.arange(3), "np_float": np.float32(1.5), "np_int": np.int64(7),
            "tuple": (1, (2, 3)), "set": {3, 1, 2}, "frozenset": frozenset({"b", "a"}),
            "dtype": torch.float32, "device": torch.device("cpu"), "path": Path("a/b.txt"),
            "nested": {1: [torch.tensor(1)], "deeper": {"dtype": torch.int8}},
        }
        """)
    assert results == {
        "int": 65536, "float": 0.5, "bool": True, "none": None, "text": "x",
        "inf": "inf", "nan": "nan",
        "tensor": [[1, 2], [3, 4]], "scalar": 2.5,
        "numpy": [0, 1, 2], "np_float": 1.5, "np_int": 7,
        "tuple": [1, [2, 3]], "set": [1, 2, 3], "frozenset": ["a", "b"],
        "dtype": "torch.float32", "device": "cpu", "path": "a/b.txt",
        "nested": {"1": [1], "deeper": {"dtype": "torch.int8"}},
    }
    assert isinstance(results["int"], int)


def test_an_object_the_runner_cannot_keep_fails_naming_its_place(tmp_path):
    with pytest.raises(TypeError) as error:
        run(tmp_path, "class Opaque: pass\nresults = {'a': {'b': Opaque()}}\n")
    assert "results['a']['b'] holds a __main__.Opaque" in str(error.value)
    assert not (tmp_path / "record" / "files" / "results.json").exists()


def test_results_that_are_not_a_dict_fail(tmp_path):
    with pytest.raises(TypeError, match="`results` must be a dict, not list"):
        run(tmp_path, "results = [1, 2]\n")


MEASURE = """\
from torch.utils import benchmark
from torch.utils.benchmark.utils.common import TaskSpec
m = benchmark.Measurement(number_per_run=1, raw_times=[1e-6, 2e-6, 3e-6, 4e-6, 5e-6],
                          task_spec=TaskSpec(stmt="pass", setup="pass", label="f(float32[8])", num_threads=2))
{touch}
results = {{"timing": {{"eager": m}}}}
"""
TIMING = {"work": "f(float32[8])", "threads": 2, "median_us": 3.0, "iqr_us": 2.0, "q1_us": 2.0, "q3_us": 4.0,
          "n": 5, "times_us": [1.0, 2.0, 3.0, 4.0, 5.0]}


def approx_timing(timing: dict) -> dict:
    def rounded(v):
        return [round(x, 6) for x in v] if isinstance(v, list) else round(v, 6) if isinstance(v, float) else v
    return {k: rounded(v) for k, v in timing.items()}


def test_a_measurement_becomes_the_sites_timing_dict(tmp_path):
    pytest.importorskip("torch")
    # As snippets do: the median was printed before the Measurement was stored.
    _, results = run(tmp_path, MEASURE.format(touch="print(m.median, m.iqr, len(m.times))"))
    assert approx_timing(results["timing"]["eager"]) == TIMING


def test_a_measurement_nobody_read_yet_still_has_its_quartiles(tmp_path):
    """Measurement computes its quartiles lazily: the runner must not read them before they exist."""
    pytest.importorskip("torch")
    _, results = run(tmp_path, MEASURE.format(touch=""))
    timing = results["timing"]["eager"]
    assert timing["q1_us"] <= timing["median_us"] <= timing["q3_us"], timing
    assert approx_timing(timing) == TIMING


def test_a_profile_becomes_a_trace_file_without_the_machines_fields(tmp_path):
    pytest.importorskip("torch")
    folder, results = run(tmp_path, """\
        import torch
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            torch.ones(8).sin().sum()
        results = {"traces": {"eager": prof}}
        """)
    assert results == {"traces": {"eager": {"trace": "traces.eager.trace.json"}}}
    path = folder / "files" / "traces.eager.trace.json"
    trace = json.loads(path.read_text())
    names = {e.get("name") for e in trace["traceEvents"]}
    assert "aten::sin" in names
    assert not {"host_name", "hostName", "traceName", "distributedInfo"} & set(trace)
    assert '"host_name"' not in path.read_text() and '"traceName"' not in path.read_text()
    assert str(tmp_path) not in path.read_text()


def test_a_list_of_graph_modules_becomes_one_file_with_each_graph(tmp_path):
    pytest.importorskip("torch")
    folder, results = run(tmp_path, """\
        import torch
        class First(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.linear1 = torch.nn.Linear(4, 4)
            def forward(self, x):
                return torch.relu(self.linear1(x))
        class Second(First):
            def forward(self, x):
                return self.linear1(x).sin()
        first, second = torch.fx.symbolic_trace(First()), torch.fx.symbolic_trace(Second())
        results = {"graphs": {"broken": [first, second], "one": first, "bare": second.graph}}
        """)
    assert results["graphs"] == {
        "broken": {"fxgraph": "graphs.broken.fxgraph.txt", "graphs": 2},
        "one": {"fxgraph": "graphs.one.fxgraph.txt", "graphs": 1},
        "bare": {"fxgraph": "graphs.bare.fxgraph.txt", "graphs": 1},
    }
    text = (folder / "files" / "graphs.broken.fxgraph.txt").read_text()
    assert text.count("graph():") == 2
    first, second = text.split("graph():")[1:]
    assert "torch.relu" in first and "sin" in second and "sin" not in first
    assert "call_module[target=linear1]" in first and "call_module[target=linear1]" in second


def test_results_files_become_files_beside_results_json(tmp_path):
    folder, results = run(tmp_path, """\
        results = {"files": {"output_code.py": "def kernel(): pass\\n", "blob.bin": b"\\x00\\x01"}, "n": 1}
        """)
    assert results == {"files": ["blob.bin", "output_code.py"], "n": 1}
    assert (folder / "files" / "output_code.py").read_text() == "def kernel(): pass\n"
    assert (folder / "files" / "blob.bin").read_bytes() == b"\x00\x01"


@pytest.mark.parametrize("name", ["debug/output_code.py", ".hidden", "results.json", "../escape.txt"])
def test_results_files_refuses_names_that_are_not_a_plain_file_name(tmp_path, name):
    with pytest.raises(ValueError, match=r"a file name of its own, without folders"):
        run(tmp_path, f"results = {{'files': {{{name!r}: 'x'}}}}\n")
    assert not (tmp_path / "escape.txt").exists()


def test_results_files_refuses_what_is_not_text(tmp_path):
    """A number is not a file's text: bytes(3) would silently write three NUL bytes."""
    with pytest.raises(TypeError, match=r"results\['files'\]\['count.txt'\]"):
        run(tmp_path, "results = {'files': {'count.txt': 3}}\n")
    assert not (tmp_path / "record" / "files" / "count.txt").exists()
