"""The search index's rules (scripts/search_index.py, mkdocs.yml's search separator, the pages' `search:` front
matter), without a browser; tests/test_search_browser.py types the queries of CANONICAL into the search box."""

from __future__ import annotations

import json
import re

import pytest

from scripts import search_index

# query -> the sections (site path, #anchor where a section) any of which may come first. A query is a reader's
# words for a thing the site teaches: a name whole (`reduce-overhead`, `torch.compiler.disable`), a part of one
# (`disable`, `register_fake`), a name of several words (`FX graph cache`, `custom op`) or a plain topic.
CANONICAL = {
    "reduce-overhead": ["levers/#mode-named-option-sets"],
    "FX graph cache": ["dissecting/warm-start/"],
    "custom op": ["dissecting/data-dependent/#torchlibrarycustom_op-opaque-on-purpose"],
    "mark_dynamic": ["levers/#mark_dynamic-the-batch-varies",
                     "dissecting/dynamic-shapes/#marking-one-dimension-before-the-first-call"],
    "graph break": ["graph-mode/#torchdynamo-and-graph-breaks"],
    "guards": ["dissecting/dynamo/#guards"],
    "guard": ["dissecting/dynamo/#guards"],
    "fusion": ["optimizations/#kernel-fusion"],
    "kernel fusion": ["optimizations/#kernel-fusion"],
    "epilogue fusion": ["dissecting/regimes/#max-autotune-and-epilogue-fusion"],
    "CUDA graphs": ["dissecting/graphs/#cuda-graphs-one-launch-for-many-kernels"],
    "roofline": ["dissecting/regimes/#the-roofline"],
    "max-autotune": ["dissecting/regimes/#max-autotune-and-epilogue-fusion"],
    "memory-bound": ["dissecting/regimes/#memory-bound-bandwidth-is-the-limit"],
    "overhead": ["dissecting/regimes/#overhead-time-that-does-not-shrink-with-the-tensor"],
    "TORCH_LOGS": ["levers/#torch_logs-what-the-compilers-decided"],
    "torch.compiler.disable": ["levers/#torchcompilerdisable-leave-a-function-out"],
    "disable": ["levers/#torchcompilerdisable-leave-a-function-out", "dissecting/compiler-crash/"],
    "torch.cond": ["dissecting/control-flow/#torchcond-both-branches-in-one-graph"],
    "torch.export": ["dissecting/control-flow/#torchexport-one-program-or-an-error"],
    "set_stance": ["levers/#set_stance-what-happens-at-a-compile"],
    "fullgraph=True": ["levers/#fullgraphtrue-a-break-is-an-error"],
    "cudagraph_mark_step_begin": ["levers/#cudagraph_mark_step_begin-where-a-step-begins"],
    "tlparse": ["dissecting/tlparse/"],
    "regional compile": ["dissecting/compile-time/"],
    "compile time": ["dissecting/compile-time/"],
    "minifier": ["dissecting/wrong-output/#the-minifier-the-smallest-graph-that-is-still-wrong"],
    "bisector": ["dissecting/wrong-output/#with-the-bisector"],
    "arithmetic intensity": ["dissecting/regimes/#arithmetic-intensity"],
    "num_warps": ["dissecting/triton-basics/#num_warps-and-num_stages"],
    "Triton": ["dissecting/triton-basics/"],
    "torch._check": ["dissecting/data-dependent/#torch_check-facts-the-compiler-may-use"],
    "register_fake": ["dissecting/data-dependent/#torchlibrarycustom_op-opaque-on-purpose"],
    "recompile_limit": ["dissecting/recompile-atlas/#at-the-recompile-limit"],
    "cache_size_limit": ["dissecting/recompile-atlas/#at-the-recompile-limit"],
    "recompile": ["dissecting/recompile-atlas/"],
    "depyf": ["dissecting/bytecode/#readable-source-depyf"],
    "functionalization": ["dissecting/training/#functionalization-no-more-in-place-ops"],
    "buffer reuse": ["buffer-reuse/"],
    "dead-code elimination": ["dead-code/"],
    "warm start": ["dissecting/warm-start/"],
    "compiled training step": ["dissecting/training/"],
    "FX graph": ["dissecting/graphs/#fx-graphs-you-can-read-and-rewrite"],
}

