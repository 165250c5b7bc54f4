"""The site's measurement statistics: how a timing taken in several fresh processes is pooled, how two
timings are compared, and the words that judge them. scripts/records.py stores records; this module reads
their timings (records.timings_in) and judges them.

The site's measurement method (docs/reproduce.md states it for readers): a snippet times the things it
compares in interleaved rounds (A, B, A, B, ...) on a stated number of threads, and the recorder runs a
timed snippet in records.PROCESSES fresh processes. Each timing then holds every process's median, so the spread
that judges a comparison is the spread between processes, which on a shared machine is far wider than
the spread within one.
"""

from __future__ import annotations

import statistics

from scripts.records import is_timing, timings_in

# The floor of "about the same", by device class: a median ratio closer to 1 than this is never called faster or
# slower. Both are margins the site sets, not measurements. On the CPU runners two regenerations of the same
# records moved single comparisons by up to about 1.2x (the transformer block's inference went from 1.01 to 1.2
# on 2026-11-25), so a narrower floor would let a verdict change with the weather; scripts/reproducibility.py
# measures that drift and holds it to the CPU floor. A GPU's floor is lower, so that a difference every fresh
# process of a GPU record agrees on (a hand-written kernel slower by a seventh) is reported; its records'
# processes do not always agree closely (some H200 timings spread 1.5x or more), and such a record's own
# spread widens its band (`band`).
FLOORS = {"cpu": 1.25, "cuda": 1.05}
SAME_WITHIN = FLOORS["cpu"]  # the CPU floor: the band the CPU charts shade
# Fresh processes on this machine agree within about 2x (docs/reproduce.md, "How timings are taken": one
# process can take twice as long as the next). A timing whose process medians spread
# five times wider than that was taken while something else ran: it is not compared with other releases.
UNSTEADY = 10.0



def _quantiles(values: list[float]) -> tuple[float, float, float]:
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0], ordered[0], ordered[0]
    q1, median, q3 = statistics.quantiles(ordered, n=4, method="inclusive")
    return q1, median, q3


def pool(runs: list[dict]) -> dict:
    """One timing from the same timing taken in several processes: the median and quartiles of all their
    timed blocks, and each process's own median (`process_medians_us`), in process order."""
    first = runs[0]
    times = [t for run in runs for t in run.get("times_us", [run["median_us"]])]
    q1, median, q3 = _quantiles(times)
    return {**first, "median_us": median, "q1_us": q1, "q3_us": q3, "iqr_us": q3 - q1, "n": len(times),
            "times_us": times, "processes": len(runs), "process_medians_us": [run["median_us"] for run in runs]}


def merge_runs(results: list):
    """One record from a snippet's several processes: every timing pooled over all of them; every other
    number that the processes measured differently (a bandwidth, a share, a bound from measured roofs, a
    count of page faults) their median, an integer staying one of the values seen, with each process's
    value kept under "process_values" by its dotted key; text, flags and numbers that agree are the first
    process's, as are its printout and files. A later process that lacks one of the first's timings raises
    KeyError or IndexError."""
    spread: dict[str, list] = {}
    merged = _merge(results, "", spread)
    if spread and isinstance(merged, dict):
        merged["process_values"] = spread
    return merged


def _merge(results: list, key: str, spread: dict):
    first = results[0]
    if is_timing(first):
        return pool(results)
    if isinstance(first, dict):
        merged = {}
        for name, value in first.items():
            where = f"{key}.{name}" if key else str(name)
            if any(timings_in(value)):
                merged[name] = _merge([run[name] for run in results], where, spread)
            else:
                present = [run[name] for run in results if isinstance(run, dict) and name in run]
                merged[name] = _merge(present, where, spread) if len(present) == len(results) else value
        return merged
    if isinstance(first, list):
        if any(timings_in(first)) or all(isinstance(run, list) and len(run) == len(first) for run in results):
            return [_merge([run[i] for run in results], f"{key}.{i}", spread) for i in range(len(first))]
        return first
    numbers = [run for run in results if isinstance(run, (int, float)) and not isinstance(run, bool)]
    if isinstance(first, bool) or len(numbers) != len(results) or all(n == first for n in numbers):
        return first
    spread[key] = numbers
    if all(isinstance(n, int) for n in numbers):
        return statistics.median_low(numbers)
    return statistics.median(numbers)


def ratios(a: dict, b: dict) -> list[float]:
    """a/b in each process that timed both; from the quartiles of one process if there is only one."""
    pa, pb = a.get("process_medians_us"), b.get("process_medians_us")
    if pa and pb and len(pa) == len(pb):
        return [x / y for x, y in zip(pa, pb)]
    return []


def quartiles(t: dict) -> tuple[float, float]:
    """(first, third) quartile of a timing in µs; from its median and IQR where the quartiles are absent."""
    half = t.get("iqr_us", 0) / 2
    return t.get("q1_us", t["median_us"] - half), t.get("q3_us", t["median_us"] + half)


