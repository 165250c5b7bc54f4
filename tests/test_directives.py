"""The md: directives (scripts/directives.py), rendered for the page and for the notebook, on throw-away
trees of snippets and hand-built records (test fixtures shaped as scripts/records.py describes, not site records)."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest

from scripts import directives, measures, notebooks, records, render

SOURCE = "# --8<-- [start:main]\nprint('hi')\n# --8<-- [end:main]\n"
SNIPPET = "demo/hello.py"
REMAKE_CPU = f".venv/bin/python -m scripts.regenerate --device cpu --only {SNIPPET}"
RESULTS = {
    "n": 65536, "whole": 65536.0, "t": 731.4, "share": 0.912, "big": 1234567.8, "fits": True, "small": False,
    "timing": {
        "eager": {"median_us": 100.0, "q1_us": 95.0, "q3_us": 105.0},
        "compiled": {"median_us": 10.0, "q1_us": 9.5, "q3_us": 10.5},
        "noisy": {"median_us": 98.0, "q1_us": 80.0, "q3_us": 120.0},
        "slow": {"median_us": 250.0, "q1_us": 245.0, "q3_us": 255.0},
    },
    "graph": {"fxgraph": "graph.fxgraph.txt", "graphs": 1},
}
FX = ("graph():\n"
      "    %x : [num_users=1] = placeholder[target=x]\n"
      "    %sin : [num_users=1] = call_function[target=torch.sin](args = (%x,), kwargs = {})\n"
      "    return sin\n")


@pytest.fixture
def tree(tmp_path):
    (tmp_path / "snippets" / "demo").mkdir(parents=True)
    (tmp_path / "snippets" / "demo" / "hello.py").write_text(SOURCE)
    return tmp_path


def write_record(tree: Path, device: str, source: str = SOURCE, results: dict | None = None, stdout: str = "hi\n",
                 manifest: str | None = None, release: str = records.MAIN) -> Path:
    folder = records.record_dir(SNIPPET, device, records.release_root(release, tree / "outputs"))
    (folder / "files").mkdir(parents=True)
    environment = {"torch": release, "triton": "3.7.1", "python": "3.11.7", "cpu": "Test CPU",
                   "cpu_count": 2}
    if device == "cuda":
        environment.update(gpu="NVIDIA H200", cuda="12.8", driver="570.1")
    content = {"snippet": f"snippets/{SNIPPET}", "sha256": hashlib.sha256(source.encode()).hexdigest(),
               "device": device, "command": "python scripts/runner.py snippets/demo/hello.py <record>",
               "exit_status": 0, "duration_s": 1.5, "date": "2026-11-21T12:00:00+00:00", "environment": environment}
    (folder / "manifest.json").write_text(manifest if manifest is not None else json.dumps(content))
    (folder / "stdout.txt").write_text(stdout)
    (folder / "sections.json").write_text(json.dumps({"main": stdout}))
    (folder / "files" / "results.json").write_text(json.dumps(RESULTS if results is None else results))
    (folder / "files" / "graph.fxgraph.txt").write_text(FX)
    return folder


def page(tree: Path, src_uri: str = "chapter.md", url: str = "chapter/",
         target: str = render.PAGE) -> render.Page:
    """The page being rendered; for the notebook target, the notebook's page, which keeps its cells' state."""
    kind = notebooks.NotebookPage if target == render.NOTEBOOK else render.Page
    return kind(src_uri, url, snippets=tree / "snippets", outputs=tree / "outputs")


def expand(tree: Path, markdown: str, on: render.Page | None = None) -> str:
    return render.expand(markdown, on or page(tree))


def failure(tree: Path, markdown: str) -> str:
    """The one-line message of the directives.DirectiveError a page fails with."""
    with pytest.raises(directives.DirectiveError) as error:
        expand(tree, markdown)
    message = str(error.value)
    assert "\n" not in message.strip(), message
    return message


def shown(text: str) -> str:
    """The text an inline directive shows (inside its span)."""
    return text.split('">', 1)[1].split("</span>", 1)[0]


# -------------------------------------------------------------------------------------------------- md:value


@pytest.mark.parametrize("options, expected", [
    ("n fmt=,", "65,536"),
    ("n", "65536"),
    ("n fmt=d", "65536"),
    ("n fmt=,d", "65,536"),
    ("whole fmt=,d", "65,536"),
    ("whole fmt=d", "65536"),
    ("whole", "65536"),
    ("big", "1234568"),
    ("t", "731"),
    ("t fmt=.1f", "731.4"),
    ("t fmt=,.0f unit=µs", "731\u202fµs"),
    ("share scale=100 fmt=.1f unit=%", "91.2%"),
    ("timing.eager.median_us fmt=.0f", "100"),
    ('fits yes="fits in" no="does not fit in"', "fits in"),
    ('small yes="fits in" no="does not fit in"', "does not fit in"),
    ("fits", "yes"),
])
def test_value_formats_numbers_and_keeps_integers(tree, options, expected):
    write_record(tree, "cpu")
    text = expand(tree, f"It is <!-- md:value {SNIPPET} {options} device=cpu -->.")
    assert re.match(r'It is <span class="recorded( words)?" title="', text) and text.endswith("</span>.")
    assert shown(text).replace("&#x27;", "'") == expected


def test_a_directive_may_run_over_lines_but_stops_at_its_own_end(tree):
    write_record(tree, "cpu")
    two = f"<!-- md:value {SNIPPET} n\n     device=cpu fmt=, --> and <!-- md:value {SNIPPET} n device=cpu -->"
    text = expand(tree, two)
    assert shown(text.split(" and ")[0]) == "65,536" and shown(text.split(" and ")[1]) == "65536"


def test_value_defaults_to_cuda_and_says_where_it_was_recorded(tree):
    write_record(tree, "cuda")
    text = expand(tree, f"<!-- md:value {SNIPPET} n -->")
    assert shown(text) == "65536"
    assert 'title="n from snippets/demo/hello.py, recorded on NVIDIA H200 on 2026-11-21"' in text


@pytest.mark.parametrize("options, message", [
    ("t fmt=.2q", "fmt=.2q cannot format 731.4"),
    ("t fmt=d", "fmt=d cannot format 731.4"),
    ("t scale=lots", "scale=lots is not a number"),
    ("share scale=100 fmt=d", "fmt=d cannot format 91.2"),
])
def test_a_bad_format_fails_with_one_line_naming_page_and_directive(tree, options, message):
    write_record(tree, "cpu")
    directive = f"<!-- md:value {SNIPPET} {options} device=cpu -->"
    error = failure(tree, f"Some prose {directive} here.\n")
    assert error.startswith(f"chapter.md: {directive}: ") and message in error, error


def test_fmt_percent_formats_a_fraction(tree):
    write_record(tree, "cpu")
    assert shown(expand(tree, f"<!-- md:value {SNIPPET} share fmt=.0% device=cpu -->")) == "91%"


def test_a_value_from_a_device_with_no_record_fails_and_suggests_md_recorded(tree):
    write_record(tree, "cpu")
    error = failure(tree, f"On a GPU it took <!-- md:value {SNIPPET} t device=cuda fmt=.0f --> µs.\n")
    assert error.startswith(f"chapter.md: <!-- md:value {SNIPPET} t device=cuda fmt=.0f -->: there is no CUDA record")
    assert f"<!-- md:recorded {SNIPPET} device=cuda --> ... <!-- md:end -->" in error


@pytest.mark.parametrize("markdown, message", [
    ("<!-- md:outptu demo/hello.py -->\n", "unknown directive 'md:outptu'"),
    ("Inline <!-- md:colour demo/hello.py --> too.\n", "unknown directive 'md:colour'"),
    ("<!-- md:value demo/hello.py t colour=red -->", "unknown option 'colour=red'"),
    ("<!-- md:value demo/hello.py t device=gpu -->", "device=gpu: expected cuda or cpu"),
    ("<!-- md:value demo/hello.py -->", "md:value takes SNIPPET KEY"),
    ("<!-- md:value demo/missing.py t device=cpu -->", "snippet 'snippets/demo/missing.py' does not exist"),
    ("<!-- md:value demo/hello.py no.such.key device=cpu -->", "'no.such.key' is not in"),
    ("<!-- md:output demo/hello.py lang -->\n", "unknown option 'lang'"),
    ("<!-- md:output demo/hello.py:nosection -->\n", "printed nothing in section 'nosection'"),
    ("<!-- md:output demo/hello -->\n", "must name a snippet file ending in .py"),
    ("<!-- md:output demo/missing.py -->\n", "snippet 'snippets/demo/missing.py' does not exist"),
    ("text <!-- md:output demo/hello.py -->\n", "md:output must stand alone on its own line"),
    ("text <!-- md:recorded demo/hello.py --> more\n", "md:recorded must stand alone on its own line"),
    ("<!-- md:records extra -->\n", "md:records takes no arguments"),
    ('<!-- md:figure demo/hello.py graph caption="x" colour=red -->\n', "unknown option 'colour=red'"),
])
def test_mistakes_fail_the_build_naming_page_and_directive(tree, markdown, message):
    write_record(tree, "cpu")
    error = failure(tree, markdown)
    assert error.startswith("chapter.md: <!-- md:") and message in error, error


# ------------------------------------------------------------------------------- md:recorded / else / end


BLOCK = """\
before
<!-- md:recorded demo/hello.py device={device} -->
On the <!-- md:hardware demo/hello.py device={device} -->, it took <!-- md:value demo/hello.py t device={device} -->.
<!-- md:else -->
Not recorded on {device} yet.
<!-- md:end -->
after
"""


def test_recorded_keeps_the_first_branch_when_the_record_exists(tree):
    write_record(tree, "cpu")
    text = expand(tree, BLOCK.format(device="cpu"))
    lines = text.splitlines()
    assert lines[0] == "before" and lines[-1] == "after" and len(lines) == 3
    assert "Test CPU" in lines[1] and ">731</span>" in lines[1]
    assert "Not recorded" not in text and "md:" not in text


def test_recorded_keeps_the_else_branch_and_never_reads_the_missing_record(tree):
    write_record(tree, "cpu")
    # The md:value and md:hardware of the dropped branch would fail: there is no CUDA record.
    assert expand(tree, BLOCK.format(device="cuda")) == "before\nNot recorded on cuda yet.\nafter\n"


def test_recorded_without_else_drops_the_block_when_the_record_is_missing(tree):
    write_record(tree, "cpu")
    markdown = "a\n<!-- md:recorded demo/hello.py device=cuda -->\ncuda only\n<!-- md:end -->\nb\n"
    assert expand(tree, markdown) == "a\nb\n"
    assert expand(tree, markdown.replace("device=cuda", "device=cpu")) == "a\ncuda only\nb\n"


def test_recorded_stale_keeps_a_sentence_only_while_the_record_is_older_than_its_snippet(tree):
    write_record(tree, "cpu")
    markdown = ("a\n<!-- md:recorded demo/hello.py device=cpu stale=yes -->\nold code made it\n<!-- md:else -->\n"
                "fresh or missing\n<!-- md:end -->\nb\n")
    assert expand(tree, markdown) == "a\nfresh or missing\nb\n"
    assert expand(tree, markdown.replace("stale=yes", "stale=no")) == "a\nold code made it\nb\n"
    (tree / "snippets" / SNIPPET).write_text(SOURCE + "# changed\n")  # the record is now stale
    assert expand(tree, markdown) == "a\nold code made it\nb\n"
    assert "stale= is yes or no" in failure(tree, markdown.replace("stale=yes", "stale=maybe"))


@pytest.mark.parametrize("markdown, message", [
    ("<!-- md:recorded demo/hello.py device=cpu -->\nnever closed\n", "never closed with <!-- md:end -->"),
    ("<!-- md:else -->\n", "md:else without an md:recorded before it"),
    ("<!-- md:end -->\n", "md:end without an md:recorded before it"),
    ("<!-- md:recorded demo/hello.py device=cpu -->\n<!-- md:recorded demo/hello.py device=cpu -->\n"
     "<!-- md:end -->\n<!-- md:end -->\n", "do not nest"),
    ("<!-- md:recorded -->\nx\n<!-- md:end -->\n", "md:recorded takes SNIPPET"),
    ("<!-- md:recorded demo/missing.py -->\nx\n<!-- md:end -->\n", "snippets/demo/missing.py' does not exist"),
])
def test_recorded_blocks_that_do_not_pair_fail(tree, markdown, message):
    write_record(tree, "cpu")
    error = failure(tree, markdown)
    assert error.startswith("chapter.md: <!-- md:") and message in error, error


def test_directives_inside_code_fences_stay_as_written(tree):
    write_record(tree, "cpu")
    shown_as_code = (
        "````markdown\n"
        "<!-- md:recorded demo/hello.py device=cuda -->\n"
        "<!-- md:output demo/hello.py -->\n"
        "```\nnested <!-- md:value demo/hello.py t -->\n```\n"
        "<!-- md:outptu -->\n"
        "````\n"
        "~~~\n<!-- md:end -->\n~~~\n"
    )
    text = expand(tree, shown_as_code + "<!-- md:output demo/hello.py -->\n")
    assert text.startswith(shown_as_code)
    assert text.count('===! "CPU"') == 1


# -------------------------------------------------------------------------------- md:compare, md:hardware


@pytest.mark.parametrize("a, b, words", [
    ("timing.eager", "timing.compiled", "10× faster"),
    ("timing.eager", "timing.noisy", "about the same"),
    ("timing.eager", "timing.slow", "2.5× slower"),
    ("timing.compiled", "timing.eager", "10× slower"),
])
def test_compare_gives_the_judges_words(tree, a, b, words):
    write_record(tree, "cpu")
    text = expand(tree, f"compiled is <!-- md:compare {SNIPPET} {a} {b} device=cpu --> than eager")
    assert shown(text) == words
    assert words == measures.judge(RESULTS["timing"][a.split(".")[1]], RESULTS["timing"][b.split(".")[1]], "cpu")


@pytest.mark.parametrize("a, b", [("timing.eager", "timing.compiled"), ("timing.compiled", "timing.eager"),
                                  ("timing.eager", "timing.noisy")])
def test_compare_with_range_says_the_spread_in_the_verdicts_terms(tree, a, b):
    write_record(tree, "cpu")
    text = shown(expand(tree, f"<!-- md:compare {SNIPPET} {a} {b} device=cpu range=yes -->"))
    ta, tb = (RESULTS["timing"][key.split(".")[1]] for key in (a, b))
    words = measures.judge(ta, tb, "cpu")
    _, lo, hi = measures.timing_band(ta, tb)
    assert text.startswith(words + " (")
    if measures.direction(words) == 0:
        assert f"ratio {lo:.2f} to {hi:.2f}" in text
    else:  # the range in the verdict's own terms: a slower verdict's factors are the inverted ratios
        low, high = sorted((lo, hi) if measures.direction(words) > 0 else (1 / lo, 1 / hi))
        assert f"{low:.1f}× to {high:.1f}×" in text


def test_compare_refuses_what_is_not_a_timing(tree):
    write_record(tree, "cpu")
    error = failure(tree, f"<!-- md:compare {SNIPPET} timing.eager n device=cpu -->")
    assert "must both be timings" in error


def test_hardware_names_the_gpu_or_cpu_from_the_manifest(tree):
    write_record(tree, "cuda")
    write_record(tree, "cpu")
    assert shown(expand(tree, f"<!-- md:hardware {SNIPPET} -->")) == "NVIDIA H200"
    assert shown(expand(tree, f"<!-- md:hardware {SNIPPET} device=cpu -->")) == "Test CPU"


# ------------------------------------------------------------------------------------------------ md:output


def test_output_tabs_only_recorded_devices_and_says_nothing_of_the_others(tree):
    write_record(tree, "cpu", stdout="on the cpu\n")
    text = expand(tree, f"<!-- md:output {SNIPPET} -->\n", page(tree))
    assert text.startswith('===! "CPU"')
    assert '"CUDA"' not in text and "not yet recorded" not in text.lower()
    assert "    on the cpu" in text


def test_what_was_measured_where_is_said_once_from_the_records(tree):
    write_record(tree, "cpu")
    text = expand(tree, "<!-- md:coverage -->\n")
    assert text.startswith(f"1 of the 1 snippets were run and timed on a CPU, the Test CPU (2 cores) named under "
                           f"each output, with torch {records.MAIN}.")
    assert "No snippet was run on a GPU" in text
    write_record(tree, "cuda")
    assert "1 were also recorded on a GPU, the NVIDIA H200" in expand(tree, "<!-- md:coverage -->\n")


def test_output_with_both_devices_puts_cuda_first_with_provenance(tree):
    write_record(tree, "cuda", stdout="on the gpu\n")
    write_record(tree, "cpu", stdout="on the cpu\n")
    state = page(tree)
    text = expand(tree, f"<!-- md:output {SNIPPET} -->\n", state)
    assert text.index('===! "CUDA"') < text.index('=== "CPU"') and text.count("===") == 2
    assert "    on the gpu" in text and "    on the cpu" in text
    assert f"NVIDIA H200 · torch {records.MAIN} · " in text and f"Test CPU · torch {records.MAIN} · " in text
    # The whole provenance is on the record's link, so the line under an output stays one line.
    assert f'title="Recorded on NVIDIA H200 (CUDA 12.8, driver 570.1) · torch {records.MAIN} · triton 3.7.1' in text
    assert 'href="../outputs/cpu/demo/hello/manifest.json" title="Recorded on Test CPU (2 cores)' in text
    assert "Stale record" not in text


def test_output_of_one_section_in_a_language_per_device(tree):
    write_record(tree, "cuda", stdout="x = 1\n")
    write_record(tree, "cpu", stdout="y = 2\n")
    text = expand(tree, f"<!-- md:output {SNIPPET}:main lang=cuda:python,cpu:cpp -->\n")
    assert "```{ .python .mlc-output }\n    x = 1" in text and "```{ .cpp .mlc-output }\n    y = 2" in text


def test_output_with_no_record_on_any_device_fails_naming_the_command(tree):
    error = failure(tree, f"<!-- md:output {SNIPPET} -->\n")
    assert "has no record on any device" in error and REMAKE_CPU in error


def test_a_stale_record_shows_the_warning_with_the_remake_command(tree):
    write_record(tree, "cpu", source="print('an older version')\n")
    text = expand(tree, f"<!-- md:output {SNIPPET} -->\n")
    assert '??? warning "Stale record: the snippet changed after this was recorded on' in text
    assert f"Remake it with `{REMAKE_CPU}`." in text
    assert text.count("changed after this was recorded") == 1  # the title says it, the body does not repeat it
    value = expand(tree, f"<!-- md:value {SNIPPET} n device=cpu -->")
    assert "(stale)</span>" in value


@pytest.mark.parametrize("markdown", [
    f"<!-- md:output {SNIPPET} -->\n",
    f"<!-- md:value {SNIPPET} n device=cpu -->",
    f"<!-- md:hardware {SNIPPET} device=cpu -->",
    f"<!-- md:compare {SNIPPET} timing.eager timing.compiled device=cpu -->",
])
def test_a_corrupt_manifest_fails_the_build_naming_the_file(tree, markdown):
    write_record(tree, "cpu", manifest='{"snippet": "snippets/demo/hello.py", ')
    with pytest.raises(directives.DirectiveError) as error:
        expand(tree, markdown)
    message = str(error.value)
    assert message.startswith("chapter.md: <!-- md:") and "outputs/cpu/demo/hello/manifest.json" in message
    assert "not valid JSON" in message and "\n" not in message


# ------------------------------------------------------------------------------------------------ md:figure


def test_figure_needs_a_caption(tree):
    write_record(tree, "cpu")
    assert 'md:figure needs caption="' in failure(tree, f"<!-- md:figure {SNIPPET} graph -->\n")
    assert 'md:figure needs caption="' in failure(tree, f'<!-- md:figure {SNIPPET} graph caption=" " -->\n')


def test_figures_are_numbered_in_order_on_a_page_and_afresh_on_the_next(tree):
    write_record(tree, "cpu")
    markdown = (f'<!-- md:figure {SNIPPET} graph caption="The first." -->\n\ntext\n\n'
                f'<!-- md:figure {SNIPPET} graph caption="The second & last." -->\n')
    text = expand(tree, markdown)
    first, second = text.index("<strong>Figure 1.</strong> The first."), text.index("<strong>Figure 2.</strong>")
    assert first < second and "The second &amp; last." in text
    assert text.count("<img ") == 2 and text.count(".diagram.svg") >= 2  # drawn as SVG before any browser
    assert "Computation graph (graph 1: sin)." in text
    assert "<strong>Figure 1.</strong>" in expand(tree, markdown)


def test_a_figure_of_one_device_and_a_graph_under_a_dotted_key(tree):
    results = dict(RESULTS, graphs={"compiled": {"fxgraph": "graph.fxgraph.txt", "graphs": 1}})
    write_record(tree, "cuda", results=results)
    write_record(tree, "cpu", results=results)
    text = expand(tree, f'<!-- md:figure {SNIPPET} graphs.compiled device=cpu caption="One device." -->\n')
    assert text.count("<img ") == 1 and "===" not in text, "one device's figure needs no tabs"
    both = expand(tree, f'<!-- md:figure {SNIPPET} graphs.compiled caption="Both." -->\n')
    assert both.count("<img ") == 2 and both.index('===! "CUDA"') < both.index('=== "CPU"')


def test_a_figure_of_a_device_with_no_record_or_of_nothing_kept_fails(tree):
    write_record(tree, "cpu")
    error = failure(tree, f'<!-- md:figure {SNIPPET} graph device=cuda caption="x" -->\n')
    assert "there is no CUDA record of demo/hello.py" in error and "md:recorded" in error
    error = failure(tree, f'<!-- md:figure {SNIPPET} graphs.nothing caption="x" -->\n')
    assert "graphs.nothing is not kept in the cpu record's results" in error
    error = failure(tree, f'<!-- md:figure {SNIPPET} graph device=gpu caption="x" -->\n')
    assert "device=gpu: expected cuda or cpu" in error


def test_a_chart_figure_is_drawn_in_both_palettes_into_the_cache(tree, tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    monkeypatch.setattr(render, "FIGURE_CACHE", tmp_path / "figures")
    write_record(tree, "cpu")
    state = page(tree)
    text = expand(tree, f'<!-- md:figure {SNIPPET} speed kind=bars keys=timing.eager,timing.compiled '
                        f'labels=eager,compiled caption="Compiled takes a tenth." -->\n', state)
    assert "#only-light" in text and "#only-dark" in text and 'src="../figures/' in text
    assert {Path(p).suffixes[-2] for p in state.drawn.values()} == {".dark", ".light"}  # each at two widths
    for site_path, cached in state.drawn.items():
        assert site_path.startswith("figures/") and Path(cached).read_text().lstrip().startswith("<?xml")
        assert Path(cached).parent == tmp_path / "figures"
    assert "Bar chart (interquartile range shown): eager 100 µs; compiled 10 µs." in text


def test_a_figure_that_cannot_be_drawn_fails_naming_the_record(tree, tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    monkeypatch.setattr(render, "FIGURE_CACHE", tmp_path / "figures")
    write_record(tree, "cpu")
    error = failure(tree, f'<!-- md:figure {SNIPPET} speed kind=bars keys=timing.nope caption="x" -->\n')
    assert "the cpu record: 'timing.nope' is not in" in error


# ----------------------------------------------------------------------------------------------- md:records


def test_records_table_gives_each_state(tree):
    (tree / "snippets" / "demo" / "other.py").write_text("print('never recorded')\n")
    write_record(tree, "cpu", source="print('an older version')\n")
    text = expand(tree, "<!-- md:records -->\n")
    rows = [line for line in text.splitlines() if line.startswith("|")]
    assert rows[0] == f"| Snippet | CUDA, torch {records.MAIN} | CPU, torch {records.MAIN} |"
    assert rows[2].startswith("| `demo/hello.py` | *missing* | **stale** · [2026-11-21](")
    assert "Test CPU · 1.5 s |" in rows[2]
    assert rows[3] == "| `demo/other.py` | *missing* | *missing* |"
    # a phone's column: the same cells as a list, one entry a snippet, one line a record
    listed = text.split('class="mlc-narrow"')[1]
    assert (f"- `demo/other.py`\n    - CUDA, torch {records.MAIN}: *missing*\n"
            f"    - CPU, torch {records.MAIN}: *missing*") in listed


def test_records_table_says_a_model_made_without_a_gpu_has_no_cuda_record_to_make(tree, monkeypatch):
    from scripts import skips

    monkeypatch.setattr(skips, "CPU_ONLY", {"demo/hello.py": "a model made without a GPU"})
    write_record(tree, "cpu")
    rows = [line for line in expand(tree, "<!-- md:records -->\n").splitlines() if line.startswith("|")]
    assert rows[2].startswith("| `demo/hello.py` | *CPU only* | fresh · [")


def test_records_table_has_a_column_for_each_release_that_made_records(tree):
    write_record(tree, "cpu")
    older = write_record(tree, "cpu", release="2.11.0")
    write_record(tree, "cuda", release="2.11.0")
    rows = [line for line in expand(tree, "<!-- md:records -->\n").splitlines() if line.startswith("|")]
    assert rows[0] == (f"| Snippet | CUDA, torch {records.MAIN} | CUDA, torch 2.11.0 | CPU, torch {records.MAIN} | "
                       f"CPU, torch 2.11.0 |")
    assert rows[2].count("fresh ·") == 3 and "| *missing* |" in rows[2]
    assert "(outputs/torch-2.11.0/cpu/demo/hello/manifest.json)" in rows[2] and older.is_dir()


# ------------------------------------------------------------------------------------------ torch releases


def test_a_page_shows_the_main_release_or_else_the_newest_that_has_a_record(tree):
    write_record(tree, "cuda", release="2.11.0", stdout="from 2.11\n")
    assert "from 2.11" in expand(tree, f"<!-- md:output {SNIPPET} -->\n")
    write_record(tree, "cuda", release="2.13.0", stdout="from 2.13\n")
    assert "from 2.13" in expand(tree, f"<!-- md:output {SNIPPET} -->\n")
    write_record(tree, "cuda", stdout="from the main release\n")
    text = expand(tree, f"<!-- md:output {SNIPPET} -->\n")
    assert "from the main release" in text and 'href="../outputs/cuda/demo/hello/manifest.json"' in text


def test_an_output_other_releases_printed_alike_says_so_once_run_to_run_numbers_are_aside(tree):
    write_record(tree, "cpu", stdout="buf3 at 0x7f00aa: 1.25 ms\n")
    write_record(tree, "cpu", release="2.11.0", stdout="buf7 at 0x55bb00: 3.5 ms\n")
    text = expand(tree, f"<!-- md:output {SNIPPET}:main -->\n")
    assert "· the same on torch 2.11.0, as is every CPU output below that says nothing of it</p>" in text
    assert text.count("provenance") == 1 and "printed it otherwise" not in text


def test_a_page_says_the_same_on_other_releases_once(tree):
    """Issue 51: "the same on torch 2.11.0 and 2.13.0" was printed 147 times across the site."""
    write_record(tree, "cpu", stdout="hello\n")
    write_record(tree, "cpu", release="2.11.0", stdout="hello\n")
    text = expand(tree, f"<!-- md:output {SNIPPET}:main -->\n\n<!-- md:output {SNIPPET}:main -->\n")
    assert text.count("the same on torch 2.11.0") == 1 and text.count('class="provenance"') == 2


def test_an_output_another_release_printed_otherwise_links_to_its_diff(tree):
    write_record(tree, "cpu", stdout="add_(alpha=-0.1)\n")
    write_record(tree, "cpu", release="2.11.0", stdout="mul\nadd_\n")
    write_record(tree, "cpu", release="2.13.0", stdout="add_(alpha=-0.1)\n")
    text = expand(tree, f"<!-- md:output {SNIPPET}:main -->\n")
    assert '<a href="../versions/#changed-demo-hello-main">torch 2.11.0 printed it otherwise</a>' in text
    assert "mul" not in text and "the same on" not in text  # the diff lives on the versions page


def test_a_timed_output_says_which_process_printed_it_and_folds_the_pooled_figures(tree):
    runs = [{"median_us": m, "times_us": [m - 1, m, m + 1], "threads": 2} for m in (20_000.0, 30_000.0, 25_000.0)]
    write_record(tree, "cpu", stdout="eager: 20,000 us\n", results={"t": measures.pool(runs)})
    text = expand(tree, f"<!-- md:output {SNIPPET}:main -->\n")
    assert "printed by the first of 3 processes" in text
    assert '??? info mlc-recorded "Pooled over 3 processes' in text
    assert "| `t` | 25.0\u202fms | 20.0\u202fms – 30.0\u202fms | 20.0\u202fms – 30.0\u202fms |" in text


def test_the_pooled_figures_fold_once_per_snippet_and_device_on_a_page(tree):
    runs = [{"median_us": m, "times_us": [m], "threads": 2} for m in (20_000.0, 30_000.0)]
    write_record(tree, "cpu", stdout="eager: 20,000 us\n", results={"t": measures.pool(runs)})
    text = expand(tree, f"<!-- md:output {SNIPPET}:main -->\n\nThen again:\n\n<!-- md:output {SNIPPET}:main -->\n")
    assert text.count("printed by the first of 2 processes") == 2
    assert text.count("Pooled over 2 processes") == 1  # the table lists every timing of the record: once is enough


def test_an_output_that_prints_no_time_folds_no_pooled_figures(tree):
    runs = [{"median_us": m, "times_us": [m], "threads": 2} for m in (20_000.0, 30_000.0)]
    write_record(tree, "cpu", stdout="compiled == eager: True\n", results={"t": measures.pool(runs)})
    text = expand(tree, f"<!-- md:output {SNIPPET}:main -->\n")
    assert "printed by the first of 2 processes" in text and "Pooled over" not in text


@pytest.mark.parametrize("value, options, shown", [
    (9_999.0, "fmt=,.0f unit=µs", "9,999\u202fµs"),  # below 10 ms: as the page asked
    (323_993.0, "fmt=,.0f unit=µs", "324\u202fms"),
    (12_345.0, "fmt=,.0f unit=µs", "12.3\u202fms"),
    (12.5, "fmt=.1f unit=s", "12.5\u202fs"),
    (0.25, "fmt=.0f unit=ms scale=1000", "250\u202fms"),  # the scale applies first, into the page's unit
    (25.0, "fmt=.0f unit=ms scale=1000", "25.0\u202fs"),
    (42_000_000.0, "unit=µs", "42.0\u202fs"),
])
def test_a_time_of_10_ms_or_more_is_shown_in_ms_and_of_10_s_or_more_in_s(tree, value, options, shown):
    write_record(tree, "cpu", results={"v": value})
    assert shown in expand(tree, f"<!-- md:value {SNIPPET} v device=cpu {options} -->\n")


def test_a_record_of_an_older_version_of_the_snippet_is_not_compared(tree):
    write_record(tree, "cpu", stdout="new\n")
    write_record(tree, "cpu", release="2.11.0", stdout="old\n", source="print('an older version')\n")
    text = expand(tree, f"<!-- md:output {SNIPPET}:main -->\n")
    assert "otherwise" not in text and "The same on" not in text


def test_the_changes_page_diffs_what_changed_and_lists_what_did_not(tree):
    docs = tree / "docs"
    docs.mkdir()
    (docs / "chapter.md").write_text(f"# A chapter\n\n<!-- md:output {SNIPPET}:main -->\n")
    write_record(tree, "cpu", stdout="graph\nadd_ alpha\nreturn\n", results={"ops": 1, "graphs": 1})
    write_record(tree, "cpu", release="2.11.0", stdout="graph\nmul\nadd_\nreturn\n", results={"ops": 2, "graphs": 1})
    on = render.Page("versions.md", "versions/", snippets=tree / "snippets", outputs=tree / "outputs", docs=docs)
    text = render.expand("<!-- md:changes -->\n", on)
    assert f'??? abstract mlc-recorded "A chapter: `demo/hello.py` · `main`, torch 2.11.0 → {records.MAIN}"' in text
    assert '<span id="changed-demo-hello-main"></span>' in text  # where an output's line links
    diff = text.split("```diff")[1].split("```")[0]  # folded with the rest, two folds deep
    assert diff.splitlines()[1:-1] == ["          graph", "        - mul", "        - add_", "        + add_ alpha",
                                       "          return"]
    assert f"| `demo/hello.py` | `ops` | 2.11.0: `2` → {records.MAIN}: `1` |" in text
    assert "`graphs`" not in text


def restack(folder: Path, **versions) -> None:
    """Give a written record other versions besides torch's (another Python, another JAX)."""
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["environment"].update(versions)
    (folder / "manifest.json").write_text(json.dumps(manifest))


