"""The record store (scripts/records.py): the committed records are well formed, name real snippets, hold
nothing private and are fresh on CPU; and, on throw-away trees, the state words and the judging words."""

from __future__ import annotations

import getpass
import hashlib
import json
import re
import socket
from pathlib import Path

import pytest

from scripts import chapters, measures, records
from scripts.regenerate import GENERIC_USERS

RECORDS = records.all_records()
IDS = [f"{r.device}/torch-{r.release}/{r.snippet}" for r in RECORDS]
SNIPPETS = records.find_snippets()
# Fields of a Chrome trace that name the machine or the path it was written to.
TRACE_PRIVATE = {"host_name", "hostName", "traceName", "distributedInfo"}


# ------------------------------------------------------------------------------------- committed records


def private_patterns() -> list[re.Pattern]:
    """Text that must never reach a record: this machine's paths, user and host, raw temp paths."""
    patterns = [re.escape(str(records.ROOT)), r"/home/\w", r"/Users/\w", r"/root/", r"(?<![\w<])/tmp/\w",
                r"/private/var/folders/", r"/work/"]
    home = str(Path.home())
    if home not in ("/", ""):
        patterns.append(re.escape(home) + "/")
    host = socket.gethostname()
    if len(host) >= 3:
        patterns.append(rf"\b{re.escape(host)}\b")
    user = getpass.getuser()
    if user not in GENERIC_USERS and len(user) >= 3:
        patterns.append(rf"\b{re.escape(user)}\b")
    return [re.compile(p) for p in patterns]


def private_keys(value, where="") -> list[str]:
    """The places of TRACE_PRIVATE fields at any depth of a JSON value."""
    found = []
    if isinstance(value, dict):
        for key, item in value.items():
            if key in TRACE_PRIVATE:
                found.append(f"{where}.{key}" if where else key)
            found += private_keys(item, f"{where}.{key}" if where else key)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found += private_keys(item, f"{where}[{i}]")
    return found


def test_records_exist():
    assert RECORDS, f"no records under {records.OUTPUTS}: run {records.REMAKE} --device cpu"


@pytest.mark.parametrize("record", RECORDS, ids=IDS)
def test_committed_record_is_well_formed(record):
    manifest = record.manifest  # CorruptRecord, naming the file, when it cannot be read
    where = record.where("manifest.json")
    env = manifest["environment"]
    assert manifest["snippet"] == f"snippets/{record.snippet}", f"{where} names {manifest['snippet']}"
    assert manifest["device"] == record.device, f"{where} says device {manifest['device']}"
    assert isinstance(manifest["sha256"], str) and re.fullmatch(r"[0-9a-f]{64}", manifest["sha256"]), (
        f"{where}: sha256 is not a hex digest"
    )
    assert manifest["exit_status"] == 0, f"{where} records a failed run"
    assert isinstance(manifest["duration_s"], (int, float)) and manifest["duration_s"] >= 0, f"{where}: no duration"
    assert isinstance(env, dict) and env.get("torch"), f"{where} does not name its torch version"
    assert record.device != "cuda" or env.get("gpu"), f"{where} is a CUDA record naming no GPU"
    for name in (records.STDOUT, records.SECTIONS):
        assert (record.folder / name).is_file(), f"{record.where(name)} is missing"
    assert isinstance(record.sections, dict), f"{record.where(records.SECTIONS)} is not a JSON object"
    assert isinstance(record.results, dict), f"{record.where('files/results.json')} is not a JSON object"
    for kept in record.files.glob("*.json"):
        try:
            json.loads(kept.read_text())
        except ValueError as error:
            pytest.fail(f"{record.where('files/' + kept.name)} is not valid JSON ({error})")


@pytest.mark.parametrize("record", RECORDS, ids=IDS)
def test_a_committed_record_of_a_timed_snippet_was_made_with_the_full_method(record):
    """A draft (`--processes 1`) reads like a record and its check passes on it; only its timings' process
    count tells it apart, so it is refused here rather than published."""
    assert not record.draft, (
        f"{record.where()} is a draft: its timings come from fewer than {records.PROCESSES} fresh processes. "
        f"Remake it with the full method: {records.remake_hint(record.snippet, record.device)}")


