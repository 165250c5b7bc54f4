"""The machine alone while a snippet times: snippets run side by side (`regenerate --jobs N`), and a timed
section pauses the others for as long as it times.

Two halves, one file, so the protocol is written once:

- **In a snippet's process** (scripts/runner.py, when the recorder set `ENV`): `Lock.hold()` around every call
  of a `torch.utils.benchmark.Timer` that measures, and around Inductor's benchmarks of its kernel choices
  (`hold(drain=False)`: a process is never stopped halfway through one). It takes an exclusive `flock` in
  the recorder's folder, names itself in `holder`, and waits until the recorder says every other snippet
  process is stopped (`paused`). A timed call then drains: its own queued GPU work (`torch.cuda.synchronize`)
  and, where the recorder stopped someone and NVML answers, until the GPU reads idle (the stopped processes'
  kernels already queued still run). It lets go a moment after its last timed call (`LINGER_S`), so a
  snippet's rounds of A, B, A, B ... pause the others once, not once a block.
- **In the recorder** (`together`, which scripts/regenerate.py enters with `--jobs`): `Pauser` watches
  `holder` and stops every other snippet's process group (SIGSTOP: its Python, its compile workers, its GPU
  launches) while one holds the lock, answers the holder with how many it stopped, then continues them
  (SIGCONT). It never leaves one stopped: a holder that exits lets go with it, and `close()` continues
  everything.

What it cannot cover it does not claim: a time taken with `time.perf_counter` around a compile is not a Timer
call, so a snippet that times that way runs alone (scripts/budget.py `runs_alone`). What the lock did in a
process (`Lock.stats`: how often it held it, how long it waited, drained, and whether the recorder answered)
goes into its manifest through the runner (scripts/runner.py TimedCalls). Standard library only: the GPU
box installs nothing.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import fcntl
import os
import shutil
import signal
import tempfile
import threading
import time
from pathlib import Path

ENV = "MLC_ALONE"  # the folder of the recorder's lock, set in each snippet process's environment
LINGER_S = 0.3  # a holder keeps the lock this long after its last timed call
ANSWER_S = 10.0  # how long a holder waits for the recorder to say the others are stopped
DRAIN_S = 1.0  # the most a holder waits for the GPU to read idle (NVML samples every 1/6 s to 1 s)
POLL_S = 0.002


def _write(path: Path, text: str) -> None:
    temporary = path.with_name(f".{path.name}.{os.getpid()}")
    temporary.write_text(text)
    os.replace(temporary, path)  # a reader never sees half a line


def _read_answer(path: Path) -> tuple[int | None, int]:
    """The recorder's answer: the holder it paused the others for, and how many it stopped."""
    try:
        pid, stopped = path.read_text().split()[:2]
        return int(pid), int(stopped)
    except (OSError, ValueError):
        return None, 0


def _read_pid(path: Path) -> int | None:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


# ------------------------------------------------------------------------------- in a snippet's process


