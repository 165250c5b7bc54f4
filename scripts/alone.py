"""The machine alone while a snippet times: snippets run side by side (`regenerate --jobs N`), and a timed
section pauses the others for as long as it times.

Two halves, one file, so the protocol is written once:

- **In a snippet's process** (scripts/runner.py, when the recorder set `ENV`): `Lock.hold()` around every call
  of a `torch.utils.benchmark.Timer` that measures. It takes an exclusive `flock` in the recorder's folder,
  names itself in `holder`, waits until the recorder says every other snippet process is stopped (`paused`),
  then drains: its own queued GPU work (`torch.cuda.synchronize`) and, where NVML answers, until the GPU reads
  idle (the stopped processes' kernels already queued still run). It lets go a moment after its last timed
  call (`LINGER_S`), so a snippet's rounds of A, B, A, B ... pause the others once, not once a block.
- **In the recorder** (scripts/regenerate.py): `Pauser` watches `holder` and stops every other snippet's
  process group (SIGSTOP: its Python, its compile workers, its GPU launches) while one holds the lock, then
  continues them (SIGCONT). It never leaves one stopped: a holder that exits lets go with it, and `close()`
  continues everything.

What it cannot cover it does not claim: a time taken with `time.perf_counter` around a compile is not a Timer
call, so a snippet that times that way runs alone (scripts/budget.py `runs_alone`). Each process writes what
the lock did (`STATS`: how often it held it, how long it waited, drained and whether the recorder answered),
which its manifest keeps. Standard library only: the GPU box installs nothing.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import fcntl
import json
import os
import shutil
import signal
import tempfile
import threading
import time
from pathlib import Path

ENV = "MLC_ALONE"  # the folder of the recorder's lock, set in each snippet process's environment
STATS = "alone.json"  # written by a snippet's process into its run folder; the manifest keeps it
LINGER_S = 0.3  # a holder keeps the lock this long after its last timed call
ANSWER_S = 10.0  # how long a holder waits for the recorder to say the others are stopped
DRAIN_S = 2.0  # the most a holder waits for the GPU to read idle
POLL_S = 0.002


def _write(path: Path, text: str) -> None:
    temporary = path.with_name(f".{path.name}.{os.getpid()}")
    temporary.write_text(text)
    os.replace(temporary, path)  # a reader never sees half a line


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
        self.drain = drain or (lambda: 0.0)  # waits until the device is idle; returns the seconds it waited
        self.depth = 0
        self.fd: int | None = None
        self.later: threading.Timer | None = None
        self.guard = threading.Lock()
        self.stats = {"held": 0, "waited_s": 0.0, "drained_s": 0.0, "unanswered": 0}

    @contextlib.contextmanager
    def hold(self):
        self.acquire()
        try:
            yield
        finally:
            self.release()

    def acquire(self) -> None:
        with self.guard:
            if self.later is not None:
                self.later.cancel()
                self.later = None
            self.depth += 1
            if self.fd is not None:
                return  # still held from a moment ago
            started = time.monotonic()
            self.fd = os.open(self.folder / "lock", os.O_RDWR | os.O_CREAT, 0o600)
            fcntl.flock(self.fd, fcntl.LOCK_EX)
            _write(self.folder / "holder", f"{os.getpid()}\n")
            asked, answered = time.monotonic(), False
            while time.monotonic() - asked < ANSWER_S:
                if _read_pid(self.folder / "paused") == os.getpid():
                    answered = True
                    break
                time.sleep(POLL_S)
            self.stats["held"] += 1
            self.stats["waited_s"] += time.monotonic() - started
            self.stats["unanswered"] += 0 if answered else 1
            self.stats["drained_s"] += self.drain()

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

    def close(self, run_folder: Path | None = None) -> None:
        """Let go now, and write what the lock did into the run's folder."""
        with self.guard:
            if self.later is not None:
                self.later.cancel()
            self.depth = 0
        self._let_go()
        if run_folder is not None:
            stats = {k: round(v, 3) if isinstance(v, float) else v for k, v in self.stats.items()}
            (Path(run_folder) / STATS).write_text(json.dumps(stats) + "\n")


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
        answered = None
        while not self.done.is_set():
            holder = _read_pid(self.folder / "holder")
            alive = set(self.running())
            if holder is not None and holder not in alive:
                holder = None  # it exited holding the lock; the kernel released its flock
            if holder is None:
                if self.stopped:
                    self._continue_all()
                answered = None
            else:
                for pid in alive - self.stopped - {holder}:
                    self._signal(pid, signal.SIGSTOP)
                    self.stopped.add(pid)
                for pid in list(self.stopped - alive):  # exited while stopped (killed for a timeout)
                    self.stopped.discard(pid)
                if holder in self.stopped:  # a stopped process cannot hold it; continue it at once
                    self._signal(holder, signal.SIGCONT)
                    self.stopped.discard(holder)
                if answered != holder:
                    self.pauses += 1
                    _write(self.folder / "paused", f"{holder}\n")
                    answered = holder
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
    """A drain for a process that may use CUDA: its own queue, then NVML's utilisation until it reads 0
    (at most DRAIN_S); a process that never initialised CUDA has nothing queued and drains nothing."""
    def drain() -> float:
        import sys
        torch = sys.modules.get("torch")
        if torch is None or not torch.cuda.is_initialized():
            return 0.0
        started = time.monotonic()
        torch.cuda.synchronize()
        while nvml is not None and time.monotonic() - started < DRAIN_S:
            reading = nvml.read()
            if reading is None or reading.get("utilization") == 0:
                break
            time.sleep(0.01)
        return time.monotonic() - started
    return drain