@pytest.mark.parametrize("record", RECORDS, ids=IDS)
def test_committed_record_names_an_existing_snippet(record):
    assert (records.SNIPPETS / record.snippet).is_file(), (
        f"{record.where()} records snippets/{record.snippet}, which does not exist: delete the record or "
        f"restore the snippet"
    )


@pytest.mark.parametrize("record", RECORDS, ids=IDS)
def test_committed_record_holds_nothing_private(record):
    patterns = private_patterns()
    for path in sorted(record.folder.rglob("*")):
        if not path.is_file():
            continue
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            continue
        shown = record.where(path.relative_to(record.folder).as_posix())
        for pattern in patterns:
            match = pattern.search(text)
            assert not match, f"{shown} holds private text {match.group(0)!r}"
        if path.name.endswith(".trace.json"):
            fields = private_keys(json.loads(text))
            assert not fields, f"{shown} keeps the profiler's machine fields {fields}"


@pytest.mark.parametrize("record", RECORDS, ids=IDS)
def test_a_record_lies_in_the_folder_of_the_torch_release_that_made_it(record):
    assert record.folder.is_relative_to(records.release_root(record.release)), (
        f"{record.where()} was made with torch {record.release}: its place is under "
        f"{records.release_root(record.release).relative_to(records.ROOT)}/ (the recorder files it there)"
    )


def test_cpu_records_are_kept_for_three_torch_releases_the_main_one_first():
    made = {r.release for r in RECORDS if r.device == "cpu"}
    assert records.MAIN in made, f"no CPU record of the main release, torch {records.MAIN}"
    assert len(made) >= 3, f"CPU records of torch {', '.join(sorted(made))} only: the site keeps three releases"


@pytest.mark.parametrize("snippet", SNIPPETS)
def test_every_snippet_has_a_fresh_cpu_record(snippet):
    # of the main release: the page falls back to an older release only where the main one has none
    state = records.Record(snippet, "cpu", records.record_dir(snippet, "cpu")).state
    assert state == "fresh", (
        f"the CPU record of snippets/{snippet} is {state}: remake it with "
        f"{records.remake_hint(snippet, 'cpu')}"
    )


def test_the_remake_hint_is_a_command_the_recorder_takes():
    from scripts import regenerate

    words = records.remake_hint("x/y.py", "cpu").split()
    assert words[:3] == [".venv/bin/python", "-m", "scripts.regenerate"], words
    args = regenerate.parse_args(words[3:])
    assert (args.device, args.only) == ("cpu", ["x/y.py"])


# ----------------------------------------------------------------------------------------- on tmp trees


SOURCE = "print('hi')\n"


@pytest.fixture
def tree(tmp_path):
    (tmp_path / "snippets" / "demo").mkdir(parents=True)
    (tmp_path / "snippets" / "demo" / "hello.py").write_text(SOURCE)
    return tmp_path


def manifest(source=SOURCE, **changes) -> dict:
    return {"snippet": "snippets/demo/hello.py", "sha256": hashlib.sha256(source.encode()).hexdigest(),
            "device": "cpu", "command": "python scripts/runner.py snippets/demo/hello.py <record>", "exit_status": 0,
            "duration_s": 0.1, "date": "2026-11-21T12:00:00+00:00",
            "environment": {"torch": "2.13.0", "python": "3.11.7", "cpu": "Test CPU", "cpu_count": 2}, **changes}


def write_record(folder: Path, content) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "manifest.json").write_text(content if isinstance(content, str) else json.dumps(content))
    (folder / "stdout.txt").write_text("hi\n")
    (folder / "sections.json").write_text('{"": "hi\\n"}')
    return folder


def state(tree) -> str:
    return records.record("demo/hello.py", "cpu", tree / "outputs", tree / "snippets").state


@pytest.mark.parametrize("content, message", [
    ('{"snippet": "snippets/demo/hello.py", ', "is not valid JSON"),
    ("[1, 2]", "is not a JSON object"),
    (json.dumps({k: v for k, v in manifest().items() if k not in ("sha256", "date")}), "lacks sha256, date"),
])
def test_a_corrupt_manifest_raises_naming_the_file(tree, content, message):
    write_record(tree / "outputs" / "cpu" / "demo" / "hello", content)
    record = records.record("demo/hello.py", "cpu", tree / "outputs", tree / "snippets")
    with pytest.raises(records.CorruptRecord) as error:
        _ = record.manifest
    assert "outputs/cpu/demo/hello/manifest.json " in str(error.value)
    assert message in str(error.value) and "\n" not in str(error.value)
    assert record.state == "corrupt"