def timing_band(a: dict, b: dict) -> tuple[float, float, float]:
    """(ratio a/b, lowest and highest ratio the spread allows). With timings from several processes: the
    median, least and greatest of the per-process ratios. With one process's timings: the ratio of the
    medians, and the extremes its interquartile ranges allow."""
    per_process = ratios(a, b)
    if per_process:
        return statistics.median(per_process), min(per_process), max(per_process)
    (a1, a3), (b1, b3) = quartiles(a), quartiles(b)
    return a["median_us"] / b["median_us"], a1 / b3, a3 / b1


def band(a: dict, b: dict, device: str) -> float:
    """How far from 1 the median ratio a/b must lie to be called faster or slower: the device's floor
    (FLOORS), widened to half the record's own spread of per-process ratios (the square root of the greatest
    over the least, so a median in the middle of a wide spread stays "about the same")."""
    ratio, lo, hi = timing_band(a, b)
    return max(FLOORS[device], (hi / lo) ** 0.5 if lo > 0 else float("inf"))


def judge(a: dict, b: dict, device: str) -> str:
    """How b compares with a on `device` ("cpu" or "cuda"), in words bound to the numbers, by the site's one
    rule: when the per-process ratios a/b (timing_band) include 1, or their median lies inside `band` (the
    device's floor, or half the ratios' own spread where that is wider), they are "about the same"; otherwise
    b is "N× faster" (or slower) than a, with N the median ratio."""
    ratio, lo, hi = timing_band(a, b)
    within = band(a, b, device)
    if lo <= 1 <= hi or 1 / within < ratio < within:
        return "about the same"
    factor = ratio if ratio > 1 else 1 / ratio
    return f"{factor:.{1 if factor < 10 else 0}f}× " + ("faster" if ratio > 1 else "slower")


def calls_per_block(t: dict) -> int | None:
    """How many calls each timed block of a timing held, when every process used the same count (None when
    they differ or the times do not say; blocks_per_process tells them apart)."""
    counts = set(blocks_per_process(t))
    return counts.pop() if len(counts) == 1 else None


BLOCK_COUNTS = sorted({10**e for e in range(8)} | {2**e for e in range(24)})  # up to 10**7


def blocks_per_process(t: dict) -> list[int | None]:
    """Each fresh process's calls per timed block, read back from its times: torch.utils.benchmark stores a
    block's clock reading (whole nanoseconds) divided by its calls, so a time × calls × 1000 is a whole number
    for the true count and, across a process's blocks, almost never for a smaller one. The counts tried are
    torch's (powers of ten: Timer.blocked_autorange) and the JAX snippets' (powers of two: their warm-up
    doubles the calls). A process whose times fit no such count up to 10**7, or has fewer than five blocks,
    gives None. The pooled times keep process order."""
    times = t.get("times_us") or []
    processes = max(int(t.get("processes") or 1), 1)
    per = len(times) // processes if times else 0
    found: list[int | None] = []
    for start in range(0, per * processes, per or 1):
        block = times[start:start + per]
        count = None
        if len(block) >= 5:
            for calls in BLOCK_COUNTS:
                # A difference of two clock readings in float seconds is whole nanoseconds within a few hundredths.
                if all(abs(x * calls * 1000 - round(x * calls * 1000)) < 0.05 for x in block):
                    count = calls
                    break
        found.append(count)
    return found


def process_spread(t: dict) -> float:
    """Greatest over least process median of a timing: 1 for one taken in a single process."""
    medians = t.get("process_medians_us") or []
    return max(medians) / min(medians) if len(medians) > 1 else 1.0


def unsteady(t: dict) -> tuple[float, float] | None:
    """(least, greatest) process median of a timing whose processes spread more than UNSTEADY times; None for
    a steady one, or one taken in a single process."""
    medians = t.get("process_medians_us") or []
    if process_spread(t) > UNSTEADY:
        return min(medians), max(medians)
    return None


def unsteady_timings(results: dict) -> dict[str, list[float]]:
    """{dotted key: [least, greatest] process median} of every timing in a record's results whose processes
    disagree beyond UNSTEADY (`unsteady`): the record was made while something else ran. The recorder writes
    it into the manifest ("unsteady"), warns, and lists it; a page shows it under the output."""
    return {key: [round(low, 3), round(high, 3)] for key, t in timings_in(results)
            if (spread := unsteady(t)) for low, high in [spread]}


def unsteady_of(record) -> dict[str, list[float]]:
    """A record's unsteady timings (`unsteady_timings`), as its manifest marks them or, for a record made
    before the recorder marked them, as its results show; {} for a steady record or one that cannot be read."""
    if record.state in ("missing", "corrupt"):
        return {}
    try:
        return record.manifest.get("unsteady") or unsteady_timings(record.results)
    except (OSError, ValueError, AttributeError):
        return {}


def direction(words: str) -> int:
    """1 for "faster", -1 for "slower", 0 for "about the same"."""
    return 1 if words.endswith("faster") else -1 if words.endswith("slower") else 0


def verdict(a: dict, b: dict, device: str) -> tuple[str, float, str]:
    """(the judging words on `device`, the ratio a/b, a table cell: the words, the ratio and the range of ratios)."""
    ratio, lo, hi = timing_band(a, b)
    words = judge(a, b, device)
    return words, ratio, f"{words} ({ratio:.2f}; {lo:.2f}–{hi:.2f})"
