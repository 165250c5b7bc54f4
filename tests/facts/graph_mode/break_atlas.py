"""The check of snippets/graph_mode/break_atlas.py: what dissecting/graph-break-atlas.md says about it, held on
every record of it."""

import re

from facts import check

KEYS = {"what", "id", "message", "before", "skipped", "crashed", "fix", "fix_kind", "after", "same", "differs",
        "changes", "probes", "rounding"}
# What the probe compares: outputs (with strides and device; floats bit for bit at zeros and subnormals) and
# which of them are an input or a view of one and whether each takes an in-place write, the exception (type and
# message on a case's own inputs; on a variant, whether the original's type catches the fix's), the inputs'
# gradients, retained gradients of outputs and the modules' parameters' gradients, printed, logged and warned text
# (torch's own warnings too, less the compiler's), the inputs as the call left them, the random generators'
# states, the modules' state_dicts and which global tensors are shared, and module-level state with the grad and
# autocast modes the call left on.
PARTS = {"out", "alias", "raised", "grads", "params", "printed", "logged", "warned", "inputs", "rng", "modules",
         "state"}
SKIPPED = "Failed to handle graph break gracefully"
# Breaks every release prints with the same registry id.
EVERYWHERE = {"if_on_tensor": "GB0170", "while_on_tensor": "GB0170", "item": "GB0124", "tolist": "GB0109",
              "nonzero": "GB0036", "boolean_mask": "GB0036", "print_text": "GB0059",
              "logger_info": "GB0291", "zlib_crc32": "GB0007", "compiler_disable": "GB0098",
              "explicit_graph_break": "GB0025", "backward_inside": "GB0123", "numpy_interp": "GB0294",
              "module_backward_hook": "GB0083"}
# Fixes that once changed the program (issue 50), each now proven equal to the original run eagerly: the same
# outputs, gradients, exception, printed text and state, on every probe. (manual_seed, once here, is proven on
# every probe but an x that does not broadcast: compiled, the error comes before the draw, which its sentence says;
# its earlier fix that never seeded is among EARLIER.)
ONCE_WRONG = ("requires_grad_inside", "parameter_inside", "module_backward_hook",
              "untyped_storage", "raise_on_tensor", "random_random", "os_getpid", "logger_outside",
              "forward_hook_print", "share_memory")
# Fixes a hostile read found changing the program, now equal on the probe that showed it (a gradient, a
# non-contiguous input, a replaced parameter, a failing check, a max just above a power of 2, a NaN not first).
MADE_EQUAL = ("random_", "torch_check_message", "set_of_parameters", "item", "max_of_tolist",
              "compiler_disable", "data_assign", "resize_as", "one_hot", "if_on_tensor")
# Earlier fixes the probe is tried on: each case's fix as an earlier version shipped it.
EARLIER = {"item", "max_of_tolist", "while_on_tensor", "nested_tensor", "random_", "torch_check_message",
           "set_of_parameters", "compiler_disable", "data_assign", "max_of_tolist: NaN", "while_on_tensor: overflow",
           "resize_as: empty_like", "manual_seed: never seeded", "while_on_tensor: floats only",
           "max_of_tolist: floats only", "sorted_by_tensor: rows.sum(1)", "nested_tensor: len(x) - 2",
           "out_resized: torch.empty(x.shape)", "max_of_tolist: any rank", "nested_tensor: no values",
           "mark_dirty: a bool", "sorted_tensors: views", "if_on_tensor: operands kept",
           "while_on_tensor: exact integer max", "max_of_tolist: Tensor.max()"}
# Fixes that must change what the program does, each saying how in one sentence.
CHANGES = {"deepcopy_module", "print_then_mutate", "logger_info", "forward_hook_print_reordered", "resize_inside",
           "checkpoint_side_effect", "tolist", "apply_inside", "hook_handle_global", "sorted_tensors",
           "out_resized", "out_non_contiguous", "deepcopy_list", "numpy_interp", "numpy_tobytes", "int_index",
           "sorted_by_tensor", "bool_of_tensor", "if_on_count", "while_on_tensor", "float_of_tensor",
           "item_captured", "manual_seed", "autocast_inside", "clamp_if", "nan_to_num_if", "len_of_nonzero",
           "autograd_function_item", "c_extension", "nested_tensor"}
# What each of those may differ in: the parts its sentence says, and no other (a raise where the fix computes
# differs in the output, its aliasing and gradients too).
RAISED = {"raised", "out", "alias", "grads"}
DIFFERS = {"deepcopy_module": {"params"}, "print_then_mutate": {"printed"}, "logger_info": {"logged"},
           "forward_hook_print_reordered": {"printed"}, "resize_inside": RAISED, "checkpoint_side_effect": {"state"},
           "tolist": {"out", "grads"}, "apply_inside": RAISED, "hook_handle_global": RAISED | {"state"},
           "sorted_tensors": {"out"}, "out_resized": {"raised"}, "out_non_contiguous": RAISED,
           "deepcopy_list": {"raised", "out", "alias"}, "numpy_interp": RAISED, "numpy_tobytes": RAISED,
           "int_index": {"alias", "raised"}, "sorted_by_tensor": {"alias"}, "bool_of_tensor": {"alias", "out"},
           "if_on_count": {"alias", "out", "raised"}, "while_on_tensor": {"alias", "out"},
           "float_of_tensor": {"warned", "raised"}, "item_captured": {"raised"}, "manual_seed": {"rng"},
           "autocast_inside": {"state", "raised"}, "clamp_if": RAISED, "nan_to_num_if": RAISED,
           "len_of_nonzero": {"out"}, "autograd_function_item": {"out"}, "c_extension": {"out"},
           "nested_tensor": {"warned"}}


