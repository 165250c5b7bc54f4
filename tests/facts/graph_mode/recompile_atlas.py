"""The check of snippets/graph_mode/recompile_atlas.py: what dissecting/recompile-atlas.md says about it, held on
every record of it."""

from facts import check

# The guard each case fails, as the first failing line of its message says it.
GUARDS = {
    "size": "tensor 'x' size mismatch at index 0. expected 8, actual 16",
    "size_0_1": "2 <= x.size()[0]",
    "dtype": "tensor 'x' dtype mismatch. expected Float, actual Double",
    "device": "tensor 'x' dispatch key set mismatch",
    "requires_grad": "tensor 'x' requires_grad mismatch. expected requires_grad=0",
    "grad_mode": "GLOBAL_STATE changed: grad_mode",
    "num_threads": "GLOBAL_STATE changed: num_threads",
    "default_dtype": "GLOBAL_STATE changed: default_dtype",
    "module_int": "module.factor == 2",
    "parameter": "requires_grad mismatch. expected requires_grad=1",
    "int_arg": "n == 2",
    "float_arg": "n == 0.5",
    "list_len": "len(xs) == 2",
    "dict_keys": "list(dict.keys(named))[0] == 'a'",
    "closure": "factor == 2",
    "global_value": "G['SCALE'] == 2",
    "recompile_limit": "hit config.recompile_limit (8)",
    "train_eval": ".training == True",
    "strides": "tensor 'x' stride mismatch",
    "parameter_sizes": "force_parameter_static_shapes = False",
    "memory_format": "tensor 'x' stride mismatch at index 1",
    "none_then_tensor": "mask is None",
    "layer_index": "module.index == 0",
    "lr_schedule": "group['lr'] == 0.1",
}
# Fixes that change what the calls compute, each saying how in one sentence; every other fix is proven the same.
# The probe compares each call's result (device, dtype, shape, strides, requires_grad, values; float64 to as few ulps
# as float32's 1e-5), what it wrote into its inputs, the random generator, the state_dict of each module passed, and
# the gradients a backward from it leaves on the inputs and parameters.
# Each change is one the probe sees. (grad_mode's function runs under its own no_grad, so calling it in one
# grad mode returns what either mode did: proven the same.)
# default_dtype (an integer x), module_int (a backward after the next call's fill_) and list_len (float16 sums)
# came from hostile reads: each has a call that shows it.
CHANGES = {"dtype", "device", "requires_grad", "memory_format", "strides", "autocast", "parameter", "default_dtype",
           "module_int", "list_len"}


@check("graph_mode/recompile_atlas.py")
def _(record):
    results = record.results
    assert results["atlas_kind"] == "recompile"
    atlas = results["atlas"]
    assert len(atlas) >= 16 and set(GUARDS) | {"autocast", "hook_added"} == set(atlas), sorted(atlas)
    for name, entry in atlas.items():
        assert set(entry) == {"what", "id", "message", "before", "fix", "after", "fix_kind", "same", "changes"}, name
        if entry["fix_kind"] == "none_needed":  # a recompile that is right: each mode once, then reused
            assert entry["after"] == entry["before"] == 1, (name, entry)
        elif entry["fix_kind"] == "recompile_needed":  # no guard failed where one should: the fix adds it
            assert entry["before"] == 0 and entry["after"] == 1, (name, entry)
        else:
            assert entry["after"] == 0, (name, entry)  # the fix removes every recompile
        # The fixed calls, compiled, return what the original calls return eagerly, or the fix says what changes.
        assert entry["same"] or entry["changes"], (name, entry)
        assert "/" not in entry["message"].replace("https://", "").split("\n")[0], entry["message"]
    assert {name for name, entry in atlas.items() if entry["changes"]} == CHANGES
    for name in CHANGES:
        assert not atlas[name]["same"], name
    assert atlas["grad_mode"]["same"]
    # 2.11 reuses the entry when a parameter of the same module is frozen in place; 2.13 and 2.15 recompile.
    frozen_caught = record.made_with((2, 13))
    for name, guard in GUARDS.items():
        if name == "device" and record.device == "cuda":
            # recompile-atlas.md: on the GPU a CUDA tensor, then a CPU one; the dispatch key set names both.
            device = atlas[name]
            assert device["what"] == "a tensor on cuda, then one on cpu" and device["before"] == 1, device
            assert "dispatch key set mismatch. expected DispatchKeySet(CUDA" in device["message"], device
            assert "actual DispatchKeySet(CPU" in device["message"], device
            continue
        if name == "parameter" and not frozen_caught:
            assert atlas[name]["before"] == 0 and atlas[name]["message"] == ""
            continue
        assert guard in atlas[name]["message"], (name, atlas[name]["message"])
        assert atlas[name]["before"] >= 1, name
    assert "GLOBAL_STATE changed: autocast" in atlas["autocast"]["message"]
    # recompile-atlas.md: a hook added after the first call is not guarded by default; nothing recompiles, the
    # compiled function runs without it, and skip_nnmodule_hook_guards=False recompiles once and runs it.
    assert atlas["hook_added"]["message"] == "" and atlas["hook_added"]["same"]
    assert results["hook_ran_by_default"] is False
    # A layer index on a module recompiles for each new index; passing the layer itself, for none.
    assert atlas["layer_index"]["before"] == 2 and atlas["layer_index"]["same"]
    # Automatic dynamic: one recompile, then a symbol; a global and a module's int recompile at every value.
    assert all(atlas[n]["before"] == 1 for n in ("size", "int_arg", "float_arg", "closure"))
    assert atlas["global_value"]["before"] == 2 and atlas["module_int"]["before"] == 2
    assert results["module_int_hinted"] == 1  # the message's hint: only the first change recompiles
    # The limit: one graph per size up to it, then the function runs eagerly, with the right results.
    limit = results["limit"]
    assert limit["name"] == "recompile_limit" and limit["value"] == 8
    assert limit["calls"] > limit["value"] and limit["graphs"] == limit["value"] and limit["matches_eager"]
    assert atlas["recompile_limit"]["before"] == limit["value"]
    assert "function: 'scale' (<file>)" in atlas["recompile_limit"]["message"]
