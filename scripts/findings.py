"""The site's findings in one table: every timed comparison a chapter makes (`md:compare`), side by side.

Nothing here is typed: a row is one distinct comparison (snippet, timing A, timing B) of the pages' CPU
`md:compare`s, in nav order, with the workload and the one-line reason that the page gives it as options of
that directive (`what=`, `why=`, and `size=KEY` for a size the record holds). Its numbers are the record's:
the verdict by the site's one rule, the median ratio of the per-process medians and its range over the
fresh processes, and whether every other torch release's record points the same way.

Each row also gets what a GPU measured (`gpu_of`): the same comparison in the newest CUDA record of its snippet
that holds both timings, judged by the same rule, with the GPU, the torch release and the size it was measured
at. A comparison a page makes on a GPU only (`md:compare ... device=cuda what=...`) is a row of its own, with no
CPU columns. Every timed comparison a CUDA record holds is a row: tests/test_findings.py fails on one left out.

Each row also gets a GPU model (`model_of`), from the record of snippets/gpu_code/findings_model.py: both sides'
kernels, counted from Inductor's CUDA code and eager's ATen ops, each at its roof on an H100, H200 and B200 from
datasheet figures. A row gets a model only where the model's workload is the one the row's record timed (the same
`work` label: function and input sizes).

Needs no mkdocs: the directives module renders it on a page (`md:findings`), with a chart drawn here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from scripts import measures, plots, records, releases


@dataclass
class Measured:
    """One comparison as a GPU measured it: a CUDA record's verdict by the site's rule, and its ratio's range."""
    words: str
    ratio: float
    low: float
    high: float
    processes: int
    hardware: str  # the GPU's name
    release: str  # the torch release that made the record
    size: str  # the size the record holds, formatted; "" where the page names none
    blocks: tuple[list, list] = ([], [])  # calls per timed block in each process, A and B (measures)
    work: str = ""  # what A timed: the function and its inputs' dtypes and shapes

    @property
    def method(self) -> str:
        """What a reader must know of how it was timed: on a GPU the timer synchronizes at both ends of each
        block, so a block of one call pays its launch and the Python before it unoverlapped, where a block of
        many does not. "" when neither side was timed one call per block in any process."""
        def said(counts: list) -> str:
            known = sorted({c for c in counts if c is not None})
            if known == [1]:
                return "one call per block"
            return "blocks of " + " or ".join(f"{c:,}" for c in known) + " calls" if known else "blocks of ?"
        a, b = self.blocks
        if 1 not in a and 1 not in b:
            return ""
        if said(a) == said(b):
            return f"both sides timed {said(a)}"
        return f"timed in {said(a)} against {said(b)}: not like for like"


@dataclass
class Finding:
    page: str  # the page that makes the comparison, relative to docs/
    title: str
    snippet: str
    key_a: str
    key_b: str
    what: str
    why: str
    size: str  # the size the CPU record holds, formatted; "" where the page names none
    words: str  # "1.3× faster", "about the same"; "" for a comparison measured on a GPU only
    ratio: float  # A/B: above 1, B is faster
    low: float
    high: float
    processes: int
    releases: list[tuple[str, str]]  # (release, words) for each release with a fresh, steady record made on the
    # shown record's machine (records.Record.machine), main first
    model: Modelled | None = None
    gpu: Measured | None = None

    @property
    def on_cpu(self) -> bool:
        """Whether a CPU record measured it (a row made on a GPU only has no CPU columns)."""
        return bool(self.words)

    @property
    def steady(self) -> bool:
        """More than one release recorded it, and every one's record points the same way (faster, slower, or
        about the same)."""
        return len(self.releases) > 1 and len({measures.direction(words) for _, words in self.releases}) == 1


MODEL = "gpu_code/findings_model.py"
# The costs the roofs leave out, measured on a GPU box: a chain of 100 tiny element-wise ops timed eager (one
# dispatch and launch per op from the host), replayed as a CUDA graph (the GPU's own time per kernel, with no
# host in the way), and compiled into one kernel (one compiled call: guards, wrapper, one launch). Each is a
# lower bound on what a call of that kind costs there, so a row called overhead-bound is one for certain; a
# row not called so may still be one (a further kernel of a compiled call costs its host launch, more than
# the graph's time per kernel counted here).
OVERHEADS = "dissecting/cuda_graphs.py"