@check("graph_mode/break_atlas.py")
def _(record):
    results = record.results
    atlas = results["atlas"]
    assert results["atlas_kind"] == "graph_break"
    assert len(atlas) == results["cases"] >= 100
    for name, entry in atlas.items():
        assert set(entry) == KEYS, (name, sorted(set(entry) ^ KEYS))
        assert entry["after"] == 0, f"{name}: the fix leaves {entry['after']} breaks"
        assert entry["crashed"] is None, f"{name}: Dynamo raised {entry['crashed']} compiling it"
        # Every fix computes the same as the original run eagerly, or says what it changes.
        assert set(entry["differs"]) <= PARTS and entry["same"] == (not entry["differs"]), name
        assert entry["same"] or entry["changes"], f"{name}: the fix differs in {entry['differs']}, unannounced"
        assert entry["probes"] >= 1
        if entry["before"] == 0:
            assert entry["message"] == "" and entry["id"] is None and not entry["skipped"], name
            continue
        message = entry["message"]
        # The id is the one in the message's link to the registry's page.
        link = re.search(r"/gb/gb(\d{4})\.html", message)
        assert entry["id"] == (f"GB{link.group(1)}" if link else None), name
        # A frame skipped ("falling back to eager") is marked, not counted as an ordinary break.
        assert not message.startswith(SKIPPED) or entry["skipped"], name
        # Normalised: no paths, addresses or line numbers.
        assert not re.search(r"0x[0-9a-fA-F]|/work/|site-packages|<venv>|line \d|\.py:\d", message), name
    assert {name for name, entry in atlas.items() if entry["changes"]} == CHANGES
    assert set(DIFFERS) == CHANGES
    for name in CHANGES:  # no difference hides behind a sentence that does not say it
        assert set(atlas[name]["differs"]) <= DIFFERS[name], (name, atlas[name]["differs"])
    # Each change is seen by the probe: the record shows it (resize_'s new memory may hold zeros, as the fix
    # writes; mean() of an integer tensor raises NotImplementedError unwrapped, compiled, before torch 2.15).
    # A compiled autocast block that raises leaves autocast on, and wraps an IndexError, on torch 2.11 only.
    seen = (CHANGES - {"resize_inside"} - (set() if record.made_with((2, 15)) else {"item_captured"})
            - (set() if not record.made_with((2, 13)) else {"autocast_inside"}))
    for name in seen:
        assert not atlas[name]["same"], name
    assert results["changed"] == sorted(CHANGES)
    assert results["skipped"] == sorted(name for name, entry in atlas.items() if entry["skipped"])
    assert results["same"] == sum(entry["same"] for entry in atlas.values())
    for name in ONCE_WRONG + MADE_EQUAL:
        assert atlas[name]["same"] and not atlas[name]["changes"], name
    for name in MADE_EQUAL:  # proven on the probe that showed the change, beside the first input
        assert atlas[name]["probes"] >= 2, name
    for name, entry in atlas.items():  # parts equal only to float rounding, named
        assert set(entry["rounding"]) <= PARTS - set(entry["differs"]), name
    # The probe sees what those fixes changed: each earlier fix, run through it, differs in some part.
    assert set(results["caught"]) == EARLIER, sorted(results["caught"])
    for name, parts in results["caught"].items():
        assert parts and set(parts) <= PARTS, (name, parts)
    assert results["earlier_caught"] == results["earlier_fixes"] == len(EARLIER)
    # Proven on more than one input where the value decides: both branches, a raise, a view.
    for name in ("if_on_tensor", "while_on_tensor", "raise_on_tensor", "bool_of_tensor", "clamp_if",
                 "nan_to_num_if", "untyped_storage"):
        assert atlas[name]["probes"] >= 2, name
    breaking = [name for name, entry in atlas.items() if entry["before"]]
    assert results["breaking"] == results["fixed"] == len(breaking) >= 60
    assert sum(results["fix_kinds"].values()) == len(breaking)
    assert results["ids"] == sorted({e["id"] for e in atlas.values() if e["id"]}) and len(results["ids"]) >= 20
    if record.made_with((2, 15)):  # issue 50: at least 60 distinct registry ids on the main release
        assert len(results["ids"]) >= 60, len(results["ids"])
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
    # The page: torch._check's hint (a message naming no value), compiled, raised other than the eager check's
    # RuntimeError once the size was a symbol, so the atlas checks before the call.
    if record.made_with((2, 15)):
        assert results["check_hint_raises"] == "TorchRuntimeError", results["check_hint_raises"]
    assert results["fullgraph"] == {"item": "compiled", "nonzero": "compiled", "if_on_tensor": "Unsupported"}
