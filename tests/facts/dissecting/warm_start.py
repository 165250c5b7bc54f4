"""The check of snippets/dissecting/warm_start.py: what dissecting/warm-start.md says about it, held on every record
of it."""

from facts import check


@check("dissecting/warm_start.py")
def _(record):
    runs = record.results["runs"]
    cold, warm, fx_only, artifacts = (runs[name] for name in ("cold", "warm", "fx_only", "artifacts"))
    # Cold: every cache misses (a forward and a backward graph for Inductor, one joint entry for AOTAutograd).
    assert (cold["fx_hits"], cold["fx_misses"], cold["aot_hits"], cold["aot_misses"]) == (0, 2, 0, 1)
    # Warm: both caches hit, and no kernel is compiled again.
    assert (warm["fx_hits"], warm["fx_misses"], warm["aot_hits"], warm["aot_misses"]) == (2, 0, 1, 0)
    assert warm["compilers"] < cold["compilers"]
    # AOTAutograd's cache off: it is not consulted, and Inductor's FX graph cache still hits.
    assert (fx_only["fx_hits"], fx_only["aot_hits"], fx_only["aot_misses"]) == (2, 0, 0)
    # The portable artifacts fill both caches in an empty folder.
    assert (artifacts["fx_hits"], artifacts["aot_hits"]) == (2, 1) and record.results["artifacts_kib"] > 0
    if record.device == "cpu":
        # ...but they hold no built C++ library, so the CPU compiles every kernel again.
        assert artifacts["compilers"] == cold["compilers"]
        # A warm restart runs one compile: the preprocessor over the kernels' header, to find its precompiled build.
        assert warm["compilers"] == 1, warm
    # Each configuration ran in two fresh processes.
    assert all(len(run["s"]) == 2 and all(s > 0 for s in run["s"]) for run in runs.values())
