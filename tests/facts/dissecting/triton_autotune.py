"""The check of snippets/dissecting/triton_autotune.py: what dissecting/autotune.md says about it, held on every
record of it."""

from facts import check


@check("dissecting/triton_autotune.py")
def _(record):
    results = record.results
    configs = results["configs"]
    # Tuned once per value of the key: every config timed at the first n, none when n repeats, all again at
    # a new n; each call's sum is right.
    first, again, new = results["tuning"]
    assert (first["configs_timed"], again["configs_timed"], new["configs_timed"]) == (configs, 0, configs)
    assert (first["tuned_sizes"], again["tuned_sizes"], new["tuned_sizes"]) == (1, 1, 2)
    assert all(step["sum"] == step["n"] for step in results["tuning"]), results["tuning"]
    # The trap: the tuning runs add into the output too, unless reset_to_zero clears it before each one.
    sums = results["sums"]
    assert sums["with_reset_to_zero"] == sums["expected"]
    assert sums["without_reset_to_zero"] > sums["expected"]
    if results["runs_per_config"]:  # the interpreter's wall clock: a known number of runs
        assert sums["without_reset_to_zero"] == (configs * results["runs_per_config"] + 1) * sums["expected"]
        # autotune.md's figure caption: 2 configs x 3 timed runs, plus the call itself, of 4096 ones.
        assert (configs, results["runs_per_config"], sums["expected"]) == (2, 3, 4096)