def test_a_record_without_a_manifest_is_missing_and_reading_it_names_the_file(tree):
    record = records.record("demo/hello.py", "cpu", tree / "outputs", tree / "snippets")
    assert record.state == "missing" and not record.exists
    with pytest.raises(records.CorruptRecord, match=r"manifest.json does not exist"):
        _ = record.manifest


def test_a_corrupt_results_file_raises_naming_the_file(tree):
    folder = write_record(tree / "outputs" / "cpu" / "demo" / "hello", manifest())
    (folder / "files").mkdir()
    (folder / "files" / "results.json").write_text("{")
    with pytest.raises(records.CorruptRecord, match=r"files/results.json is not valid JSON"):
        _ = records.record("demo/hello.py", "cpu", tree / "outputs", tree / "snippets").results


def test_state_fresh_and_stale(tree):
    write_record(tree / "outputs" / "cpu" / "demo" / "hello", manifest())
    assert state(tree) == "fresh"
    (tree / "snippets" / "demo" / "hello.py").write_text("print('edited since')\n")
    assert state(tree) == "stale"


def test_a_record_timed_in_fewer_processes_than_the_method_s_is_a_draft(tree):
    folder = write_record(tree / "outputs" / "cpu" / "demo" / "hello", manifest())
    (folder / "files").mkdir()
    timing = {"median_us": 10.0, "iqr_us": 1.0}
    for results, draft in (({"n": 3}, False), ({"t": timing}, True), ({"t": {**timing, "processes": 1}}, True),
                           ({"t": {**timing, "processes": records.PROCESSES}}, False)):
        (folder / "files" / "results.json").write_text(json.dumps(results))
        record = records.record("demo/hello.py", "cpu", tree / "outputs", tree / "snippets")
        assert (record.state, record.draft) == ("fresh", draft), results


def test_state_of_a_record_whose_snippet_is_gone_is_stale(tree):
    write_record(tree / "outputs" / "cpu" / "demo" / "hello", manifest())
    (tree / "snippets" / "demo" / "hello.py").unlink()
    assert state(tree) == "stale"


def test_state_failed_when_the_record_has_a_failing_exit_status(tree):
    write_record(tree / "outputs" / "cpu" / "demo" / "hello", manifest(exit_status=1))
    assert state(tree) == "failed"
    write_record(tree / "outputs" / "cpu" / "demo" / "hello", manifest(exit_status=None))  # timed out
    assert state(tree) == "failed"


def test_state_failed_when_a_failed_run_of_the_current_source_is_kept(tree, monkeypatch):
    # The kept failures live beside the outputs (.cache/regenerate/failed/ in the repository).
    monkeypatch.setattr(records, "OUTPUTS", tree / "outputs")
    monkeypatch.setattr(records, "FAILED", tree / "failed")
    kept = tree / "failed" / "cpu" / "demo" / "hello"
    write_record(kept, manifest(exit_status=1))
    assert state(tree) == "failed", "a failed run and no record"
    write_record(tree / "outputs" / "cpu" / "demo" / "hello", manifest("print('an older version')\n"))
    assert state(tree) == "failed", "a failed run of the current source over an older record"
    (tree / "snippets" / "demo" / "hello.py").write_text("print('edited after the failure')\n")
    assert state(tree) == "stale", "a failure of an older source says nothing about the current one"


def test_the_readme_names_every_state_a_record_can_be_in():
    readme = (records.ROOT / "README.md").read_text()
    assert f"({', '.join(records.STATES)})" in readme.replace("\n", " ")


def test_find_records_skips_hidden_folders_of_a_run_in_progress(tree):
    write_record(tree / "outputs" / "cpu" / "demo" / "hello", manifest())
    write_record(tree / "outputs" / "cpu" / "demo" / ".hello.new-123", manifest())
    write_record(tree / "outputs" / "cpu" / "demo" / ".hello.old-123", manifest())
    found = records.find_records("cpu", tree / "outputs", tree / "snippets")
    assert [(r.snippet, r.device) for r in found] == [("demo/hello.py", "cpu")]
    assert records.find_records("cuda", tree / "outputs") == []