@dataclass
class Overheads:
    """What a call costs before its bytes and FLOPs count, from the newest CUDA record of OVERHEADS."""
    hardware: str
    release: str
    eager_op_us: float  # one eager op from the host: the chain's eager time over its ops
    launch_us: float  # the GPU's time per kernel in a CUDA graph replay: the least a further kernel adds
    compiled_call_us: float  # one compiled call of one kernel

    def floor(self, kernels: int, compiled: bool) -> float:
        """A lower bound on what a side of `kernels` kernels takes on that box: eager pays the host's cost per
        op; a compiled call pays its own cost once and, for each further kernel, at least the GPU's time per
        kernel in a CUDA graph."""
        if compiled:
            return self.compiled_call_us + max(kernels - 1, 0) * self.launch_us
        return kernels * self.eager_op_us


def overheads(outputs: Path = records.OUTPUTS, snippets: Path = records.SNIPPETS) -> Overheads | None:
    """The overheads measured on the newest CUDA record of OVERHEADS (a fresh one first), or None."""
    made = releases.comparable(OVERHEADS, "cuda", outputs, snippets) or records.releases_of(
        OVERHEADS, "cuda", outputs, snippets)
    for record in made:
        try:
            ops = record.value("n_ops")
            return Overheads(record.hardware, record.release, record.value("timing.eager")["median_us"] / ops,
                             record.value("timing.cuda_graph")["median_us"] / ops,
                             record.value("timing.compiled")["median_us"])
        except KeyError:
            continue
    return None


def is_compiled(key: str, work: str) -> bool:
    """Whether a timed side is a compiled call (torch.compile's or jax.jit's), from its work label, or from its
    key's last part holding the word "compiled" or "jit" (inference_compiled), not negated (no_jit)."""
    words = key.split(".")[-1].split("_")
    named = bool({"compiled", "jit"} & set(words)) and words[0] not in ("no", "not", "un", "uncompiled")
    return work.startswith(("compiled ", "jax.jit ")) or named


@dataclass
class Modelled:
    """One row's GPU model: each side's kernels and its time at the roof, per GPU."""
    kernels: tuple[int, int]  # (A, B)
    nbytes: tuple[int, int]
    us: dict[str, tuple[float, float]]  # gpu key -> (A, B) microseconds at the roof
    names: dict[str, str]  # gpu key -> its name
    compiled: tuple[bool, bool] = (False, True)  # whether A, B are compiled calls
    overheads: Overheads | None = None

    def ratio(self, gpu: str) -> float:
        """A's time over B's: above 1, B is faster if every kernel runs at its roof."""
        a, b = self.us[gpu]
        return a / b if b else float("nan")

    def overhead_bound(self, gpu: str) -> bool:
        """Whether a side's time at the roof is under what its calls cost on the box that measured the
        overheads: there the roofs do not decide the time, and the model gives no ratio."""
        if self.overheads is None:
            return False
        return any(us < self.overheads.floor(kernels, compiled)
                   for us, kernels, compiled in zip(self.us[gpu], self.kernels, self.compiled))

    def cell(self, gpu: str) -> str:
        """The model's ratio on `gpu` as the table shows it, or "overhead-bound"."""
        return "overhead-bound" if self.overhead_bound(gpu) else f"{self.ratio(gpu):.2f}"


def model_of(finding: Finding, outputs: Path = records.OUTPUTS,
             snippets: Path = records.SNIPPETS, costs: Overheads | None = None) -> Modelled | None:
    """The row's model, or None where the model record is missing or models another workload than the row's;
    `costs`, the measured overheads (`overheads`), read once by the caller for every row."""
    record = records.record(MODEL, "cpu", outputs, snippets)
    if not record.exists:
        return None
    sides = record.results.get("timed", {}).get(finding.snippet, {})
    timed = records.record(finding.snippet, "cpu", outputs, snippets)
    found = []
    for key in (finding.key_a, finding.key_b):
        try:
            work = timed.value(key).get("work")
        except KeyError:
            return None
        if key not in sides or sides[key]["work"] != work:
            return None
        found.append(sides[key])
    a, b = found
    gpus = record.results["gpus"]
    return Modelled((len(a["kernels"]), len(b["kernels"])), (a["bytes"], b["bytes"]),
                    {g: (a[f"{g}_us"], b[f"{g}_us"]) for g in gpus}, {g: spec["name"] for g, spec in gpus.items()},
                    (is_compiled(finding.key_a, a["work"]), is_compiled(finding.key_b, b["work"])),
                    costs)


def shown_size(value) -> str:
    if isinstance(value, list) and all(isinstance(v, int) for v in value):
        return "×".join(f"{v:,}" for v in value)
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


