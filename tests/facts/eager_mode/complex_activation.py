"""The check of snippets/eager_mode/complex_activation.py: what contributing.md, eager-mode.md and reproduce.md
say about it, held on every record of it."""

import re

from facts import check

SIX_OPS = ["aten::sin", "aten::cos", "aten::mul", "aten::add", "aten::mul", "aten::relu"]


@check("eager_mode/complex_activation.py")
def _(record):
    results = record.results
    profile = results["profile"]

    # Six ops, in the order the function calls them; on CUDA each launched one kernel.
    printed = re.findall(r"^\s+(aten::\w+)\s", record.section("profile"), re.MULTILINE)
    assert printed == SIX_OPS, printed
    assert profile["ops"] == SIX_OPS
    kernels = profile["kernel_count"]
    assert kernels == (6 if record.device == "cuda" else 0), kernels
    assert f"6 ops called, {kernels} GPU kernels launched" in record.section("profile")

    # The call returns no later than its result is ready; the trace is kept for the timeline.
    assert 0 < profile["busy_us"] <= profile["ready_us"]
    assert 0 < profile["returned_us"] <= profile["ready_us"]
    assert results["traces"]["eager"]["trace"] == "traces.eager.trace.json"
    assert '"traceEvents"' in record.file("traces.eager.trace.json").read_text()

    # The lesson in bytes: 9 reads + 6 writes of N values against the least 3.
    traffic = results["traffic"]
    assert (traffic["eager_passes"], traffic["least_passes"]) == (15, 3)
    assert traffic["eager_mib"] == 15 * results["tensor_mib"]
    assert traffic["least_mib"] == 3 * results["tensor_mib"]
    assert "eager: 15 passes" in record.section("traffic")
    assert "(5x less)" in record.section("traffic")

    # The same inputs as optimizations/fusion.py, whose timing the chapter quotes.
    assert results["n"] == (64 * 2**20 if record.device == "cuda" else 32 * 2**20)
    if record.device == "cuda":
        # Asynchronous dispatch: the CPU is done calling before the GPU is done.
        assert profile["returned_us"] < profile["ready_us"]
        if record.committed:
            # eager-mode.md: the first op was slow on the CPU, and the trace shows the profiler's own buffer
            # request inside it taking most of that time.
            import json

            assert profile["first_op_us"] > 10 * profile["other_ops_median_us"], profile
            events = [e for e in json.loads(record.file("traces.eager.trace.json").read_text())["traceEvents"]
                      if e.get("ph") == "X"]
            first = min((e for e in events if e.get("cat") == "cpu_op" and e.get("name") == "aten::sin"),
                        key=lambda e: e["ts"])
            inside = [e for e in events if e.get("cat") == "overhead" and e.get("name") == "Activity Buffer Request"
                      and first["ts"] <= e["ts"] <= e["ts"] + e["dur"] <= first["ts"] + first["dur"]]
            assert inside and max(e["dur"] for e in inside) > first["dur"] / 2, (first, inside)
            # ... before its launch; and past the first ops a kernel is launched before the one before it ends.
            launches = sorted((e for e in events if e.get("name") == "cudaLaunchKernel"), key=lambda e: e["ts"])
            kernels = sorted((e for e in events if e.get("cat") == "kernel"), key=lambda e: e["ts"])
            assert launches and max(e["ts"] + e["dur"] for e in inside) <= launches[0]["ts"]
            assert len(launches) == len(kernels) == 6
            ahead = [i for i in range(1, 6) if launches[i]["ts"] < kernels[i - 1]["ts"] + kernels[i - 1]["dur"]]
            assert ahead and ahead == list(range(ahead[0], 6)), ahead
            # The CPU waited in synchronize for most of the time between its return and the result.
            sync = [e for e in events if e.get("name") in ("cudaDeviceSynchronize", "cudaStreamSynchronize")]
            region = min((e for e in events if e.get("name") == "complex_activation" and e.get("cat") ==
                          "user_annotation"), key=lambda e: e["ts"])
            waiting = max(e["dur"] for e in sync)
            assert waiting > (profile["ready_us"] - profile["returned_us"]) / 2, (waiting, profile)
            assert region["ts"] <= first["ts"]
