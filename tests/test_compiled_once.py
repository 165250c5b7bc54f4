"""Every timed compiled call that a record can show is its function compiled once, for the static shapes it was
timed at. Dynamo's cache belongs to a function's code, not to the `torch.compile` wrapper around it: a snippet
that compiles one function at a second size through a new wrapper, in the same process, fails the first size's
guards and gets a recompile with symbolic sizes (automatic dynamic shapes), and then times another program than
the page says (issue 48; shared MEASURING.md).

A record shows it in two ways:

- a record that keeps the frames Dynamo compiled for each timed example (`results["compiles"]`: example name ->
  [{"function", "inputs", "recompile_reason"}], as snippets/gpu_code/memory_model.py keeps them) must show one
  frame per example, of the timed function, with the input shapes of the timing's work label and no recompile;
- a record that times one function compiled at two or more input shapes, and keeps no such frames, must come
  from a fresh snippet that compiles each size on its own (`torch._dynamo.reset()` between sizes, or
  `dynamic=False`), unless a page says the compile is dynamic (DYNAMIC). A stale record was made by older code,
  which the snippet's source cannot vouch for: scripts/findings.py lists its timings (RECOMPILED), with why, until
  it is remade.
"""

from __future__ import annotations

import re
from collections import defaultdict

from scripts import findings, measures, records

WORK = re.compile(r"compiled (?P<function>[\w.]+)\((?P<inputs>.*)\)")

# Records that time one function compiled at several sizes, by a snippet whose page says the compile is dynamic.
DYNAMIC: dict[str, str] = {}

# Stale records made before their snippet compiled each size on its own, as scripts/findings.py lists their timings
# (RECOMPILED: shown with why, and out of the model's figure): (device, release, snippet). An entry must name a
# stale record: once remade, it leaves the table.
REMAKE = {("cuda", release, snippet) for release, snippet, _ in findings.RECOMPILED}

RESETS = re.compile(r"torch\._dynamo\.reset\(\)|dynamic\s*=\s*False")


def shapes_of(inputs: str) -> list[list[int]]:
    """[[4096, 4096], [4096, 4096]] from a work label's "float32[4096, 4096], float32[4096, 4096]"."""
    return [[int(n) for n in dims.split(",") if n.strip()] for dims in re.findall(r"\[([^]]*)\]", inputs)]


def compiled_timings(results: dict) -> list[tuple[str, str, str]]:
    """(dotted key, function, inputs) of each timing of a compiled call in a record's results."""
    found = []
    for key, timing in records.timings_in(results):
        match = WORK.fullmatch(timing.get("work") or "")
        if match:
            found.append((key, match["function"], match["inputs"]))
    return found


def every_record():
    for snippet in records.find_snippets():
        for device in ("cpu", "cuda"):
            for record in records.releases_of(snippet, device):
                if record.state in ("missing", "corrupt") or record.results.get("cannot_run"):
                    continue
                yield record


def frame_problems(results: dict, where: str) -> list[str]:
    """What is wrong with the kept frames of a record's timed compiled calls (`results["compiles"]`)."""
    compiles, problems = results.get("compiles") or {}, []
    for key, function, inputs in compiled_timings(results):
        name = key.split(".")[-2] if key.count(".") >= 2 else key
        frames = compiles.get(name)
        if frames is None:
            problems.append(f"{where}: {key} was timed compiled and its compiles are not kept")
        elif [f["function"] for f in frames] != [function]:
            problems.append(f"{where}: {key} compiled {[f['function'] for f in frames]}, not {function} once")
        elif frames[0]["recompile_reason"] is not None:
            problems.append(f"{where}: {key} recompiled: {frames[0]['recompile_reason']}")
        elif frames[0]["inputs"] != shapes_of(inputs):
            problems.append(f"{where}: {key} was compiled for {frames[0]['inputs']} and timed at {shapes_of(inputs)}"
                            f": a size that is a symbol was compiled as dynamic")
    return problems


def test_a_record_that_keeps_its_compiles_shows_one_static_frame_per_timed_example():
    problems = [problem for record in every_record() if record.results.get("compiles")
                for problem in frame_problems(record.results, f"{record.device}/torch-{record.release}/"
                                                               f"{record.snippet}")]
    assert not problems, "\n".join(problems)


def test_a_recompile_with_symbolic_sizes_is_caught():
    work = "compiled matmul_softmax(float32[4096, 4096], float32[4096, 4096])"
    timing = {"median_us": 1.0, "iqr_us": 0.1, "work": work}
    results = {"timing": {"big": {"eager": {**timing, "work": work.removeprefix("compiled ")}, "compiled": timing}}}
    static = [{"function": "matmul_softmax", "inputs": [[4096, 4096], [4096, 4096]], "recompile_reason": None}]
    assert frame_problems({**results, "compiles": {"big": static}}, "demo") == []
    dynamic = [{**static[0], "inputs": [["s77", "s17"], ["s17", "s94"]],
                "recompile_reason": "0/0: tensor 'x' size mismatch at index 0. expected 100, actual 4096"}]
    assert "recompiled" in frame_problems({**results, "compiles": {"big": dynamic}}, "demo")[0]
    assert "compiled as dynamic" in frame_problems(
        {**results, "compiles": {"big": [{**dynamic[0], "recompile_reason": None}]}}, "demo")[0]
    assert "not kept" in frame_problems({**results, "compiles": {}}, "demo")[0]
    assert "once" in frame_problems({**results, "compiles": {"big": static * 2}}, "demo")[0]


