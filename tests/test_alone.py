"""scripts/alone.py: a timed call has the machine alone while snippets run side by side (the recorder's
`--jobs`), tried with real processes: one that counts as fast as it can, one that holds the lock."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from scripts import alone, nvml, records

pytestmark = pytest.mark.kept  # slow; reads only the checkout: kept while it is unchanged (tests/conftest.py)

ROOT = records.ROOT
HANG_S = 600  # only a hang reaches it

# Counts into a file as fast as it can: while it is stopped, the count stands still.
COUNTER = """
import os, sys, time
path, n = sys.argv[1], 0
while True:
    n += 1
    with open(path + ".tmp", "w") as f:
        f.write(str(n))
    os.replace(path + ".tmp", path)
    time.sleep(0.002)
"""

# Holds the lock for HOLD seconds, reading the counter as it takes the lock and as it lets go; with "die" it
# exits while holding.
HOLDER = """
import json, os, sys, time
sys.path.insert(0, {root!r})
from scripts import alone
folder, counter, mode = sys.argv[1], sys.argv[2], sys.argv[3]
lock = alone.Lock(folder)
read = lambda: int(open(counter).read())
if mode == "twice":  # taken, let go (the others go on), taken again: the second taking is answered afresh
    with lock.hold():
        pass
    time.sleep(1.0)
with lock.hold():
    first = read()
    time.sleep(0.5)
    last = read()
    if mode == "die":
        os._exit(0)
lock.close()
print(json.dumps({{"first": first, "last": last, "stats": lock.stats}}))
"""


def start(code: str, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", code, *args], stdout=subprocess.PIPE, text=True,
                            start_new_session=True, cwd=ROOT)


def count(path: Path) -> int:
    for _ in range(500):
        try:
            return int(path.read_text())
        except (FileNotFoundError, ValueError):
            time.sleep(0.01)
    raise AssertionError(f"{path} never counted")


def grows(path: Path) -> bool:
    before = count(path)
    for _ in range(500):
        time.sleep(0.01)
        if count(path) > before:
            return True
    return False


@pytest.fixture
def side_by_side(tmp_path):
    """A counting process and the recorder's Pauser watching it and whoever holds the lock."""
    processes: list[subprocess.Popen] = []
    counter = tmp_path / "count"
    processes.append(start(COUNTER, str(counter)))
    pauser = alone.Pauser(tmp_path, lambda: [p.pid for p in processes if p.poll() is None])
    pauser.start()
    assert grows(counter)
    yield tmp_path, counter, processes, pauser
    pauser.close()
    for process in processes:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def hold(side_by_side, mode: str) -> dict:
    """Run a holder beside the counter; what it saw of the counter and of its lock."""
    folder, counter, processes, _ = side_by_side
    holder = start(HOLDER.format(root=str(ROOT)), str(folder), str(counter), mode)
    processes.append(holder)
    out, _ = holder.communicate(timeout=HANG_S)
    return json.loads(out.splitlines()[-1])


def test_while_one_process_times_the_others_are_stopped_and_go_on_after(side_by_side):
    _, counter, _, pauser = side_by_side
    said = hold(side_by_side, "live")
    assert said["first"] == said["last"], "the counter went on while the lock was held"
    assert said["stats"]["held"] == 1 and said["stats"]["unanswered"] == 0
    assert pauser.pauses == 1
    assert grows(counter), "the counter stayed stopped after the holder let go"


def test_a_second_taking_of_the_lock_waits_for_its_own_answer(side_by_side):
    said = hold(side_by_side, "twice")
    pauser = side_by_side[3]
    assert said["first"] == said["last"] and said["stats"]["held"] == 2 and said["stats"]["unanswered"] == 0
    assert pauser.pauses == 2


def test_a_holder_that_dies_holding_the_lock_leaves_no_one_stopped(side_by_side):
    folder, counter, processes, _ = side_by_side
    holder = start(HOLDER.format(root=str(ROOT)), str(folder), str(counter), "die")
    processes.append(holder)
    holder.wait(timeout=HANG_S)
    assert grows(counter)


def test_closing_the_pauser_continues_whatever_it_stopped(tmp_path):
    counter = tmp_path / "count"
    process = start(COUNTER, str(counter))
    try:
        pauser = alone.Pauser(tmp_path, lambda: [process.pid])
        pauser.start()
        assert grows(counter)
        (tmp_path / "holder").write_text(f"{os.getpid()}\n")  # this process holds it; the counter is stopped
        pauser.running = lambda: [process.pid, os.getpid()]
        deadline = time.monotonic() + HANG_S
        while process.pid not in pauser.stopped and time.monotonic() < deadline:
            time.sleep(0.01)
        pauser.close()
        assert grows(counter)
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