def test_a_diff_names_every_version_that_changed_besides_torch(tree):
    docs = tree / "docs"
    docs.mkdir()
    (docs / "chapter.md").write_text(f"# A chapter\n\n<!-- md:output {SNIPPET}:main -->\n")
    write_record(tree, "cpu", stdout="graph\nadd_ alpha\n")
    restack(write_record(tree, "cpu", release="2.11.0", stdout="graph\nmul\n"), python="3.12.1", jax="0.11.2")
    on = render.Page("versions.md", "versions/", snippets=tree / "snippets", outputs=tree / "outputs", docs=docs)
    text = render.expand("<!-- md:changes -->\n", on)
    assert f"torch 2.11.0 → {records.MAIN} (and Python 3.12.1 → 3.11.7)" in text
    assert "| 2.11.0 | 1 fresh of 1 | 2026-11-21 to 2026-11-21 | 3.12.1 | 3.7.1 | 0.11.2 | – |" in text
    assert "| 2.11.0 | Test CPU | 1 |" in text  # the machines that made them


def test_the_changes_page_leaves_out_a_timing_whose_processes_disagree_wildly(tree):
    docs = tree / "docs"
    docs.mkdir()
    (docs / "chapter.md").write_text(f"# A chapter\n\n<!-- md:compare {SNIPPET} eager compiled device=cpu -->\n")
    write_record(tree, "cpu", results={"eager": timing(100, 110, 120), "compiled": timing(50, 55, 60)})
    write_record(tree, "cpu", release="2.11.0",
                 results={"eager": timing(100, 110, 120), "compiled": timing(50, 55, 6000)})
    on = render.Page("versions.md", "versions/", snippets=tree / "snippets", outputs=tree / "outputs", docs=docs)
    text = render.expand("<!-- md:changes -->\n", on)
    assert "not compared: processes spread 50\u202fµs to 6,000\u202fµs" in text
    assert "| not compared: processes spread 50\u202fµs to 6,000\u202fµs | 2.0× faster (2.00) |" in text
    assert "1 record is not compared" in text