def sized(record: records.Record, options: dict) -> str:
    """The size a page names (`size=KEY`) as this record holds it, formatted; "" where it names none. KeyError
    where the record lacks it."""
    if not options.get("size"):
        return ""
    name, value = options["size"].split(".")[-1], shown_size(record.value(options["size"]))
    return value if name.isdigit() else f"{name} = {value}"  # a list's index names nothing: "64", not "0 = 64"


def gpu_of(snippet: str, key_a: str, key_b: str, options: dict, outputs: Path = records.OUTPUTS,
           snippets: Path = records.SNIPPETS) -> Measured | None:
    """The comparison in the newest CUDA record of the snippet that holds both timings (a fresh one first),
    or None where no CUDA record holds them."""
    made = releases.comparable(snippet, "cuda", outputs, snippets) or records.releases_of(
        snippet, "cuda", outputs, snippets)
    for record in made:
        try:
            a, b = record.value(key_a), record.value(key_b)
        except KeyError:
            continue
        if not (records.is_timing(a) and records.is_timing(b)):
            continue
        ratio, low, high = measures.timing_band(a, b)
        try:
            size = sized(record, options)
        except KeyError:  # the page's size key names the CPU record's: a GPU record may keep it elsewhere
            size = ""
        return Measured(measures.judge(a, b, "cuda"), ratio, low, high, len(measures.ratios(a, b)), record.hardware,
                        record.release, size,
                        (measures.blocks_per_process(a), measures.blocks_per_process(b)), a.get("work", ""))
    return None


def described(compares, device: str) -> dict[tuple[str, str, str], tuple[str, str, dict]]:
    """(snippet, key A, key B) -> (page, title, options) of the comparisons pages make on `device`, in nav
    order; the first that says what it compares (`what=`) names it."""
    found: dict[tuple[str, str, str], tuple[str, str, dict]] = {}
    for src, title, d in compares:
        if d.options.get("device", "cuda") != device:
            continue
        key = tuple(d.args)
        if key not in found or ("what" in d.options and "what" not in found[key][2]):
            found[key] = (src, title, d.options)
    return found


def collect(compares, outputs: Path = records.OUTPUTS, snippets: Path = records.SNIPPETS) -> list[Finding]:
    """One Finding per distinct comparison, from (page, title, directive) triples in nav order: each CPU
    comparison, with what a GPU measured of it, then each one that pages make on a GPU only. A comparison no
    page describes (`what=`) is left out, and so is one that no record holds."""
    found = []
    on_cpu = described(compares, "cpu")
    costs = overheads(outputs, snippets)
    for (snippet, key_a, key_b), (src, title, options) in on_cpu.items():
        if "what" not in options:
            continue
        made = releases.comparable(snippet, "cpu", outputs, snippets) or records.releases_of(
            snippet, "cpu", outputs, snippets)[:1]
        if not made:
            continue
        shown = made[0]
        a, b = shown.value(key_a), shown.value(key_b)
        ratio, low, high = measures.timing_band(a, b)
        verdicts = []
        for record in made:
            if record.machine != shown.machine:  # another runner: what differs may be the machine, not torch
                continue
            try:
                x, y = record.value(key_a), record.value(key_b)
            except KeyError:
                continue
            if not (measures.unsteady(x) or measures.unsteady(y)):
                verdicts.append((record.release, measures.judge(x, y, "cpu")))
        finding = Finding(src, title, snippet, key_a, key_b, options["what"], options.get("why", ""),
                          sized(shown, options), measures.judge(a, b, "cpu"), ratio, low, high,
                          len(measures.ratios(a, b)), verdicts)
        finding.model = model_of(finding, outputs, snippets, costs)
        finding.gpu = gpu_of(snippet, key_a, key_b, options, outputs, snippets)
        found.append(finding)
    for (snippet, key_a, key_b), (src, title, options) in described(compares, "cuda").items():
        if (snippet, key_a, key_b) in on_cpu or "what" not in options:
            continue
        gpu = gpu_of(snippet, key_a, key_b, options, outputs, snippets)
        if gpu is not None:
            found.append(Finding(src, title, snippet, key_a, key_b, options["what"], options.get("why", ""), "",
                                 "", float("nan"), float("nan"), float("nan"), 0, [], gpu=gpu))
    return found