# A snippet that times with a benchmark Timer, as the site's snippets do.
TIMER_SNIPPET = """
from torch.utils import benchmark
timer = benchmark.Timer("x + 1", globals={"x": 1}, label="one add")
m = timer.blocked_autorange(min_run_time=0.05)
results = {"device": "cpu", "t": timer.timeit(100)}
"""


def test_the_runner_takes_the_lock_around_each_timer_call_and_says_so(tmp_path):
    snippet = tmp_path / "timer.py"
    snippet.write_text(TIMER_SNIPPET)
    lock = tmp_path / "lock"
    lock.mkdir()
    run = tmp_path / "run"
    run.mkdir()
    process = subprocess.Popen([sys.executable, str(ROOT / "scripts" / "runner.py"), str(snippet), str(run)],
                               cwd=ROOT, start_new_session=True,
                               env=dict(os.environ, **{alone.ENV: str(lock)}, CUDA_VISIBLE_DEVICES=""))
    pauser = alone.Pauser(lock, lambda: [process.pid] if process.poll() is None else [])
    pauser.start()
    try:
        assert process.wait(timeout=HANG_S) == 0
    finally:
        pauser.close()
    said = json.loads((run / "timed.json").read_text())
    # Two measuring calls close together: one hold (it lingers between them), answered, nothing stopped.
    assert said["alone"]["held"] == 1 and said["alone"]["unanswered"] == 0
    assert "clocks" not in said  # no GPU here
    assert json.loads((run / "files" / "results.json").read_text())["t"]["work"] == "one add"


def test_without_the_recorder_s_lock_or_a_gpu_the_runner_changes_nothing(tmp_path):
    snippet = tmp_path / "timer.py"
    snippet.write_text(TIMER_SNIPPET)
    env = {k: v for k, v in os.environ.items() if k != alone.ENV}
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "runner.py"), str(snippet), str(tmp_path)],
                          cwd=ROOT, env=dict(env, CUDA_VISIBLE_DEVICES=""), timeout=HANG_S)
    assert done.returncode == 0 and not (tmp_path / "timed.json").exists()


def test_nvml_is_none_where_the_driver_library_is_absent():
    assert nvml.Reader.open("libnvidia-ml-that-does-not-exist.so") is None


def test_the_recorder_runs_timed_snippets_side_by_side_and_each_manifest_says_how(tmp_path):
    (tmp_path / "snippets" / "demo").mkdir(parents=True)
    for name in ("one", "two"):
        (tmp_path / "snippets" / "demo" / f"{name}.py").write_text(TIMER_SNIPPET)
    done = subprocess.run(
        [sys.executable, "-m", "scripts.regenerate", "--device", "cpu", "--jobs", "2", "--processes", "2",
         "--snippets-dir", str(tmp_path / "snippets"), "--outputs-dir", str(tmp_path / "outputs"),
         "--failed-dir", str(tmp_path / "failed")], cwd=ROOT, capture_output=True, text=True, timeout=HANG_S)
    assert done.returncode == 0, done.stderr
    assert "--jobs 2: 2 snippet(s) run up to 2 at a time" in done.stdout
    for name in ("one", "two"):
        made = json.loads((tmp_path / "outputs" / "cpu" / "demo" / name / "manifest.json").read_text())
        assert made["side_by_side"] == 2
        lock = made["timed_sections"]["alone"]
        assert lock["held"] >= 2 and lock["unanswered"] == 0  # both processes took it, and were answered
        assert "timed.json" not in made["files"] and not (tmp_path / "outputs" / "cpu" / "demo" / name /
                                                           "timed.json").exists()


def test_a_page_s_provenance_says_a_record_ran_side_by_side_and_a_clock_that_moved(tmp_path):
    folder = tmp_path / "outputs" / "cuda" / "demo" / "one"
    (folder / "files").mkdir(parents=True)
    (tmp_path / "snippets" / "demo").mkdir(parents=True)
    (tmp_path / "snippets" / "demo" / "one.py").write_text("")
    timing = {"work": "f", "threads": 1, "median_us": 1.0, "times_us": [1.0], "n": 1, "processes": 5}
    (folder / "files" / "results.json").write_text(json.dumps({"device": "cuda", "t": timing}))
    (folder / "manifest.json").write_text(json.dumps({
        "snippet": "snippets/demo/one.py", "sha256": "", "command": "", "exit_status": 0, "duration_s": 1.0,
        "device": "cuda", "environment": {"torch": "2.15.0"}, "date": "2026-11-28", "side_by_side": 4,
        "timed_sections": {"alone": {"held": 3}}, "clock_moved": ["f"]}))
    line = records.Record("demo/one.py", "cuda", folder, tmp_path / "snippets").provenance()
    assert "in 5 fresh processes, beside up to 3 other snippets paused while it timed" in line
    assert "the GPU's SM clock moved while timing f" in line


