# ruff: noqa: E501  (the pasted messages keep their long lines, as a terminal prints them)
"""The atlases (scripts/atlas.py, md:atlas) and their "paste your error" lookup: the normaliser, the data the
page embeds, and the lookup in a real browser, with messages from the records and messages as a reader pastes
them from their own run (other paths, addresses and line numbers, the traceback around them)."""

from __future__ import annotations

import functools
import http.server
import json
import re
import threading
from pathlib import Path

import pytest

from scripts import atlas, records

SNIPPET = "graph_mode/break_atlas.py"
PAGE = "dissecting/graph-break-atlas/"


def cases_of(release: str = records.MAIN) -> dict:
    return records.Record(SNIPPET, "cpu", records.record_dir(SNIPPET, "cpu", records.release_root(release))).results[
        "atlas"]


# ------------------------------------------------------------------------------------------------ normaliser


def test_the_normaliser_drops_what_differs_between_runs():
    one = ('File "/home/alice/model.py", line 12, in forward\n  <function helper at 0x7f3a2c1d>\n'
           "  see https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0098.html")
    other = ("File 'C:\\work\\net.py', line 981, in forward\n  <function helper at 0x55d0e9a8b0c0>\n"
             "  see https://example.org/gb/gb0098.html")
    assert atlas.normalise(one) == atlas.normalise(other) == "file line in forward function helper at see"


def test_the_normaliser_keeps_words_and_identifiers():
    text = "Hint: Set `torch._dynamo.config.capture_scalar_outputs = True` (e.g. `x.item()`)"
    assert atlas.normalise(text) == "hint set torch dynamo config capture_scalar_outputs true item"


def test_ids_come_from_the_registry_link_or_as_typed():
    assert atlas.ids("please visit: https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0170.html") == [
        "GB0170"]
    assert atlas.ids("GB0124 and gb0124, then GB0007") == ["GB0124", "GB0007"]
    assert atlas.ids("gb01700 is not an id") == []


def test_the_page_url_of_a_source():
    assert atlas.page_url("dissecting/graph-break-atlas.md") == "dissecting/graph-break-atlas/"
    assert atlas.page_url("index.md") == ""
    assert atlas.page_url("dissecting/index.md") == "dissecting/"


# -------------------------------------------------------------------------------------------- the data


def test_the_lookup_data_holds_every_case_of_every_release():
    kind, shown, cases = atlas.collect(SNIPPET, None, "cpu", records.OUTPUTS, records.SNIPPETS)
    assert kind == "graph_break" and records.MAIN in shown
    entries = atlas.lookup_entries(SNIPPET, None, "cpu", "./", "Graph-break atlas", records.OUTPUTS,
                                   records.SNIPPETS)
    assert [e["case"] for e in entries] == list(cases)
    for entry in entries:
        assert entry["href"] == f"./#gb-{entry['case']}"
        assert set(entry["breaks"]) == {r for r in shown if r in cases[entry["case"]]}
        for message in entry["messages"]:
            assert message and not re.search(r"[^a-z_ ]", message), entry["case"]
        recorded = {atlas.normalise(e["message"]) for e in cases[entry["case"]].values() if e["message"]}
        assert set(entry["messages"]) == recorded
        assert entry["ids"] == list(dict.fromkeys(e["id"] for e in cases[entry["case"]].values() if e["id"]))


def test_a_record_without_an_atlas_or_of_another_kind_is_refused(tmp_path):
    folder = tmp_path / "cpu" / "x"
    (folder / records.FILES).mkdir(parents=True)
    record = records.Record("x.py", "cpu", folder)
    (folder / records.FILES / records.RESULTS).write_text(json.dumps({"atlas": {}}))
    with pytest.raises(atlas.AtlasError, match="holds no results"):
        atlas.atlas_of(record, None)
    entry = {"what": "w", "id": None, "message": "", "before": 1, "fix": "f", "after": 0}
    (folder / records.FILES / records.RESULTS).write_text(json.dumps({"atlas_kind": "recompile",
                                                                      "atlas": {"c": entry}}))
    record = records.Record("x.py", "cpu", folder)
    with pytest.raises(atlas.AtlasError, match="holds a recompile atlas"):
        atlas.atlas_of(record, "graph_break")
    assert atlas.atlas_of(record, None) == ("recompile", {"c": entry})


def test_the_summary_counts_each_release():
    entry = {"what": "w", "id": None, "message": "", "fix": "f"}
    cases = {"a": {"2.15.0": {**entry, "before": 1, "after": 0}, "2.11.0": {**entry, "before": 2, "after": 1}},
             "b": {"2.15.0": {**entry, "before": 0, "after": 0}, "2.11.0": {**entry, "before": 1, "after": 0}}}
    said = atlas.summary("graph_break", ["2.11.0", "2.15.0"], cases)
    assert said == ("Of the 2 cases, 2 on torch 2.11.0, 1 on 2.15.0 break; with its fix, a case still breaks: "
                    "1 on torch 2.11.0.\n")
    assert "recompile" in atlas.summary("recompile", ["2.15.0"], {"a": {"2.15.0": cases["a"]["2.15.0"]}})


