"""The check of snippets/dissecting/compiler_crash.py: what dissecting/compiler-crash.md says about it, held on
every record of it."""

from facts import check


@check("dissecting/compiler_crash.py")
def _(record):
    results = record.results
    # The planted code-generation bug stops the compile, and Inductor is the one that raises.
    assert results["raised"] and results["exception"] == "InductorError", results["exception"]
    # Dynamo alone and with AOTAutograd run it like eager; only the full stack fails.
    stages = results["stages"]
    assert stages["eager"] == stages["aot_eager"] == "ran, same as eager", stages
    assert stages["inductor"] == "failed: InductorError", stages
    # suppress_errors: the failed frames ran eagerly, same result, and each said so; the page names two frames.
    assert results["fallback"] == {"same_as_eager": True, "warned": True}, results["fallback"]
    warned = [line for line in record.section("fallback").splitlines() if line.startswith("warning:")]
    assert [line.split()[3] for line in warned] == ["forward", "activation"], warned
    # The fence: a break around the disabled call, a graph on each side, the result unchanged.
    assert results["fence"] == {"graphs": 2, "breaks": 1, "same_as_eager": True}, results["fence"]
    # The repro script rebuilds the graph AOTAutograd handed Inductor (two linear layers as addmm, the ReLU,
    # the residual add), keeps the planted switch, and minifies when run.
    repro = results["repro"]
    assert repro["ops"].count("addmm") == 2 and "relu" in repro["ops"] and repro["ops"][-1] == "add", repro
    assert repro["keeps_config"] and repro["command"] == "minify", repro