def test_the_changes_page_reads_the_pages_once_and_names_a_comparison_in_its_pages_words(tree, monkeypatch):
    """md:changes hands the changelog the site's outputs and CPU comparisons, with each comparison's what=, from
    one read of the pages (it read them four times, and scanned the comparisons twice)."""
    docs = tree / "docs"
    docs.mkdir()
    (docs / "chapter.md").write_text(f"# A chapter\n\n<!-- md:output {SNIPPET}:main -->\n\n"
                                     f"<!-- md:compare {SNIPPET} eager compiled device=cpu what=\"one add\" -->\n"
                                     f"<!-- md:compare {SNIPPET} eager compiled device=cuda what=\"not this\" -->\n")
    reads, handed = [], []
    read = directives.site_pages
    monkeypatch.setattr(directives, "site_pages", lambda docs: reads.append(docs) or read(docs))
    monkeypatch.setattr(render, "site_pages", directives.site_pages)
    monkeypatch.setattr(render.changelog, "render", lambda site: handed.append(site) or "")
    on = render.Page("versions.md", "versions/", snippets=tree / "snippets", outputs=tree / "outputs", docs=docs)
    render.expand("<!-- md:changes -->\n", on)
    assert len(reads) == 1, f"the pages were read {len(reads)} times"
    (site,) = handed
    assert site.shown == [("chapter.md", "A chapter", SNIPPET, "main")]
    assert site.compares == [("chapter.md", "A chapter", SNIPPET, "eager", "compiled")]
    assert site.names == {(SNIPPET, "eager", "compiled"): "one add"}
    assert [p[:2] for p in site.pages] == [("chapter.md", "A chapter")]


