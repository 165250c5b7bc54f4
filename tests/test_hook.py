"""The mkdocs hook's directives, on a throw-away tree of snippets and records."""

import hashlib
import json

import pytest
from mkdocs.exceptions import PluginError
from mkdocs_hooks import expand

SOURCE = "# --8<-- [start:main]\nprint('hi')\n# --8<-- [end:main]\n"


@pytest.fixture
def tree(tmp_path):
    snippets, outputs = tmp_path / "snippets", tmp_path / "outputs"
    (snippets / "demo").mkdir(parents=True)
    (snippets / "demo" / "hello.py").write_text(SOURCE)
    return snippets, outputs


def write_record(tree, device, source=SOURCE, results=None, stdout="hi\n"):
    snippets, outputs = tree
    folder = outputs / device / "demo" / "hello"
    (folder / "files").mkdir(parents=True)
    environment = {"torch": "2.13.0", "triton": "3.7.1", "python": "3.11.7", "cpu": "Test CPU", "cpu_count": 2,
                   "gpu": "NVIDIA H200", "cuda": "12.8", "driver": "570.1"}
    manifest = {"snippet": "snippets/demo/hello.py", "sha256": hashlib.sha256(source.encode()).hexdigest(),
                "device": device, "date": "2026-11-21T12:00:00+00:00", "exit_status": 0, "environment": environment}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    (folder / "stdout.txt").write_text(stdout)
    (folder / "sections.json").write_text(json.dumps({"main": stdout}))
    (folder / "files" / "results.json").write_text(json.dumps(results or {"time_us": 731.4, "share": 0.912}))


def render(tree, markdown, page="chapter.md"):
    return expand(markdown, page, *tree)


def test_output_shows_a_tab_per_device_cuda_first_with_provenance(tree):
    write_record(tree, "cuda", stdout="on the gpu\n")
    write_record(tree, "cpu", stdout="on the cpu\n")
    page = render(tree, "<!-- md:output demo/hello.py -->\n")
    assert page.index('===! "CUDA"') < page.index('=== "CPU"')
    assert "    on the gpu" in page and "    on the cpu" in page
    assert "Recorded on NVIDIA H200 (CUDA 12.8, driver 570.1) · torch 2.13.0 · triton 3.7.1" in page
    assert "Recorded on Test CPU (2 cores)" in page
    assert "[record](outputs/cpu/demo/hello/manifest.json)" in page
    assert "Stale record" not in page


def test_output_of_one_section_with_a_language(tree):
    write_record(tree, "cpu", stdout="x = 1\n")
    page = render(tree, "<!-- md:output demo/hello.py:main lang=cuda:python,cpu:cpp -->\n", "sub/page.md")
    assert "```cpp\n    x = 1" in page
    assert "(../outputs/cpu/demo/hello/manifest.json)" in page


def test_missing_record_says_not_yet_recorded(tree):
    write_record(tree, "cpu")
    assert "Not yet recorded on CUDA." in render(tree, "<!-- md:output demo/hello.py -->\n")


def test_stale_record_shows_a_warning(tree):
    write_record(tree, "cpu", source="print('an older version')\n")
    page = render(tree, "<!-- md:output demo/hello.py -->\n")
    assert '!!! warning "Stale record"' in page
    assert "--only demo/hello.py" in page


def test_value_comes_from_the_record(tree):
    write_record(tree, "cuda")
    text = render(tree, "took <!-- md:value demo/hello.py time_us fmt=.0f --> µs, "
                        "<!-- md:value demo/hello.py share scale=100 fmt=.1f -->% of peak")
    assert ">731</span> µs" in text and ">91.2</span>% of peak" in text
    assert "not yet recorded on CPU" in render(tree, "<!-- md:value demo/hello.py time_us device=cpu -->")


@pytest.mark.parametrize("markdown, message", [
    ("<!-- md:outptu demo/hello.py -->\n", "unknown directive 'md:outptu'"),
    ("<!-- md:output demo/missing.py -->\n", "snippet 'snippets/demo/missing.py' does not exist"),
    ("<!-- md:value demo/missing.py time_us -->", "does not exist"),
    ("<!-- md:value demo/hello.py no.such.key -->", "key 'no.such.key' is not in the cuda record"),
    ("<!-- md:value demo/hello.py time_us colour=red -->", "unknown option 'colour=red'"),
    ("<!-- md:output demo/hello.py:nosection -->\n", "printed nothing in section 'nosection'"),
    ("text <!-- md:output demo/hello.py -->", "must stand at the start of a line"),
])
def test_mistakes_fail_the_build_naming_page_and_directive(tree, markdown, message):
    write_record(tree, "cuda")
    with pytest.raises(PluginError) as error:
        render(tree, markdown, "chapter.md")
    assert str(error.value).startswith("chapter.md: <!-- md:") and message in str(error.value)


def test_directives_inside_code_fences_stay_as_written(tree):
    write_record(tree, "cpu")
    markdown = "````markdown\n<!-- md:output demo/hello.py -->\n```\nnested\n```\n````\n<!-- md:output demo/hello.py -->\n"
    page = render(tree, markdown)
    assert page.startswith("````markdown\n<!-- md:output demo/hello.py -->\n```\nnested\n```\n````\n")
    assert page.count('=== "CPU"') + page.count('===+ "CPU"') == 1