def test_find_snippets_skips_helpers(tree):
    (tree / "snippets" / "demo" / "_helper.py").write_text("")
    (tree / "snippets" / "demo" / "__pycache__").mkdir()
    (tree / "snippets" / "demo" / "__pycache__" / "x.py").write_text("")
    assert records.find_snippets(tree / "snippets") == ["demo/hello.py"]


def test_value_reads_dotted_keys_and_names_what_is_missing(tree):
    folder = write_record(tree / "outputs" / "cpu" / "demo" / "hello", manifest())
    (folder / "files").mkdir()
    (folder / "files" / "results.json").write_text(json.dumps({"timing": {"eager": {"median_us": 5}}, "xs": [1, 2]}))
    record = records.record("demo/hello.py", "cpu", tree / "outputs", tree / "snippets")
    assert record.value("timing.eager.median_us") == 5 and record.value("xs.1") == 2
    for key in ("timing.compiled", "xs.2", "xs.a"):
        with pytest.raises(KeyError, match=re.escape(f"'{key}' is not in ")):
            record.value(key)


def test_provenance_names_hardware_versions_and_date(tree):
    cpu = records.Record("demo/hello.py", "cpu", write_record(tree / "o" / "cpu" / "demo" / "hello", manifest()))
    assert cpu.provenance() == "Recorded on Test CPU (2 cores) · torch 2.13.0 · Python 3.11.7 · 2026-11-21"
    env = dict(manifest()["environment"], gpu="NVIDIA H200", cuda="12.8", driver="570.1", triton="3.7.1")
    cuda = records.Record("demo/hello.py", "cuda",
                          write_record(tree / "o" / "cuda" / "demo" / "hello", manifest(environment=env)))
    assert cuda.hardware == "NVIDIA H200"
    assert cuda.provenance().startswith(
        "Recorded on NVIDIA H200 (CUDA 12.8, driver 570.1) · torch 2.13.0 · triton 3.7.1 · Python 3.11.7"
    )


# --------------------------------------------------------------------------------------------- judging words


def t(median, q1=None, q3=None, iqr=None):
    timing = {"median_us": median}
    if q1 is not None:
        timing.update(q1_us=q1, q3_us=q3)
    if iqr is not None:
        timing["iqr_us"] = iqr
    return timing


@pytest.mark.parametrize("a, b, words", [
    (t(100, 90, 110), t(95, 85, 105), "about the same"),
    (t(100, 90, 110), t(105, 99, 111), "about the same"),
    (t(100, 95, 110), t(100, 100, 100), "about the same"),
    (t(189, 185, 193), t(100, 98, 102), "1.9× faster"),  # a ratio of 1.89 whose band excludes 1
    (t(100, 99, 101), t(50, 49, 51), "2.0× faster"),
    (t(100, 99, 101), t(200, 199, 201), "2.0× slower"),
    (t(1000, 990, 1010), t(10, 9.9, 10.1), "100× faster"),
    (t(100, 99, 101), t(10, 9.9, 10.1), "10× faster"),
    (t(100, iqr=4), t(50, iqr=2), "2.0× faster"),  # only an IQR: quartiles at median ± IQR/2
    (t(100, iqr=80), t(70, iqr=80), "about the same"),
])
def test_judge(a, b, words):
    assert measures.judge(a, b, "cpu") == words


def test_judge_is_about_the_same_exactly_when_the_band_holds_one():
    a = t(100, 90, 110)
    ratio, lo, hi = measures.timing_band(a, t(80, 75, 90))
    assert (round(ratio, 6), round(lo, 6), round(hi, 6)) == (1.25, 1.0, round(110 / 75, 6))
    assert measures.judge(a, t(80, 75, 90), "cpu") == "about the same"  # the band touches 1
    assert measures.judge(a, t(80, 75, 89.9), "cpu") == "1.2× faster"