class Lock:
    """The lock a timed section takes (re-entrant, kept `LINGER_S` after its last release)."""

    def __init__(self, folder: Path, drain=None):
        self.folder = Path(folder)
        # drain(others stopped) waits until the device is idle and returns the seconds it waited
        self.drain = drain or (lambda others: 0.0)
        self.depth = 0
        self.fd: int | None = None
        self.later: threading.Timer | None = None
        self.guard = threading.Lock()
        self.others, self.drained = 0, False  # how many the recorder stopped for this taking; drained since
        self.stats = {"held": 0, "waited_s": 0.0, "drained_s": 0.0, "unanswered": 0}

    @contextlib.contextmanager
    def hold(self, drain: bool = True):
        """The machine alone for the block. `drain=False` (a compiler's benchmark of its kernel choices, which
        warms up and synchronises by itself) skips waiting for the stopped processes' queued GPU work."""
        self.acquire(drain)
        try:
            yield
        finally:
            self.release()

    def acquire(self, drain: bool = True) -> None:
        with self.guard:
            if self.later is not None:
                self.later.cancel()
                self.later = None
            self.depth += 1
            if self.fd is None:
                self._take()
            if drain and not self.drained:
                self.stats["drained_s"] += self.drain(self.others)
                self.drained = True

    def _take(self) -> None:
        started = time.monotonic()
        self.fd = os.open(self.folder / "lock", os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        with contextlib.suppress(FileNotFoundError):
            (self.folder / "paused").unlink()  # an answer to an earlier taking is no answer to this one
        _write(self.folder / "holder", f"{os.getpid()}\n")
        asked, answered, self.others, self.drained = time.monotonic(), False, 0, False
        while time.monotonic() - asked < ANSWER_S:
            said = _read_answer(self.folder / "paused")
            if said[0] == os.getpid():
                answered, self.others = True, said[1]
                break
            time.sleep(POLL_S)
        self.stats["held"] += 1
        self.stats["waited_s"] += time.monotonic() - started
        self.stats["unanswered"] += 0 if answered else 1

    def release(self) -> None:
        with self.guard:
            self.depth -= 1
            if self.depth == 0 and self.fd is not None:
                self.later = threading.Timer(LINGER_S, self._let_go)
                self.later.daemon = True
                self.later.start()

    def _let_go(self) -> None:
        with self.guard:
            if self.depth or self.fd is None:
                return
            self.later = None
            with contextlib.suppress(FileNotFoundError):
                if _read_pid(self.folder / "holder") == os.getpid():
                    (self.folder / "holder").unlink()
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None

    def close(self) -> None:
        """Let go now."""
        with self.guard:
            if self.later is not None:
                self.later.cancel()
            self.depth = 0
        self._let_go()


# ---------------------------------------------------------------------------------------- in the recorder


class Pauser(threading.Thread):
    """Stops every snippet process group but the holder's while a holder holds the lock."""

    def __init__(self, folder: Path, running):
        super().__init__(daemon=True, name="alone")
        self.folder = Path(folder)
        self.running = running  # () -> the pids of the snippet processes now running (each its group's leader)
        self.stopped: set[int] = set()
        self.done = threading.Event()
        self.pauses = 0

    def _signal(self, pid: int, which: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, which)

    def _continue_all(self) -> None:
        for pid in self.stopped:
            self._signal(pid, signal.SIGCONT)
        self.stopped.clear()

    def run(self) -> None:
        while not self.done.is_set():
            holder = _read_pid(self.folder / "holder")
            alive = set(self.running())
            if holder is not None and holder not in alive:
                holder = None  # it exited holding the lock; the kernel released its flock
            if holder is None:
                if self.stopped:
                    self._continue_all()
            else:
                for pid in alive - self.stopped - {holder}:
                    self._signal(pid, signal.SIGSTOP)
                    self.stopped.add(pid)
                for pid in list(self.stopped - alive):  # exited while stopped (killed for a timeout)
                    self.stopped.discard(pid)
                if holder in self.stopped:  # a stopped process cannot hold it; continue it at once
                    self._signal(holder, signal.SIGCONT)
                    self.stopped.discard(holder)
                if _read_answer(self.folder / "paused")[0] != holder:  # each taking of the lock gets its answer
                    self.pauses += 1
                    _write(self.folder / "paused", f"{holder} {len(self.stopped)}\n")
            time.sleep(POLL_S)
        self._continue_all()

    def close(self) -> None:
        self.done.set()
        self.join(timeout=5)
        self._continue_all()


@contextlib.contextmanager
def together(jobs: int, running, stop_all):
    """With jobs > 1, a pool for snippets that run side by side and the recorder's half of the lock: the folder
    its snippet processes lock in, named in their environment (ENV, inherited), and the Pauser that stops the
    others while one times. `running`: the pids of the snippet processes now running; `stop_all`: kills them
    when the run is stopped. None with one job."""
    if jobs < 2:
        yield None
        return
    folder = Path(tempfile.mkdtemp(prefix="regenerate-alone-"))
    pauser = Pauser(folder, running)
    os.environ[ENV] = str(folder)
    pauser.start()
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
            try:
                yield pool
            except BaseException:
                stop_all()  # the snippets still running in the pool's threads
                raise
    finally:
        pauser.close()
        os.environ.pop(ENV, None)
        shutil.rmtree(folder, ignore_errors=True)


# ------------------------------------------------------------------------------------------ the drain


def gpu_drain(nvml=None):
    """A drain for a process that may use CUDA: its own queue, then, where others were stopped, NVML's
    utilisation until it reads 0 (at most DRAIN_S: their kernels already queued run on); a process that never
    initialised CUDA has nothing queued and drains nothing."""
    def drain(others: int) -> float:
        import sys
        torch = sys.modules.get("torch")
        if torch is None or not torch.cuda.is_initialized():
            return 0.0
        started = time.monotonic()
        torch.cuda.synchronize()
        while nvml is not None and others and time.monotonic() - started < DRAIN_S:
            reading = nvml.read()
            if reading is None or reading.get("utilization") == 0:
                break
            time.sleep(0.01)
        return time.monotonic() - started
    return drain
