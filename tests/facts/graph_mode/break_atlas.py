"""The check of snippets/graph_mode/break_atlas.py: what dissecting/graph-break-atlas.md says about it, held on
every record of it."""

import re

from facts import check

KEYS = {"what", "id", "message", "before", "fix", "fix_kind", "after"}
# Breaks every release prints with the same registry id.
EVERYWHERE = {"if_on_tensor": "GB0170", "while_on_tensor": "GB0170", "item": "GB0124", "tolist": "GB0109",
              "nonzero": "GB0036", "boolean_mask": "GB0036", "print_text": "GB0059",
              "logger_info": "GB0291", "zlib_crc32": "GB0007", "compiler_disable": "GB0098",
              "explicit_graph_break": "GB0025", "backward_inside": "GB0123", "numpy_interp": "GB0294",
              "module_backward_hook": "GB0083"}


@check("graph_mode/break_atlas.py")
def _(record):
    results = record.results
    atlas = results["atlas"]
    assert results["atlas_kind"] == "graph_break"
    assert len(atlas) == results["cases"] >= 40
    for name, entry in atlas.items():
        assert set(entry) == KEYS, name
        assert entry["after"] == 0, f"{name}: the fix leaves {entry['after']} breaks"
        if entry["before"] == 0:
            assert entry["message"] == "" and entry["id"] is None, name
            continue
        message = entry["message"]
        # The id is the one in the message's link to the registry's page.
        link = re.search(r"/gb/gb(\d{4})\.html", message)
        assert entry["id"] == (f"GB{link.group(1)}" if link else None), name
        # Normalised: no paths, addresses or line numbers.
        assert not re.search(r"0x[0-9a-fA-F]|/work/|site-packages|<venv>|line \d|\.py:\d", message), name
    breaking = [name for name, entry in atlas.items() if entry["before"]]
    assert results["breaking"] == results["fixed"] == len(breaking) >= 40
    assert sum(results["fix_kinds"].values()) == len(breaking)
    for name, gb in EVERYWHERE.items():
        # How often a loop's test is logged can depend on the input: torch 2.11's CUDA record (its input from
        # the GPU's random stream) logs 2 messages, its CPU record 1; torch 2.15 logged 1 for every input tried.
        breaks = atlas[name]["before"]
        assert (breaks >= 1 if name == "while_on_tensor" else breaks == 1) and atlas[name]["id"] == gb, name
    assert atlas["if_on_tensor"]["message"].startswith("Data-dependent branching")
    # Side effects Dynamo replays: no break on any release.
    assert atlas["mutate_global"]["before"] == atlas["mutate_module_attribute"]["before"] == 0
    # What changed between releases.
    deepcopy = "GB4198" if record.made_with((2, 13)) else "GB0179"
    assert atlas["deepcopy_list"]["id"] == atlas["deepcopy_module"]["id"] == deepcopy
    assert (atlas["locals_call"]["before"] > 0) == (not record.made_with((2, 13)))
    for name in ("random_random", "generator_outside"):  # traced from 2.15 on
        assert (atlas[name]["before"] > 0) == (not record.made_with((2, 15))), name
    table = record.section("table")
    assert "0x" not in table and all(name in table for name in atlas)
    # The page: one id, GB0007, for skipped calls of unrelated kinds.
    assert {atlas[name]["id"] for name in ("warnings_warn", "zlib_crc32", "os_getpid", "manual_seed")} == {"GB0007"}
    # The page: fullgraph=True captures .item() and nonzero(); a branch on a value still raises.
    assert results["fullgraph"] == {"item": "compiled", "nonzero": "compiled", "if_on_tensor": "Unsupported"}