def test_the_changes_page_with_one_release_says_nothing_can_be_compared(tree):
    write_record(tree, "cpu")
    on = render.Page("versions.md", "versions/", snippets=tree / "snippets", outputs=tree / "outputs",
                         docs=tree / "docs")
    assert "nothing can be compared yet" in render.expand("<!-- md:changes -->\n", on)


# ------------------------------------------------------------------------------------------ the option schema


@pytest.mark.parametrize("markdown, message", [
    (f'<!-- md:figure {SNIPPET} speed kind=bars x=n caption="c" -->\n', "unknown option 'x=n'"),
    (f'<!-- md:figure {SNIPPET} speed kind=pie caption="c" -->\n', "kind=pie is not one of timeline, bars"),
    (f'<!-- md:figure {SNIPPET} graph key=n caption="c" -->\n', "unknown option 'key=n'"),
    (f"<!-- md:output {SNIPPET} extra -->\n", "unknown option 'extra'"),
    ("<!-- md:value demo/hello.py -->", "md:value takes SNIPPET KEY"),
    (f"<!-- md:value {SNIPPET} fmt=d -->", "md:value takes SNIPPET KEY"),
    ("<!-- md:figrue x -->\n", "unknown directive 'md:figrue'"),
])
def test_each_directive_and_each_figure_kind_takes_its_own_options_only(tree, markdown, message):
    write_record(tree, "cpu")
    error = failure(tree, markdown)
    assert message in error, error


