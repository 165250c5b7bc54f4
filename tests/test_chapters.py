"""What a chapter is (scripts/chapters.py): sections, fences, includes, the plumbing rule, chapter pages and
their notebooks, on small hand-written pages and snippets, and on the site's own where it is the fact."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from scripts import chapters, directives, records, render, runner

pytestmark = pytest.mark.site_wide  # reads the whole site: --chapter runs it (tests/conftest.py)

PAGE = """\
# A chapter

Prose with `--8<-- "snippets/demo/a.py:one"` in a code span: not an include.

=== "PyTorch"

    ```python
    --8<-- "snippets/demo/a.py:one"
    ```

=== "JAX"

    ```python
    --8<-- 'snippets/demo/jax.py:one'
    ```

=== "Other"

    ```python
    --8<-- "snippets/demo/other.py"
    ```

````markdown
```python
--8<-- "snippets/demo/example.py:one"
```
````

```python
--8<-- "snippets/demo/a.py:two"
```
"""

SNIPPET = '''\
"""The docstring: the notebook's prose says it."""
import math

results = {}
# Why the recorder wants this: dropped with the statement below it.
results["pi"] = math.pi
if math.pi > 3:
    results["big"] = True
else:
    print("small")
# --8<-- [start:one]
print(round(math.pi, 2))
# Rounded, as the page says.
# --8<-- [end:one]
for n in range(2):
    results[n] = n