# ------------------------------------------------------------------------------------------- the browser

# A reader's paste: the log's or the error's whole text, from their own files, on their own machine.
TYPED = {
    "zlib_crc32": """\
Graph break in user code at /home/alice/src/project/checksums.py:88
Graph Break Reason: Encountered graph break when attempting to trace CALL: a function call, e.g. f(x, y):

Attempted to call function marked as skipped
  Explanation: Dynamo does not know how to trace the builtin `zlib.crc32.` This function is either a Python builtin (e.g. _warnings.warn) or a third-party C++ Python extension (perhaps created with pybind).
  Developer debug context: module: zlib, qualname: crc32, skip reason: cannot determine source file for zlib (likely a C extension or builtin)

User code traceback:
  File "/home/alice/src/project/train.py", line 301, in <module>
    loss = step(batch)
  File "/home/alice/src/project/checksums.py", line 88, in step
    tag = zlib.crc32(name.encode())
""",
    "logger_info": """\
torch._dynamo.exc.Unsupported: logging.Logger method not supported for non-export cases
  Explanation: For non-export cases, logging.Logger methods are only supported if the logger has a source and the method is registered as reorderable.
  Developer debug context: method: <Logger trainer (INFO)>.info, args: [ConstantVariable(str: 'step %d'), TupleVariable(length=1)], kwargs: {}

 For more details about this graph break, please visit: https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0291.html

from user code:
   File "C:\\Users\\bob\\repo\\model.py", line 42, in forward
    log.info("step %d", self.step)

Set TORCHDYNAMO_VERBOSE=1 for the internal stack trace (please do this especially if you're reporting a bug to PyTorch). For even more developer context, set TORCH_LOGS="+dynamo"
""",
    "backward_inside": """\
W1126 09:14:02.118000 48211 torch/_dynamo/symbolic_convert.py:612] [2/0] Graph break in user code at /opt/app/loop.py:17
W1126 09:14:02.118000 48211 torch/_dynamo/symbolic_convert.py:612] [2/0] Graph Break Reason: Unsupported Tensor.backward() call
W1126 09:14:02.118000 48211 torch/_dynamo/symbolic_convert.py:612] [2/0]   Explanation: Dynamo currently does not support tracing `Tensor.backward()` when trace_autograd_ops is off.
W1126 09:14:02.118000 48211 torch/_dynamo/symbolic_convert.py:612] [2/0]   Hint: Set torch._dynamo.trace_autograd_ops=True
W1126 09:14:02.118000 48211 torch/_dynamo/symbolic_convert.py:612] [2/0]   Developer debug context: call_method TensorVariable() backward None None None None
""",
    "numpy_interp": """\
attempted to trace numpy function unsupported by PyTorch
  Explanation: Can't find numpy numpy function <function interp at 0x7fd1c2b4e160> in torch._numpy.
  Developer debug context: numpy function: <function interp at 0x7fd1c2b4e160>, args: [NumpyNdarrayVariable(), ListVariable(length=5), ListVariable(length=5)], kwargs: {} (corresponding torch function: None)
""",
    "time_time": """\
Graph break in user code at /workspace/bench/timer.py:5
Graph Break Reason: Attempted to call function marked as skipped
  Explanation: Dynamo does not know how to trace the builtin `time.time.` This function is either a Python builtin (e.g. _warnings.warn) or a third-party C++ Python extension (perhaps created with pybind).
  Developer debug context: module: time, qualname: time, skip reason: <missing reason>
 For more details about this graph break, please visit: https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0007.html
""",
}
HELDOUT = json.loads((Path(__file__).parent / "atlas_heldout" / "heldout.json").read_text())["items"]
# Pasted exactly as a record holds them: the newest release's, and older releases' where they differ.
RECORDED = [("if_on_tensor", records.MAIN), ("module_backward_hook", records.MAIN), ("unique", records.MAIN),
            ("locals_call", "2.11.0"), ("compiler_disable", "2.13.0")]


def twins(case: str, text: str | None = None) -> set[str]:
    """The cases a lookup may rightly put first for a message of `case` (or for this one of its messages):
    those that printed the same text on some release."""
    mine = {atlas.normalise(text)} if text else {atlas.normalise(m) for m in messages_of(case)}
    return {other for other in all_cases() if mine & {atlas.normalise(m) for m in messages_of(other)}}


def all_cases() -> list[str]:
    return list(cases_of())