def test_one_function_timed_compiled_at_several_sizes_was_compiled_for_each_on_its_own():
    problems = []
    listed = set()
    for record in every_record():
        if record.results.get("compiles"):
            continue  # the test above reads its frames
        sizes: dict[str, set[str]] = defaultdict(set)
        for _, function, inputs in compiled_timings(record.results):
            sizes[function].add(inputs)
        several = sorted(f for f, inputs in sizes.items() if len(inputs) > 1)
        if not several or record.snippet in DYNAMIC:
            continue
        ident = (record.device, record.release, record.snippet)
        where = f"{record.device}/torch-{record.release}/{record.snippet}"
        if ident in REMAKE:
            listed.add(ident)
            assert record.state == "stale", f"{where} is {record.state}: remove it from findings.RECOMPILED"
            continue
        source = (records.SNIPPETS / record.snippet).read_text()
        if record.state == "stale":
            problems.append(f"{where}: stale, and it times {', '.join(several)} compiled at several sizes: older "
                            f"code made it, so its source cannot say each size compiled on its own; remake it")
        elif not RESETS.search(source):
            problems.append(f"{where}: times {', '.join(several)} compiled at several sizes in one process, and "
                            f"its snippet neither resets Dynamo between them nor compiles with dynamic=False")
    assert not problems, "\n".join(problems)
    assert listed == REMAKE, f"findings.RECOMPILED names records that no longer need it: {sorted(REMAKE - listed)}"
    for release, snippet, key in findings.RECOMPILED:  # each names a timing its record still holds
        (record,) = [r for r in records.releases_of(snippet, "cuda") if r.release == release]
        assert any(k == key for k, _ in records.timings_in(record.results)), (release, snippet, key)


def test_the_work_label_reads_back_its_shapes():
    assert shapes_of("float32[4096, 4096], float32[4096, 4096]") == [[4096, 4096], [4096, 4096]]
    assert shapes_of("float32[67108864], bfloat16[]") == [[67108864], []]
    assert WORK.fullmatch("compiled matmul_softmax(float32[100, 100], float32[100, 100])")["function"] == \
        "matmul_softmax"



# torch.utils.benchmark's Timer picks its calls per block in the warm-up (blocked_autorange): it stops growing the
# block once one takes longer than min_run_time, so a first call that compiles (seconds) leaves one call per block;
# otherwise it grows the block until the timer's own overhead is under 1e-4 of it, which gives a call under a
# millisecond many calls per block.
ONE_PER_BLOCK_US = 1000.0
# Fresh records that the check found so when it was written (2026-11-28), each to be looked into and remade: the
# snippet's compiled side recompiled or compiled late in some process. (device, release, snippet, key); an entry
# must still name such a timing, so a remade record leaves the list.
ONE_PER_BLOCK_KNOWN = {
    ("cuda", "2.11.0", "optimizations/fusion.py", "timing_out.compiled_out"),
    ("cpu", "2.11.0", "dissecting/dynamic_shapes.py", "timing.static"),
    ("cpu", "2.11.0", "graph_mode/regional_compile.py", "timing.whole.0"),
    ("cpu", "2.11.0", "graph_mode/regional_compile.py", "timing.whole.1"),
}


def test_no_timed_compiled_call_was_compiled_in_the_timers_warm_up():
    """A compiled side timed one call per block in some process, for a call under a millisecond, compiled inside
    the timer's warm-up: each of its calls paid a synchronisation (on a GPU) and the timer's overhead, and a
    ratio against an eager side timed in blocks of many compares two methods (issue 48's hostile read). The
    calls per block are read back from the times (measures.blocks_per_process). A stale record was made by
    older code: its page says so while it is stale (md:recorded ... stale=yes), and it is not judged here."""
    found, known = [], set()
    for device in records.DEVICES:
        for release, root in records.release_roots().items():
            for record in records.find_records(device, root):
                if record.state != "fresh":
                    continue
                for key, timing in records.timings_in(record.results):
                    if (findings.is_compiled(key, timing.get("work", "")) and timing["median_us"] < ONE_PER_BLOCK_US
                            and 1 in measures.blocks_per_process(timing)):
                        if (device, release, record.snippet, key) in ONE_PER_BLOCK_KNOWN:
                            known.add((device, release, record.snippet, key))
                            continue
                        found.append(f"{device}/{release}/{record.snippet}: {key} ({timing.get('work')}) was timed "
                                     f"one call per block in some process: call it once before measure()")
    assert not found, "\n".join(found)
    assert known == ONE_PER_BLOCK_KNOWN, f"remade, so out of ONE_PER_BLOCK_KNOWN: {ONE_PER_BLOCK_KNOWN - known}"