# --8<-- [start:two]
print("two")
# --8<-- [end:two]
'''


@pytest.fixture
def snippets(tmp_path, monkeypatch):
    """A throw-away snippets/ folder in place of the site's."""
    (tmp_path / "demo").mkdir()
    (tmp_path / "demo" / "a.py").write_text(SNIPPET)
    monkeypatch.setattr(records, "SNIPPETS", tmp_path)
    return tmp_path


def test_sections_are_the_runners_so_the_snippets_process_and_the_site_agree():
    assert chapters.section_lines is runner.section_lines and chapters.MARKER is runner.MARKER
    assert chapters.section_lines(SNIPPET) == {"one": (12, 13), "two": (18, 18)}


def test_a_shorter_fence_inside_a_longer_one_is_part_of_it_and_an_unclosed_fence_runs_to_the_end():
    lines = ["````markdown", "```python", "x", "```", "````", "text", "~~~", "code"]
    assert list(chapters.fence_blocks(lines)) == [(0, 4, "markdown", ""), (6, 7, "", "")]
    assert chapters.fence_mask(lines) == [True] * 5 + [False, True, True]
    segments = chapters.fenced_segments("a\n```\n<!-- md:records -->\n```\nb\n")
    assert segments == [(False, "a\n"), (True, "```\n<!-- md:records -->\n```\n"), (False, "b\n")]


def test_a_page_includes_what_its_code_blocks_include_but_not_its_markdown_examples():
    found = [(i.snippet, i.section) for i in chapters.page_includes(PAGE)]
    assert found == [("demo/a.py", "one"), ("demo/jax.py", "one"), ("demo/other.py", None), ("demo/a.py", "two")]
    assert chapters.page_snippets(PAGE) == {"demo/a.py", "demo/jax.py", "demo/other.py"}


def test_a_notebook_keeps_the_first_tab_in_place_runs_the_jax_tabs_last_and_leaves_other_tabs_out():
    lines = chapters.notebook_markdown(PAGE, aside_title="## JAX")
    shown = [(i.snippet, i.section) for i in chapters.page_includes("\n".join(lines))]
    assert shown == [("demo/a.py", "one"), ("demo/a.py", "two"), ("demo/jax.py", "one")]
    assert lines.index("## JAX") < next(k for k, line in enumerate(lines) if "demo/jax.py" in line)


def test_the_snippets_a_notebook_runs_are_read_from_its_page(tmp_path):
    page = tmp_path / "chapter.md"
    page.write_text("---\ntitle: A chapter\n---\n" + PAGE)
    assert chapters.notebook_snippets(page) == ["demo/a.py", "demo/jax.py"]


def test_a_page_showing_a_snippets_sections_out_of_file_order_is_named(snippets):
    fence = '```python\n--8<-- "snippets/demo/a.py:{}"\n```\n'
    assert chapters.out_of_order(fence.format("one") + fence.format("two")) == []
    (problem,) = chapters.out_of_order(fence.format("two") + fence.format("one"))
    assert problem == "snippets/demo/a.py: the page shows two, one; the file holds one, two"


def test_the_plumbing_rule_marks_code_that_names_results_not_comments_or_strings():
    code = 'x = 1  # results come later\nprint("results")\nresults["x"] = x\n'
    assert chapters.plumbing_lines(code) == [3]
    # A piece of a snippet that is not Python on its own is read token by token.
    assert chapters.plumbing_lines("    results[n] = n\nelse:\n    print(n)  # results\n") == [1]
    assert chapters.is_plumbing(ast.parse("results.update(a=1)").body[0])
    assert not chapters.is_plumbing(ast.parse("result = 1").body[0])


def test_a_notebook_runs_a_snippet_without_its_plumbing_markers_and_docstring(snippets):
    snippet = chapters.Snippet.load("demo/a.py")
    # A block left empty becomes `pass`; the comments above a dropped statement go with it, up to a marker.
    assert snippet.text(1, len(snippet.lines)) == (
        'import math\n\nif math.pi > 3:\n    pass\nelse:\n    print("small")\nprint(round(math.pi, 2))\n'
        '# Rounded, as the page says.\nprint("two")')
    assert snippet.section("two") == (18, 18)
    with pytest.raises(chapters.ChapterError, match="has no section 'three' .its sections: one, two."):
        snippet.section("three")


def test_a_dropped_statement_may_bind_no_name_kept_code_reads(snippets):
    (snippets / "demo" / "b.py").write_text(
        "results = {}\nlimit = results.setdefault('limit', 3)\n# --8<-- [start:one]\nprint(limit)\n"
        "# --8<-- [end:one]\n")
    with pytest.raises(chapters.ChapterError, match=r"snippets/demo/b.py:2: .* only it defines `limit`"):
        chapters.Snippet.load("demo/b.py")


def test_a_chapter_is_a_page_that_shows_snippet_sections_and_has_one_notebook(tmp_path, monkeypatch):
    include = '```python\n--8<-- "snippets/demo/a.py:one"\n```\n'
    for path, text in {"a.md": include, "topic/b.md": include, "c.md": "````markdown\n" + include + "````\n",
                       "d.md": "# No code\n", "outputs/e.md": include}.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    monkeypatch.setattr(chapters, "DOCS", tmp_path)
    assert chapters.chapter_pages() == [tmp_path / "a.md", tmp_path / "topic" / "b.md"]
    assert chapters.notebooks() == {"notebooks/a.ipynb": "a.md", "notebooks/topic__b.ipynb": "topic/b.md"}


def test_mkdocs_yml_is_read_once_for_the_nav_and_the_site(tmp_path):
    nav = chapters.nav()
    assert nav[0] == "index.md" and "eager-mode.md" in nav and len(nav) == len(set(nav))
    assert {p.relative_to(chapters.DOCS).as_posix() for p in chapters.chapter_pages()} <= set(nav)
    assert chapters.site_name() and chapters.site_url().startswith("http")
    assert chapters.config(chapters.ROOT) is chapters.config(chapters.DOCS.parent)  # read once
    assert chapters.nav(tmp_path) == []  # a tree without mkdocs.yml has no nav


def test_the_directives_hold_no_notebook_state():
    page = render.Page("chapter.md", "chapter/")
    assert page.target == render.PAGE and not page.under_code("demo/a.py", "one")
    assert not hasattr(page, "shown") and not hasattr(page, "attachments")
    with pytest.raises(directives.DirectiveError, match="only a notebook attaches images"):
        page.attach("x.svg", "image/svg+xml", b"<svg/>")


def imports(path: Path) -> set[str]:
    """The modules of scripts/ a file imports."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            parts = node.module.split(".")
            if parts[0] == "scripts":
                found.update(parts[1:2] or [a.name for a in node.names])
        elif isinstance(node, ast.Import):
            found.update(a.name.split(".")[1] for a in node.names if a.name.startswith("scripts."))
    return found


def test_the_runner_stays_standard_library_only_and_scripts_has_no_import_cycle():
    folder = records.ROOT / "scripts"
    graph = {p.stem: imports(p) & {q.stem for q in folder.glob("*.py")} for p in folder.glob("*.py")}
    assert graph["runner"] == set() and "runner" in graph["chapters"]
    tree = ast.parse((folder / "runner.py").read_text())
    modules = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    modules |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert modules - {"__future__"} <= sys.stdlib_module_names, modules - set(sys.stdlib_module_names)
    done: set[str] = set()

    def visit(module: str, path: tuple[str, ...]) -> None:
        assert module not in path, "import cycle: " + " -> ".join((*path, module))
        if module not in done:
            for other in graph.get(module, ()):
                visit(other, (*path, module))
            done.add(module)

    for module in graph:
        visit(module, ())