def test_the_parser_and_the_plots_agree_on_each_kind():
    from scripts import plots

    assert set(plots.OPTIONS) == set(plots.KINDS)
    parsed = directives.parse("figure", "a.py speed kind=lines x=n series=a,b logy=1 caption=c", plots.OPTIONS)
    assert parsed.options["logy"] == "1"
    with pytest.raises(directives.DirectiveError, match="kind=pie is not one of"):
        directives.parse("figure", "a.py speed kind=pie caption=c", plots.OPTIONS)
    # The grammar knows no figure kinds of its own: they are the renderer's (scripts/render.py hands them over).
    with pytest.raises(directives.DirectiveError, match="read with its kinds"):
        directives.parse("figure", "a.py speed kind=lines caption=c")


# ------------------------------------------------------------------------------------------ the notebook target


def test_the_notebook_target_renders_plain_text_one_record_and_no_repeat_of_a_shown_output(tree):
    write_record(tree, "cuda")
    write_record(tree, "cpu")
    state = page(tree, target=render.NOTEBOOK)
    text = expand(tree, f"It took <!-- md:value {SNIPPET} t fmt=.1f\n  device=cpu --> on the "
                        f"<!-- md:hardware {SNIPPET} -->.\n\n<!-- md:output {SNIPPET}:main -->\n", state)
    assert text.startswith("It took 731.4 on the NVIDIA H200.\n"), text
    assert "<span" not in text and "===" not in text and text.count("```text\nhi\n```") == 1
    assert "*Recorded on CUDA (NVIDIA H200).*" in text
    state.shown.add((SNIPPET, "main"))
    assert expand(tree, f"<!-- md:output {SNIPPET}:main -->\n", state).strip() == ""