def chart(found: list[Finding], colors: dict, style: dict, narrow: bool = False) -> str:
    """The SVG of each comparison's ratio on a log axis: the CPU's as a dot, its range over the fresh processes
    as a whisker; a GPU's measurement of the same row as a diamond with its own whisker; the band the site
    calls "about the same" shaded. `narrow`: drawn for a phone's column (plots.NARROW_PT), each label on two
    lines and the axis label shorter, so its text stays readable."""
    import textwrap

    from matplotlib.lines import Line2D
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter, NullLocator

    plt = plots.pyplot()
    rows = list(reversed(found))  # the first finding on top
    gpu_color = colors["series"][2]
    with plt.rc_context(style):
        # On a phone each label sits on its own line(s) above its row, wrapped to the column.
        labels = [textwrap.fill(row.what, 50 if narrow else 48) for row in rows]
        lines = max(label.count("\n") + 1 for label in labels)
        high_row = 0.56 + 0.16 * (lines - 1) if narrow else 0.46
        fig, ax = plt.subplots(figsize=(plots.NARROW_PT / 72 if narrow else 6.4, high_row * len(rows) + 1.5))
        ax.axvspan(1 / measures.SAME_WITHIN, measures.SAME_WITHIN, color=colors["grid"], alpha=0.8, linewidth=0)
        ax.axvline(1, color=colors["fg"], linewidth=1)
        for y, row in enumerate(rows):
            if row.on_cpu:
                color = colors["series"][0] if row.ratio >= 1 else colors["series"][1]
                ax.plot([row.low, row.high], [y + 0.12, y + 0.12], color=color, linewidth=2, solid_capstyle="butt")
                ax.plot([row.ratio], [y + 0.12], marker="o", markersize=6, color=color)
            if row.gpu is not None:
                g = row.gpu
                ax.plot([g.low, g.high], [y - 0.12, y - 0.12], color=gpu_color, linewidth=1.5, solid_capstyle="butt")
                ax.plot([g.ratio], [y - 0.12], marker="D", markersize=5, color=gpu_color,
                        markerfacecolor="none" if g.method else gpu_color)  # hollow: one call per block
        ax.set_xscale("log")
        ends = [v for r in rows for v in ((r.low, r.high) if r.on_cpu else ()) + ((r.gpu.low, r.gpu.high) if r.gpu
                                                                                  else ())]
        low = min(min(ends), 1 / 1.5)
        high = max(max(ends), 1.5)
        ax.set_xlim(low / 1.2, high * 1.2)
        if narrow:  # each label above its row, across the whole width: the plot keeps the phone's column
            ax.set_yticks([])
            for y, label in enumerate(labels):
                ax.text(low / 1.2, y + 0.3, label, fontsize="small", va="bottom", ha="left",
                        color=colors["fg"], clip_on=False)
            ax.set_ylim(-0.6, len(rows) - 0.1)
        else:
            ax.set_yticks(range(len(rows)), labels)
        ticks = [t for t in (0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50) if low / 1.2 <= t <= high * 1.2]
        ax.xaxis.set_major_locator(FixedLocator(ticks))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}×"))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("how much faster the second runs\n(log scale)" if narrow
                      else "how much faster the second runs than the first (log scale)")
        ax.grid(axis="x")
        ax.tick_params(axis="y", length=0)
        gpus = sorted({r.gpu.hardware for r in rows if r.gpu})
        handles = [Line2D([], [], marker="o", color=colors["series"][0], linestyle="", label="CPU")]
        if gpus:
            handles.append(Line2D([], [], marker="D", color=gpu_color, linestyle="",
                                  label=f"GPU ({', '.join(gpus)})"))
        if any(r.gpu and r.gpu.method for r in rows):
            handles.append(Line2D([], [], marker="D", color=gpu_color, markerfacecolor="none", linestyle="",
                                  label="GPU, timed one call per block"))
        ax.legend(handles=handles, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=1 if narrow else len(handles),
                  frameon=False)
        return plots.svg(fig, narrow)


def describe(found: list[Finding]) -> str:
    """The chart's alt text."""
    cpu = [f for f in found if f.on_cpu]
    gpu = [f.gpu for f in found if f.gpu is not None]

    def counts(words: list[str]) -> str:
        faster = sum(measures.direction(w) > 0 for w in words)
        slower = sum(measures.direction(w) < 0 for w in words)
        return f"{faster} faster, {slower} slower, {len(words) - faster - slower} about the same"
    return (f"{len(found)} comparisons on a log scale. On the CPU (dots), {len(cpu)}: {counts([f.words for f in cpu])}"
            + (f". On a GPU (diamonds), {len(gpu)}: {counts([g.words for g in gpu])}" if gpu else "")
            + ". The shaded band is about the same.")