def p(*medians):
    """A timing pooled over fresh processes, one median each."""
    return {"median_us": sorted(medians)[len(medians) // 2], "process_medians_us": list(medians)}


@pytest.mark.parametrize("a, b, words", [
    (p(100, 200, 140), p(50, 100, 70), "2.0× faster"),   # each process saw 2x, though the processes differ 2x
    (p(100, 100, 100), p(90, 110, 95), "about the same"),  # one process saw b slower, one faster
    (p(100, 100, 100), p(85, 88, 84), "about the same"),  # within 25 %: a second regeneration could flip it
    (p(100, 100, 100), p(70, 75, 72), "1.4× faster"),
    (p(100, 100, 100), p(300, 310, 290), "3.0× slower"),
])
def test_judge_uses_the_ratio_in_each_process(a, b, words):
    assert measures.judge(a, b, "cpu") == words


@pytest.mark.parametrize("a, b, cpu, cuda", [
    # Slower in every process by 13-15 %: inside the CPU floor, outside the GPU's.
    (p(100, 100, 100), p(115, 116, 117), "about the same", "1.2× slower"),
    (p(100, 100, 100), p(103, 104, 104), "about the same", "about the same"),  # inside both floors
    # Faster in every process, but the ratios spread 1.1 to 2.2: half that spread (1.41) is wider than either
    # floor, and the median (1.33) lies inside it.
    (p(110, 133, 220), p(100, 100, 100), "about the same", "about the same"),
    (p(150, 160, 170), p(100, 100, 100), "1.6× faster", "1.6× faster"),
])
def test_judge_reads_the_device_floor_and_the_records_own_spread(a, b, cpu, cuda):
    assert (measures.judge(a, b, "cpu"), measures.judge(a, b, "cuda")) == (cpu, cuda)
    assert measures.band(a, b, "cuda") >= measures.FLOORS["cuda"]


def test_pooled_timings_keep_each_process_and_every_block():
    runs = [{"median_us": m, "times_us": [m - 1, m, m + 1], "n": 3, "threads": 2, "work": "f()"} for m in (10, 30, 20)]
    first = {"timing": {"a": runs[0]}, "faults": 5, "gbps": 40.0, "ops": 6, "shape": [2, 3], "name": "x"}
    merged = measures.merge_runs([
        first,
        {"timing": {"a": runs[1]}, "faults": 9, "gbps": 80.0, "ops": 6, "shape": [2, 3], "name": "y"},
        {"timing": {"a": runs[2]}, "faults": 7, "gbps": 50.0, "ops": 6, "shape": [2, 3], "name": "z"},
    ])
    pooled = merged["timing"]["a"]
    assert pooled["process_medians_us"] == [10, 30, 20] and pooled["processes"] == 3
    assert pooled["n"] == 9 and pooled["median_us"] == 20 and pooled["threads"] == 2
    # A number the processes measured differently is their median; what they agree on, and text, stay.
    assert (merged["faults"], merged["gbps"]) == (7, 50.0)
    assert (merged["ops"], merged["shape"], merged["name"]) == (6, [2, 3], "x")
    assert merged["process_values"] == {"faults": [5, 9, 7], "gbps": [40.0, 80.0, 50.0]}
    assert measures.merge_runs([{"n": 1}, {"n": 2}, {"n": 3}, {"n": 4}])["n"] in (2, 3)  # a value seen
    assert measures.merge_runs([{"f": 1}, {}])["f"] == 1  # missing in a later process: the first's
    with pytest.raises(KeyError):
        measures.merge_runs([first, {"timing": {}}])


# Two records that time the same work by two methods, each with why; a page quoting one says so beside the other.
# memory_model.py hands torch.compile(fn) straight to measure(), so the compile happens inside the timer's warm-up,
# and torch.utils.benchmark's blocked_autorange then times one call per block (shown on the CPU with torch 2.15);
# fusion.py's compiled call had run before it was timed.
TWO_METHODS = {
    ("cuda", "gpu_code/memory_model.py", "compiled complex_activation(float32[67108864], float32[67108864])"):
        "compiled inside the timer's warm-up: timed one call per block",
    ("cuda", "dissecting/regimes.py", "compiled complex_activation(float32[67108864], float32[67108864])"):
        "its record is stale: made before the snippet compiled first, timed one call per block (regimes.md says so)",
}


def test_one_number_per_measurement():
    """Two records that time the same work (the same function on the same shapes, eager or compiled) on the
    same device, release and thread count must agree within the spread of their processes' medians (plus the
    15 % two regenerations of one record moved by on this machine); a
    page that needs a number quotes the one record that measures it. (Within one record, one label may
    name two settings on purpose, as static and dynamic compiles of one function: only records are
    compared with each other.)"""
    seen: dict[tuple, tuple[str, dict]] = {}
    clashes = []
    for record in RECORDS:
        for key, timing in records.timings_in(record.results):
            if not timing.get("work") or not timing.get("process_medians_us"):
                continue
            # One machine: two runners time the same work differently (records.Record.machine).
            ident = (record.device, record.machine, record.environment.get("torch"), timing.get("threads"),
                     timing["work"])
            where = f"{record.device}/{record.snippet} {key}"
            if ident in seen and seen[ident][0].split(" ")[0] != where.split(" ")[0]:
                other_where, other = seen[ident]
                lo = max(min(timing["process_medians_us"]), min(other["process_medians_us"]))
                hi = min(max(timing["process_medians_us"]), max(other["process_medians_us"]))
                # Records made at different times on this shared VM drift by up to about 15 % as a whole (the
                # load moves); a larger gap than that means two methods, not two moments.
                explained = any((record.device, snippet, timing["work"]) in TWO_METHODS
                                for snippet in (record.snippet, other_where.split(" ")[0].split("/", 1)[1]))
                if lo > hi * 1.15 and not explained:
                    clashes.append(f"{timing['work']}: {other_where} ({other['median_us']:,.1f} us) and {where} "
                                   f"({timing['median_us']:,.1f} us) disagree beyond their processes' spreads")
            elif ident not in seen:
                seen[ident] = (where, timing)
    assert not clashes, "\n".join(clashes)
    for device, snippet, work in TWO_METHODS:  # each entry still names a timing some record holds
        assert any(r.device == device and r.snippet == snippet and any(t.get("work") == work for _, t in
                   records.timings_in(r.results)) for r in RECORDS), (snippet, work)


def test_pages_state_the_floors_the_rule_uses():
    """A page that says where "about the same" ends says what measures.judge applies, on both devices."""
    rule = (r"between\s+1 / ([\d.]+) and [\d.]+ on\s+the\s+CPU\s+runners\s+and\s+between\s+1 / ([\d.]+) and [\d.]+"
            r"\s+on\s+a\s+GPU\s+\(`measures.FLOORS`\)")
    stated = {(page.name, float(cpu), float(cuda)) for page in (chapters.DOCS / name for name in chapters.pages())
              for cpu, cuda in re.findall(rule, page.read_text())}
    assert {"reproduce.md", "guide.md"} <= {name for name, _, _ in stated}, stated
    assert all((cpu, cuda) == (measures.FLOORS["cpu"], measures.FLOORS["cuda"]) for _, cpu, cuda in stated), stated


@pytest.mark.parametrize("calls", [1, 10, 16, 256, 1000])  # torch's powers of ten, JAX's of two
def test_calls_per_block_are_read_back_from_a_timings_times(calls):
    # What torch.utils.benchmark stores: a block's clock reading (float seconds, whole nanoseconds apart)
    # divided by its calls, in microseconds.
    start = 12345.678901234  # a perf_counter reading, seconds since boot
    blocks_ns = [(183_417 + 7 * i) * calls + (137 + 211 * i) % calls for i in range(10)]
    times = [((start + ns / 1e9) - start) / calls * 1e6 for ns in blocks_ns]
    assert measures.calls_per_block({"times_us": times}) == calls
    assert measures.calls_per_block({"times_us": times[:3]}) is None  # too few to say


def test_calls_per_block_are_read_per_process_and_a_mix_is_told_apart():
    start = 12345.678901234

    def times(calls, first):
        return [((start + ((first + 7 * i) * calls + (137 + 211 * i) % calls) / 1e9) - start) / calls * 1e6
                for i in range(10)]
    pooled = {"times_us": times(100, 2_768_000) + times(1, 2_803_000) + times(1, 2_857_000), "processes": 3}
    assert measures.blocks_per_process(pooled) == [100, 1, 1]
    assert measures.calls_per_block(pooled) is None  # not one count for the whole timing