def test_the_notebook_target_draws_a_one_device_figure_from_that_device_when_both_have_records(tree):
    # The notebook shows one record per block, the first device's: a figure asking for the CPU's must still get
    # the CPU record once a CUDA one exists (a CUDA record of break_atlas once failed the whole build).
    write_record(tree, "cuda")
    write_record(tree, "cpu")
    state = page(tree, target=render.NOTEBOOK)
    text = expand(tree, f'<!-- md:figure {SNIPPET} graph device=cpu caption="The CPU graph." -->\n', state)
    assert "*(Drawn from the CPU record of `snippets/demo/hello.py`.)*" in text


def test_the_notebook_target_embeds_a_graph_as_an_image_and_numbers_it(tree):
    write_record(tree, "cpu")
    state = page(tree, target=render.NOTEBOOK)
    text = expand(tree, f'<!-- md:figure {SNIPPET} graph\n     caption="The graph." -->\n', state)
    assert text.startswith("![Computation graph (graph 1: sin).](attachment:") and "**Figure 1.** The graph." in text
    assert "Drawn from the CPU record of `snippets/demo/hello.py`" in text and "<div" not in text
    assert list(state.attachments) == ["figure-1-graph.svg"], "the notebook's page keeps the cell's image"


def test_a_recorded_number_is_underlined_and_a_recorded_phrase_is_not(tree):
    write_record(tree, "cpu")
    number = expand(tree, f"<!-- md:value {SNIPPET} n device=cpu -->")
    phrase = expand(tree, f'<!-- md:value {SNIPPET} small yes="fits in" no="does not fit in" device=cpu -->')
    assert number.startswith('<span class="recorded" ') and phrase.startswith('<span class="recorded words" ')