class FakeNvml:
    """The driver library's calls as NVML answers them: each value through its pointer, 0 for success."""

    def __init__(self, **values):
        self.values = values

    def _give(self, name, pointer):
        if name not in self.values:
            return 3  # NVML_ERROR_NOT_SUPPORTED
        pointer._obj.value = self.values[name]
        return 0

    def nvmlDeviceGetClockInfo(self, handle, kind, pointer):
        return self._give("sm_mhz", pointer)

    def nvmlDeviceGetPowerUsage(self, handle, pointer):
        return self._give("power_mw", pointer)

    def nvmlDeviceGetTemperature(self, handle, sensor, pointer):
        return self._give("temp_c", pointer)

    def nvmlDeviceGetUtilizationRates(self, handle, pointer):
        pointer._obj.gpu = self.values.get("utilization", 0)
        return 0

    def nvmlDeviceGetCurrentClocksThrottleReasons(self, handle, pointer):
        return self._give("throttle", pointer)


def test_a_gpu_reading_in_the_site_s_units_and_none_for_what_the_driver_does_not_give():
    reading = nvml.Reader(FakeNvml(sm_mhz=1980, power_mw=412500, utilization=97, throttle=0), None).read()
    assert reading == {"sm_mhz": 1980, "power_w": 412.5, "temp_c": None, "utilization": 97, "throttle": 0}


@pytest.mark.parametrize("argv, says", [
    (["--snippet", "graph_mode/compile_time.py"], "times what the lock cannot see"),
    (["--snippet", "dissecting/dynamic_shapes.py", "--jobs", "1"], "--jobs must be 2 or more"),
    (["--snippet", "nowhere/none.py"], "no snippet nowhere/none.py"),
])
def test_the_side_by_side_check_refuses_what_it_cannot_check(argv, says):
    done = subprocess.run([sys.executable, "-m", "scripts.side_by_side", "--device", "cpu", *argv], cwd=ROOT,
                          capture_output=True, text=True, timeout=HANG_S)
    assert done.returncode == 2 and says in done.stderr


class ClockThatDrops:
    """A GPU whose SM clock drops from its third reading on."""

    def __init__(self):
        self.reads = 0

    def read(self) -> dict:
        self.reads += 1
        return {"sm_mhz": 1980 if self.reads < 3 else 1500, "power_w": 400.0 + self.reads, "temp_c": 50,
                "utilization": 90, "throttle": None}


def test_the_gpu_s_readings_around_each_timed_call_and_a_clock_that_moved(tmp_path):
    from torch.utils import benchmark

    from scripts import manifest, runner

    class Timer(benchmark.Timer):  # patched alone, as the runner patches the snippet's Timer
        pass

    timed = runner.TimedCalls(None, ClockThatDrops())
    timed.patch(Timer)
    Timer("x + 1", globals={"x": 1}, label="steady").timeit(10)
    Timer("x + 2", globals={"x": 1}, label="dropped").blocked_autorange(min_run_time=0.01)
    timed.finish(tmp_path)
    said = json.loads((tmp_path / runner.TIMED).read_text())
    assert said["clocks"]["steady"]["sm_mhz"] == [1980, 1980] and said["clocks"]["steady"]["power_w"] == [401, 402]
    assert said["clocks"]["dropped"]["sm_mhz"] == [1500, 1500]  # one call, read before and after: both dropped
    assert "throttle" not in said["clocks"]["steady"] and "alone" not in said  # None is not kept; no lock
    both = manifest.merge_timed([said, {"clocks": {"steady": {"sm_mhz": [1700, 1700]}}}])
    assert manifest.clock_moved(both) == ["steady"] and manifest.clock_moved(said) == []


def test_inductor_s_own_benchmarks_take_the_lock_without_draining(tmp_path):
    import torch._inductor.runtime.benchmarking as benchmarking

    from scripts import runner

    saved = {(cls, name): vars(cls)[name] for cls in vars(benchmarking).values()
             if isinstance(cls, type) and cls.__module__ == benchmarking.__name__
             for name in runner.BENCHMARKING if name in vars(cls)}
    pauser = alone.Pauser(tmp_path, lambda: [os.getpid()])
    pauser.start()
    drains = []
    try:
        timed = runner.TimedCalls(str(tmp_path), None)
        timed.lock.drain = lambda others: drains.append(others) or 0.0
        timed.patch_benchmarking(benchmarking)
        benchmarking.benchmarker.benchmark_cpu(lambda: sum(range(100)))
        benchmarked = list(drains)
        with timed.lock.hold():  # a timed call while the lock still lingers: it drains first
            pass
        timed.lock.close()
    finally:
        pauser.close()
        for (cls, name), method in saved.items():
            setattr(cls, name, method)
    assert timed.lock.stats["held"] == 1 and timed.lock.stats["unanswered"] == 0
    assert benchmarked == [] and drains == [0]  # a compiler's benchmark warms up and synchronises by itself
