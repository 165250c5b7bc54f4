"""The check of snippets/real_models/resnet_layout.py: what real-models.md says about it, held on every record of
it."""

from facts import check, timed

VARIANTS = ("compiled", "kept_layout", "channels_last", "frozen")
PAGE = 4096  # bytes in a page of memory on the x86-64 Linux machines the site records on


@check("real_models/resnet_layout.py")
def _(record):
    layouts = record.results["layouts"]
    assert tuple(layouts["timed"]) == VARIANTS, list(layouts["timed"])
    # The page's sizes on a CPU: two 64 x 64 images in float32.
    if record.device == "cpu":
        assert (record.results["sizes"]["batch"], record.results["sizes"]["image"]) == (2, 64), record.results
        # The weights copied into channels-last at every call, unfrozen: every convolution weight whose kernel is
        # larger than 1 x 1 (the stem's and eight 3 x 3 ones); stored channels-last, none is.
        assert layouts["relaid"] == 9, layouts["relaid"]
    assert layouts["channels_last_relaid"] == 0, layouts["channels_last_relaid"]
    tolerance = 1e-4 if record.device == "cpu" else 5e-2
    for name in VARIANTS:
        timed(layouts["timed"][name], ("eager", "compiled"))
        # Each computes eager's forward, to float32 rounding (freezing folds batch norm into the weights).
        assert layouts["differences"][name] < tolerance, (name, layouts["differences"])
    if record.device != "cpu":
        return
    # The three variants that copy no weight fault on fewer than a twentieth of the pages the copies fill.
    copies = layouts["relaid_mb"] * 1e6 / PAGE
    faults = {name: layouts["faults"][name]["faults"] for name in VARIANTS}
    for name in VARIANTS[1:]:
        assert faults[name] < copies / 20, (name, faults, copies)
    # The compile as it is takes fresh pages at every call, at least half as many as the copies fill, in the
    # median process of a committed record (the page's number). Whether malloc hands the memory back depends on
    # what the process freed before, so one process can be spared: a fresh run, one process, is not judged.
    medians = layouts["timed"]["compiled"]["compiled"].get("process_medians_us") or []
    if len(medians) > 1:
        assert faults["compiled"] >= copies / 2, (faults, copies)
        # A process that was spared (no faults to speak of) ran the compile faster than every process that
        # faulted: the page's reading of the torch 2.13 record.
        per_process = record.results.get("process_values", {}).get("layouts.faults.compiled.faults")
        if per_process:
            spared = [m for m, f in zip(medians, per_process) if f < copies / 20]
            faulted = [m for m, f in zip(medians, per_process) if f >= copies / 2]
            if spared and faulted:
                assert max(spared) < min(faulted), (spared, faulted)
    # With malloc told to keep what it frees (glibc's mallopt), the same compile faults on fewer than a twentieth
    # of those pages and computes the same.
    kept = record.results["allocator"]
    assert kept["set"] is True, kept
    assert kept["faults"]["faults"] < copies / 20, (kept["faults"], copies)
    assert kept["difference"] < tolerance, kept["difference"]
    timed(kept["timed"], ("eager", "compiled"))