# ------------------------------------------------------------------------------------------------ findings


def timing(*medians):
    return {"median_us": sorted(medians)[len(medians) // 2], "iqr_us": 1.0, "process_medians_us": list(medians)}


def test_the_findings_table_is_made_from_the_pages_comparisons_and_their_records(tree, monkeypatch):
    monkeypatch.setattr(render, "FIGURE_CACHE", tree / "figures")
    docs = tree / "docs"
    docs.mkdir()
    (docs / "chapter.md").write_text(
        f'# A chapter\n\nCompiled is <!-- md:compare {SNIPPET} eager compiled device=cpu what="a demo op" size=n '
        f'why="one kernel instead of two" -->.\n\nAgain: <!-- md:compare {SNIPPET} eager compiled device=cpu -->.\n')
    write_record(tree, "cpu", results={"eager": timing(100, 110, 120), "compiled": timing(50, 55, 60), "n": 4096})
    write_record(tree, "cpu", release="2.11.0",
                 results={"eager": timing(100, 110, 120), "compiled": timing(100, 110, 130), "n": 4096})
    on = render.Page("guide.md", "guide/", snippets=tree / "snippets", outputs=tree / "outputs", docs=docs)
    text = render.expand("<!-- md:findings -->\n", on)
    (row,) = [line for line in text.splitlines() if line.startswith("| [a demo op]")]
    assert row == ("| [a demo op](chapter.md) (n = 4,096) | **2.0× faster**: 2.00 (2.00–2.00, 3 processes); "
                   f"differs on {records.MAIN}, 2.11.0 | not measured | one kernel instead of two |")
    assert "1 comparisons" in text and "of the 1 recorded fresh with more than one torch release, 0 point" in text
    assert "None was measured on a GPU." in text
    assert len(list((tree / "figures").glob("findings-*.svg"))) == 2  # light and dark
    # A record that changes changes the table.
    write_record_again = records.record_dir(SNIPPET, "cpu", tree / "outputs") / "files" / "results.json"
    write_record_again.write_text(json.dumps({"eager": timing(100, 110, 120), "compiled": timing(200, 220, 240),
                                              "n": 4096}))
    text = render.expand("<!-- md:findings -->\n", on)
    assert "| [a demo op](chapter.md) (n = 4,096) | **2.0× slower**: 0.50" in text


def test_findings_with_no_described_comparison_fail_the_build(tree):
    docs = tree / "docs"
    docs.mkdir()
    (docs / "chapter.md").write_text(f"# A chapter\n\n<!-- md:compare {SNIPPET} eager compiled device=cpu -->\n")
    on = render.Page("guide.md", "guide/", snippets=tree / "snippets", outputs=tree / "outputs", docs=docs)
    with pytest.raises(directives.DirectiveError, match="says what it compares"):
        render.expand("<!-- md:findings -->\n", on)


def test_a_value_as_another_release_recorded_it(tree):
    write_record(tree, "cpu", results={"guards": 19})
    write_record(tree, "cpu", release="2.11.0", results={"guards": 11})
    assert ">11</span>" in expand(tree, f"<!-- md:value {SNIPPET} guards device=cpu release=2.11.0 -->\n")
    assert ">19</span>" in expand(tree, f"<!-- md:value {SNIPPET} guards device=cpu -->\n")
    missing = failure(tree, f"<!-- md:value {SNIPPET} guards device=cpu release=2.13.0 -->\n")
    assert "torch 2.13.0 has no fresh CPU record" in missing


def test_a_value_without_a_device_reads_the_record_that_exists(tree):
    write_record(tree, "cpu", results={"n": 1})
    assert ">1</span>" in expand(tree, f"<!-- md:value {SNIPPET} n -->\n")
    write_record(tree, "cuda", results={"n": 2})
    assert ">2</span>" in expand(tree, f"<!-- md:value {SNIPPET} n -->\n")


# ------------------------------------------------------------------------------------- unsteady records

def unsteady_problems(record: records.Record, shown: str | None) -> list[str]:
    """Why a record made under load would be committed silently: its manifest does not mark the timings
    whose processes disagree beyond the rule (measures.unsteady), or the output that shows it (`shown`, its
    rendered provenance line; None where no page shows it) does not say so."""
    found = measures.unsteady_timings(record.results)
    if not found:
        return []
    problems = []
    if record.manifest.get("unsteady") != found:
        problems.append(f"{record.folder}/manifest.json does not mark its unsteady timings {sorted(found)}: "
                        f"remake the record on a quiet machine")
    if shown is not None and "unsteady: its processes disagreed" not in shown:
        problems.append(f"the page showing {record.snippet} ({record.device}) does not say it is unsteady")
    return problems


def test_an_unsteady_record_says_so_under_its_output_and_an_unmarked_one_is_refused(tree):
    timing = {"median_us": 50.0, "q1_us": 50.0, "q3_us": 2900.0, "processes": 3,
              "process_medians_us": [50.0, 2900.0, 2900.0]}
    folder = write_record(tree, "cpu", results={"device": "cpu", "t": timing})
    on = page(tree)
    record = on.record(SNIPPET, "cpu")
    shown = render.output_line(on, record, None)
    assert "unsteady: its processes disagreed beyond 10× (t from 50\u202fµs to 2,900\u202fµs)" in shown
    assert "unsteady" in expand(tree, f"<!-- md:output {SNIPPET} -->\n")
    (problem,) = unsteady_problems(record, shown)  # made before the recorder marked it: refused
    assert "does not mark its unsteady timings ['t']" in problem
    manifest = json.loads((folder / "manifest.json").read_text())
    (folder / "manifest.json").write_text(json.dumps({**manifest, "unsteady": {"t": [50.0, 2900.0]}}))
    record = page(tree).record(SNIPPET, "cpu")
    assert unsteady_problems(record, shown) == []
    assert unsteady_problems(record, "<p class='provenance'>a line that hides it</p>")
    steady = write_record(tree, "cuda", results={"device": "cuda", "t": {**timing, "process_medians_us": [50.0, 60.0]}})
    assert steady.is_dir() and "unsteady" not in render.output_line(on, page(tree).record(SNIPPET, "cuda"), None)


def test_no_committed_record_is_unsteady_silently():
    """Every committed record whose processes disagree beyond the rule is marked so in its manifest, and the
    output that shows it on a page says so (the main release's; the others are shown on the versions page)."""
    shown = {(snippet, device) for _, _, snippet, _ in directives.site_outputs(records.ROOT / "docs")
             for device in records.DEVICES}
    problems = []
    for release, root in records.release_roots().items():
        for device in records.DEVICES:
            for record in records.find_records(device, root):
                if record.state == "corrupt":
                    continue
                line = None
                if release == records.MAIN and (record.snippet, device) in shown:
                    line = render.output_line(render.Page("check.md", "check/"), record, None)
                problems += unsteady_problems(record, line)
    assert not problems, "\n".join(problems)
