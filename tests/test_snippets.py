"""Snippets hold the lesson only: sections well formed, no recording plumbing, no files left behind."""

import ast
import re
import subprocess
import sys

import pytest

from scripts import records, runner

SNIPPETS = records.find_snippets()
# Lines that exist only for recording: a reader copying a section out should never see them.
PLUMBING = re.compile(
    r"\bresults\b|SNIPPET_OUTPUT|os\.environ|\btempfile\b|\bjson\.dumps?\b|results\.json|export_chrome_trace"
    r"|\bOUT\b|render_assets|scripts/"
)
# Calls that leave files in a reader's folder.
WRITES = {"export_chrome_trace", "savefig", "write_text", "write_bytes", "mkdtemp", "to_csv"}


def test_snippets_exist():
    assert SNIPPETS, "no snippets found under snippets/"


@pytest.mark.parametrize("name", SNIPPETS)
def test_sections_are_well_formed(name):
    runner.section_lines((records.SNIPPETS / name).read_text())  # raises on a start without an end


@pytest.mark.parametrize("name", SNIPPETS)
def test_no_plumbing_inside_shown_sections(name):
    source = (records.SNIPPETS / name).read_text()
    lines = source.splitlines()
    found = []
    for section, (first, last) in runner.section_lines(source).items():
        for number in range(first, last + 1):
            code = lines[number - 1].split("#", 1)[0] if not lines[number - 1].lstrip().startswith("#") else ""
            comment = lines[number - 1] if lines[number - 1].lstrip().startswith("#") else ""
            if PLUMBING.search(code) or re.search(r"render_assets|scripts/|results\.json", comment):
                found.append(f"snippets/{name}:{number} (section '{section}'): {lines[number - 1].strip()}")
    assert not found, "recording plumbing a reader would see on the page:\n" + "\n".join(found)


@pytest.mark.parametrize("name", SNIPPETS)
def test_no_recording_plumbing_anywhere(name):
    """The runner collects what a record needs: a snippet never picks an output folder or writes JSON."""
    source = (records.SNIPPETS / name).read_text()
    tree = ast.parse(source)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and node.value in ("SNIPPET_OUTPUT_DIR", "results.json"):
            found.append(f"line {node.lineno}: {node.value!r}")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in WRITES:
            found.append(f"line {node.lineno}: .{node.func.attr}(...) leaves a file in the reader's folder")
        if isinstance(node, ast.Attribute) and node.attr in ("dump", "dumps") and \
                isinstance(node.value, ast.Name) and node.value.id == "json":
            found.append(f"line {node.lineno}: json.{node.attr}")
    assert not found, f"snippets/{name}:\n" + "\n".join(found)


def test_a_copied_snippet_runs_alone_and_leaves_a_clean_folder(tmp_path):
    """A reader's copy of a snippet prints what the page shows and leaves nothing behind in its folder."""
    name = "dissecting/fx_rewrite.py"
    folder, home = tmp_path / "reader", tmp_path / "home"
    folder.mkdir()
    home.mkdir()
    copy = folder / "fx_rewrite.py"
    copy.write_text((records.SNIPPETS / name).read_text())
    env = {"PATH": "/usr/bin:/bin", "CUDA_VISIBLE_DEVICES": "", "HOME": str(home), "TMPDIR": str(home)}
    result = subprocess.run([sys.executable, copy.name], cwd=folder, capture_output=True, text=True,
                            timeout=300, env=env)
    assert result.returncode == 0, result.stderr[-2000:]
    recorded = records.record(name, "cpu").stdout
    assert result.stdout.splitlines()[:3] == recorded.splitlines()[:3]
    left = sorted(p.name for p in folder.iterdir() if p.name != copy.name)
    assert left == [], f"the snippet left {left} in the reader's folder"


def measure_functions() -> dict[str, str]:
    """snippet -> the code of its `measure` function (docstring left out), for every snippet that times."""
    found = {}
    for name in SNIPPETS:
        for node in ast.parse((records.SNIPPETS / name).read_text()).body:
            if isinstance(node, ast.FunctionDef) and node.name == "measure":
                body = node.body[1:] if isinstance(node.body[0], ast.Expr) and \
                    isinstance(node.body[0].value, ast.Constant) else node.body
                found[name] = ast.dump(node.args) + ast.dump(ast.Module(body=body, type_ignores=[]))
    return found


def test_every_snippet_times_by_the_one_method():
    """Each timed snippet carries its own copy of `measure`, so it runs alone; the copies must stay one method
    (one for torch, one for JAX, whose arrays torch's Timer cannot wait for)."""
    found = measure_functions()
    assert len(found) >= 10, "the snippets that time should define measure()"
    for framework, members in (("JAX", [n for n in found if n.startswith("jax/")]),
                               ("torch", [n for n in found if not n.startswith("jax/")])):
        variants = {found[n] for n in members}
        assert len(variants) <= 1, (
            f"the {framework} snippets time by {len(variants)} different measure() functions: "
            f"copy the one in {members[0]} to {', '.join(m for m in members if found[m] != found[members[0]])}"
        )


# Helpers copied between snippets that have no docstring to recognise them by: compared whole, by name.
HELPERS_WITHOUT_DOCSTRING = ("counting", "h100_stand_ins", "stopped_by_us", "tidy")


def test_a_helper_copied_into_several_snippets_stays_one_helper():
    """A snippet runs alone, so a helper it shares with others (the HLO parsers of the JAX snippets,
    `logged()`, `measure()`) is a copy. A copy is a function of the same name with the same docstring; its
    code must stay the same in every snippet; so must the helpers named in HELPERS_WITHOUT_DOCSTRING. Other
    same-named functions without a shared docstring (the chapters' example functions) may differ."""
    copies: dict[tuple[str, str], dict[str, str]] = {}
    for name in SNIPPETS:
        for node in ast.parse((records.SNIPPETS / name).read_text()).body:
            doc = ast.get_docstring(node) if isinstance(node, ast.FunctionDef) else None
            if isinstance(node, ast.FunctionDef) and node.name in HELPERS_WITHOUT_DOCSTRING:
                copies.setdefault((node.name, ""), {})[name] = ast.dump(node)
            elif doc:
                code = ast.dump(node.args) + ast.dump(ast.Module(body=node.body[1:], type_ignores=[]))
                copies.setdefault((node.name, doc), {})[name] = code
    shared = {key: found for key, found in copies.items() if len(found) > 1}
    assert {name for name, _ in shared} >= {"measure", "logged", "computations", "opcodes", *HELPERS_WITHOUT_DOCSTRING}
    for (function, _), found in shared.items():
        first = next(iter(found))
        differ = [name for name, code in found.items() if code != found[first]]
        assert not differ, f"{function}() differs from snippets/{first} in snippets/{', snippets/'.join(differ)}"