NOT_SEARCHED = ("versions/",)  # pages the index leaves out (their front matter says `search: exclude`)


# ------------------------------------------------------------------------------------------- without a browser


def test_a_name_gives_its_parts_and_a_number_gives_none():
    separator = search_index.SEPARATOR
    words = search_index.parts("<code>torch.library.custom_op</code>, then <code>reduce-overhead</code>. "
                               "Torch 2.13.0 and torch.compile.", separator).split()
    assert {"torch", "library", "custom_op", "custom", "op", "reduce", "overhead", "compile"} <= set(words)
    assert "13" not in words and "2" not in words, "a version number is not a name"
    assert len(words) == len(set(words)), "each part once"
    assert search_index.parts("plain words only", separator) == ""


def test_the_separator_keeps_a_name_whole_and_splits_a_sentence():
    split = [w for w in re.split(search_index.SEPARATOR, "Call torch.compile(model, mode=\"reduce-overhead\"). "
                                 "It is memory-bound - as .item() is.") if w]
    assert "torch.compile" in split and "reduce-overhead" in split and "memory-bound" in split
    assert "item" in split and "is" in split and "is." not in split, split


def test_mkdocs_yml_uses_the_separator_the_parts_are_cut_with():
    from scripts import chapters

    plugins = chapters.config(chapters.ROOT)["plugins"]
    search = next(p["search"] for p in plugins if isinstance(p, dict) and "search" in p)
    assert search["separator"] == search_index.SEPARATOR


def test_a_taught_name_is_one_word_behind_its_lead():
    assert search_index.joined("custom op", "custom") == "custom_op"
    assert search_index.joined("FX graph cache", "cache") == "cache_fx_graph"
    assert search_index.joined("reduce-overhead", "reduce") == "reduce_overhead"


def test_a_taught_section_that_is_gone_fails_the_build(tmp_path, monkeypatch):
    (tmp_path / "search").mkdir()
    index = {"config": {"separator": search_index.SEPARATOR, "fields": {}},
             "docs": [{"location": "levers/", "title": "The levers", "text": "<code>a.b</code>"}]}
    (tmp_path / "search" / "search_index.json").write_text(json.dumps(index))
    monkeypatch.setattr(search_index, "TAUGHT", [("custom op", "custom", "levers/#gone")])
    with pytest.raises(ValueError, match="levers/#gone"):
        search_index.rewrite(tmp_path)
    monkeypatch.setattr(search_index, "TAUGHT", [("custom op", "custom", "levers/")])
    assert search_index.rewrite(tmp_path) == 1
    written = json.loads((tmp_path / "search" / "search_index.json").read_text())
    assert written["docs"][0]["names"] == "custom_op" and written["docs"][0]["parts"] == "a b"
    assert set(search_index.FIELDS) <= set(written["config"]["fields"])


def test_the_built_index_has_the_parts_and_leaves_out_the_versions_page(built_site):
    index = json.loads((built_site / search_index.INDEX).read_text())
    locations = [doc["location"] for doc in index["docs"]]
    assert not [loc for loc in locations if loc.startswith(NOT_SEARCHED)], "the versions page is searched"
    assert all("parts" in doc and "names" in doc for doc in index["docs"])
    taught = {location for _, _, location in search_index.TAUGHT}
    assert taught <= set(locations)
    disable = "levers/#torchcompilerdisable-leave-a-function-out"
    levers = next(doc for doc in index["docs"] if doc["location"] == disable)
    assert "disable" in levers["parts"].split()