def messages_of(case: str) -> list[str]:
    found = []
    for release in records.release_roots():
        try:
            entry = cases_of(release).get(case)
        except (OSError, ValueError):
            continue
        if entry and entry["message"]:
            found.append(entry["message"])
    return found


def first_hit(page, text: str) -> str:
    box = page.locator(".mlc-atlas-lookup")
    before = int(box.get_attribute("data-ranked") or 0)
    page.fill("#mlc-atlas-query", text)
    page.wait_for_function(f"Number(document.querySelector('.mlc-atlas-lookup').dataset.ranked || 0) > {before}")
    return page.locator(".mlc-atlas-hits li").first.get_attribute("data-case")


@pytest.fixture(scope="module")
def atlas_page(built_site):
    """The atlas page in headless Chromium, served as tests/test_browser.py serves the site."""
    browsing = pytest.importorskip("test_browser", reason="the browser tests need playwright and Chromium")
    handler = functools.partial(browsing.QuietHandler, directory=str(built_site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    with browsing.playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=browsing.CHROMIUM, args=browsing.ARGS, headless=True)
        context, page, watch = browsing.open_page(browser, f"http://127.0.0.1:{httpd.server_address[1]}", PAGE)
        page.wait_for_function("document.querySelector('.mlc-atlas-lookup').dataset.ready === 'true'")
        yield page, watch
        context.close()
        browser.close()
    httpd.shutdown()


def test_the_browser_normalises_as_python_does(atlas_page):
    page, _ = atlas_page
    texts = [m for case in all_cases() for m in messages_of(case)] + list(TYPED.values()) + [
        item["text"] for item in HELDOUT]
    assert page.evaluate("texts => texts.map(t => window.mlcAtlas.normalise(t))", texts) == [
        atlas.normalise(t) for t in texts]
    assert page.evaluate("texts => texts.map(t => window.mlcAtlas.ids(t))", texts) == [atlas.ids(t) for t in texts]
    assert page.evaluate("texts => texts.map(t => window.mlcAtlas.keys(t))", texts) == [atlas.keys(t) for t in texts]


def paste(page, text: str) -> tuple[str, str | None]:
    """The box's verdict on a pasted text: ('match', the first case) or ('none', None)."""
    box = page.locator(".mlc-atlas-lookup")
    before = int(box.get_attribute("data-ranked") or 0)
    page.fill("#mlc-atlas-query", text)
    page.wait_for_function(f"Number(document.querySelector('.mlc-atlas-lookup').dataset.ranked || 0) > {before}")
    outcome = box.get_attribute("data-outcome")
    return outcome, page.locator(".mlc-atlas-hits li").first.get_attribute("data-case") if outcome == "match" else None


@pytest.mark.kept  # slow; reads only the checkout: kept while it is unchanged (tests/conftest.py)
def test_the_held_out_messages(atlas_page):
    """Messages as users paste them, from code that is not the atlas's (tests/atlas_heldout/): the right case
    first or an honest "no case matches" for at least 85 %, a wrong case shown as a match for at most 5 %."""
    page, watch = atlas_page
    right, honest, wrong, missed = [], [], [], []
    for item in HELDOUT:
        outcome, case = paste(page, item["text"])
        name = f"{item['name']} ({item['release']}, {item['form']})"
        if outcome == "match":
            (right if case in [item["expect"], *item["accept"]] else wrong).append(f"{name}: {case}")
        else:
            (honest if item["expect"] is None else missed).append(name)
    total = len(HELDOUT)
    print(f"held-out: {total} messages, {len(right)} right, {len(honest)} honest no-match, {len(wrong)} wrong, "
          f"{len(missed)} no match where a case exists; wrong: {wrong}; missed: {missed}")
    assert total >= 40
    assert len(right) + len(honest) >= 0.85 * total, (missed, wrong)
    assert len(wrong) <= 0.05 * total, wrong
    assert not watch.problems, watch.problems


def test_an_id_no_case_has_gets_the_registrys_entry(atlas_page):
    page, _ = atlas_page
    registry = atlas.registry()
    have = {gb for case in all_cases() for gb in [cases_of()[case]["id"]] if gb}
    gb = next(gb for gb in sorted(registry) if gb not in have and registry[gb][1])
    assert paste(page, f"For more details, see https://meta-pytorch.github.io/compile-graph-break-site/gb/"
                       f"gb{gb[2:]}.html") == ("none", None)
    about = page.locator(".mlc-atlas-id").inner_text()
    assert gb in about and registry[gb][0] in about
    assert page.locator(".mlc-atlas-id a").first.get_attribute("href") == atlas.gb_link(gb)
    assert "not in this atlas" in page.locator(".mlc-atlas-hits").inner_text()
    # An older release's message, without its link: the id from its first line.
    assert paste(page, "Data-dependent branching\n  Explanation: Detected data-dependent branching")[0] == "match"
    assert "GB0170" in page.locator(".mlc-atlas-id").inner_text()


@pytest.mark.parametrize("case,release", RECORDED, ids=[c for c, _ in RECORDED])
def test_a_recorded_message_lands_on_its_case(atlas_page, case, release):
    page, watch = atlas_page
    message = cases_of(release)[case]["message"]
    assert message, f"{case} printed nothing on torch {release}"
    assert twins(case, message) == {case}, f"{case}'s message is not its own: pick another case for this test"
    assert first_hit(page, message) == case
    assert not watch.problems, watch.problems


@pytest.mark.parametrize("case", list(TYPED))
def test_a_message_pasted_from_another_run_lands_on_its_case(atlas_page, case):
    page, watch = atlas_page
    assert first_hit(page, TYPED[case]) in twins(case)
    assert not watch.problems, watch.problems


def test_a_hit_links_to_its_row_and_the_row_to_its_messages(atlas_page):
    page, _ = atlas_page
    assert first_hit(page, TYPED["time_time"]) == "time_time"
    page.locator(".mlc-atlas-hits li a").first.click()
    page.wait_for_function("location.hash === '#gb-time_time'")
    assert page.locator("#gb-time_time").count() == 1
    page.locator('a[href="#gb-msg-time_time"]').click()
    page.wait_for_function("location.hash === '#gb-msg-time_time'")
    assert page.locator("#gb-msg-time_time").is_visible(), "the link did not open the fold holding the messages"


def test_the_table_has_an_id_column_only_where_a_case_has_an_id():
    entry = {"what": "a print", "fix": "log it", "before": 1, "id": ""}
    without = atlas.table("recompile", ["2.15.0"], {"print_tensor": {"2.15.0": entry}}, anchors=False)
    assert without.splitlines()[0] == "| Case | On torch 2.15 | Fix |"
    with_id = atlas.table("recompile", ["2.15.0"], {"print_tensor": {"2.15.0": {**entry, "id": "GB0179"}}},
                          anchors=False)
    assert with_id.splitlines()[0] == "| Case | Id | On torch 2.15 | Fix |"
    assert f"| [GB0179]({atlas.gb_link('GB0179')}) |" in with_id
    assert atlas.gb_link("GB0179") == "https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0179.html"


def test_the_fix_says_whether_it_computes_the_same():
    entry = {"what": "w", "fix": "f", "before": 1, "id": None, "same": True, "changes": None}
    rows = atlas.table("graph_break", ["2.15.0"], {"a": {"2.15.0": entry},
                                                   "b": {"2.15.0": {**entry, "same": False,
                                                                    "changes": "It prints later."}}},
                       anchors=False).splitlines()
    assert rows[0].endswith("| Fix |")
    assert rows[2].endswith("| f (same) |")
    assert rows[3].endswith("| f (differs on 2.15; *it changes the program:* It prints later.) |")
    skipped = atlas.release_cell({"before": 1, "skipped": True})
    assert skipped == "yes, frame skipped"


def test_the_registry_is_the_installed_torchs():
    registry = atlas.registry()
    pytest.importorskip("torch")
    assert len(registry) >= 500, "torch ships a graph-break registry of several hundred ids"
    assert registry["GB0170"][0] == "Data-dependent branching"
    for gb, (name, explanation, hints, older) in registry.items():
        assert re.fullmatch(r"GB\d{4}", gb) and name and isinstance(hints, list) and isinstance(older, list), gb
        assert not re.fullmatch(r"[\w.]+", explanation or "x y"), (gb, explanation)  # text, not a variable's name


def test_keys_name_the_cause_and_the_guard():
    zlib = atlas.keys(TYPED["zlib_crc32"])
    assert {"zlib", "crc32", "name", "encode"} <= set(zlib) and "alice" not in zlib
    guards = {"    - 0/0: lr == 0.1   # return p - lr * g": "guard_local_float",
              "    - 0/0: L['n'] == 2": "guard_attr_int", "    - 0/0: G['SCALE'] == 2": "guard_global_int",
              "    - 0/0: tensor 'x' stride mismatch at index 0. expected 4, actual 1": "guard_tensor_stride",
              "    - 0/0: GLOBAL_STATE changed: grad_mode": "guard_global_grad_mode",
              "    - 0/0: len(xs) == 2": "guard_len", "    - 0/0: 2 <= x.size()[0]": "guard_size_bound"}
    for line, key in guards.items():
        assert atlas.keys(line)[:1] == [key], line
    # Where a stride or size guard failed tells a transpose (index 0) from channels_last (index 1).
    assert atlas.keys("    - 0/0: tensor 'x' stride mismatch at index 1. expected 16, actual 1") == [
        "guard_tensor_stride", "guard_at_index_1"]
