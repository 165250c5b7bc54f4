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
    work_b: str = ""  # what B timed
    stale: bool = False  # the record was made by an earlier version of its snippet
    recompiled: str = ""  # why B is not the program the page compares (RECOMPILED), or ""
    predicted: Predicted | None = None  # the model of this workload, at this size, on this GPU (`predicted_of`)

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


GPU_MODEL = "gpu_code/memory_model.py"
# A GPU's name, as a record gives it, -> the key of GPU_MODEL's model of that GPU (its published specifications).
MODELLED_GPUS = {"H200": "h200", "H100": "h100"}
GEMMS = ("mm", "addmm", "bmm", "matmul")

# Timings of stale CUDA records (made by an earlier version of their snippet) that are not the program their page
# compares: (record's torch release, snippet, key B) -> why. Such a comparison is shown with why, and left out of
# the model's figure. tests/test_compiled_once.py fails on an entry whose record is no longer stale (remade).
RECOMPILED = {
    ("2.11.0", "gpu_code/memory_model.py", "timing.matmul_softmax_4096.compiled"):
        "recompiled with symbolic sizes: the snippet's earlier version compiled matmul_softmax at 100 × 100 first, "
        "and the 4096 × 4096 call through a new torch.compile wrapper failed that compile's guards",
}


@dataclass
class Predicted:
    """The model's gain at the roof for the workload a GPU timed, at the size and dtype it timed, on that GPU: the
    bytes and FLOPs GPU_MODEL counted for it, at the GPU's published roofs. Eager runs one kernel per op; compiled
    code is what Inductor makes by default: one fused kernel, or, after a GEMM, the library GEMM and one kernel
    for the rest (a GEMM template, max-autotune's, is not modelled)."""
    model: Modelled
    gpu: str  # the key of model.names
    how: str  # "one fused kernel" or "library GEMM + one kernel"

    @property
    def ratio(self) -> float | None:
        """The predicted A/B, or None where a side's roof time is under what its calls cost (overhead-bound)."""
        return None if self.model.overhead_bound(self.gpu) else self.model.ratio(self.gpu)

    @property
    def cell(self) -> str:
        return self.model.cell(self.gpu)


def gpu_models(outputs: Path = records.OUTPUTS, snippets: Path = records.SNIPPETS) -> dict[str, dict]:
    """GPU_MODEL's model of each workload it counts, by the work label a timing of it gets ("f(float32[64])"),
    with its GPUs' specifications under "specs"; {} where its record lacks them."""
    record = records.record(GPU_MODEL, "cpu", outputs, snippets)
    if not record.exists:
        return {}
    model, specs = record.results.get("model", {}), record.results.get("specs", {})
    return {entry["work"]: {**entry, "specs": specs} for entry in model.values() if "work" in entry}


def bare(work: str) -> str:
    """A work label without the word that says how it ran: "compiled f(x)", "jax.jit f(x)", "jax f(x)" -> "f(x)"."""
    for prefix in ("compiled ", "jax.jit ", "jax "):
        if work.startswith(prefix):
            return work[len(prefix):]
    return work


def predicted_of(measured: Measured, key_a: str, key_b: str, models: dict[str, dict],
                 costs: Overheads | None) -> Predicted | None:
    """The model of a GPU's comparison where A ran eager and B compiled the same workload, the model counts that
    workload at that size and dtype, and models the GPU it ran on; else None."""
    entry = models.get(bare(measured.work))
    gpu = next((key for name, key in MODELLED_GPUS.items() if name in measured.hardware), None)
    if (entry is None or gpu is None or gpu not in entry or is_compiled(key_a, measured.work)
            or not is_compiled(key_b, measured.work_b) or bare(measured.work_b) != bare(measured.work)):
        return None
    spec, dtype, ops = entry["specs"][gpu], entry["dtype"], entry["ops"]

    def bound(nbytes: float, flops: float) -> float:  # the snippet's bound_us: bytes or FLOPs, at the roof
        return max(nbytes / (spec["bandwidth_gbps"] * 1e9), flops / (spec["tflops"][dtype] * 1e12)) * 1e6

    if ops[0]["op"] in GEMMS and len(ops) > 1:  # the library GEMM writes its product; one kernel does the rest
        compiled_us = bound(ops[0]["bytes"], ops[0]["flops"]) + bound(ops[1]["bytes"], sum(o["flops"] for o in ops[1:]))
        kernels, how = 2, "library GEMM + one kernel"
    else:
        compiled_us, kernels, how = entry[gpu]["fused_us"], 1, "one fused kernel"
    model = Modelled((len(ops), kernels), (entry["eager_bytes"], entry["fused_bytes"]),
                     {gpu: (entry[gpu]["eager_us"], compiled_us)}, {gpu: spec["name"]}, (False, True), costs)
    return Predicted(model, gpu, how)


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
                        (measures.blocks_per_process(a), measures.blocks_per_process(b)), a.get("work", ""),
                        b.get("work", ""), record.state == "stale",
                        RECOMPILED.get((record.release, snippet, key_b), "") if record.state == "stale" else "")
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
    models = gpu_models(outputs, snippets)
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
        if finding.gpu is not None:
            finding.gpu.predicted = predicted_of(finding.gpu, key_a, key_b, models, costs)
        found.append(finding)
    for (snippet, key_a, key_b), (src, title, options) in described(compares, "cuda").items():
        if (snippet, key_a, key_b) in on_cpu or "what" not in options:
            continue
        gpu = gpu_of(snippet, key_a, key_b, options, outputs, snippets)
        if gpu is not None:
            gpu.predicted = predicted_of(gpu, key_a, key_b, models, costs)
            found.append(Finding(src, title, snippet, key_a, key_b, options["what"], options.get("why", ""), "",
                                 "", float("nan"), float("nan"), float("nan"), 0, [], gpu=gpu))
    return found


def ratio_ticks(axis, low: float, high: float) -> None:
    """A log axis of ratios: ticks at 0.1×, 0.2×, 0.5×, 1×, 2×, ... between low and high, no minor ticks."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter, NullLocator

    axis.set_major_locator(FixedLocator([t for t in (0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50) if low <= t <= high]))
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}×"))
    axis.set_minor_locator(NullLocator())
    axis.set_minor_formatter(NullFormatter())


def hollow(marker: str, color: str, label: str):
    """A legend entry for a hollow marker."""
    from matplotlib.lines import Line2D

    return Line2D([], [], marker=marker, color=color, markerfacecolor="none", linestyle="", label=label)


def legend_above(fig, ax, handles: list, narrow: bool) -> str:
    """The legend above the plot (one column on a phone), and the figure as the site's SVG."""
    ax.legend(handles=handles, loc="lower center", bbox_to_anchor=(0.5, 1.0),
              ncol=1 if narrow else min(len(handles), 3), frameon=False)
    return plots.svg(fig, narrow)


def chart(found: list[Finding], colors: dict, style: dict, narrow: bool = False) -> str:
    """The SVG of each comparison's ratio on a log axis: the CPU's as a dot, its range over the fresh processes
    as a whisker; a GPU's measurement of the same row as a diamond with its own whisker; the band the site
    calls "about the same" shaded. `narrow`: drawn for a phone's column (plots.NARROW_PT), each label on two
    lines and the axis label shorter, so its text stays readable."""
    import textwrap

    from matplotlib.lines import Line2D

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
                # Coloured by the row's verdict, not by which side of 1 the dot is: inside the band it is "about
                # the same", whichever way it leans.
                verdict = measures.direction(row.words)
                color = {1: colors["series"][0], -1: colors["series"][1]}.get(verdict, colors["muted"])
                ax.plot([row.low, row.high], [y + 0.12, y + 0.12], color=color, linewidth=2, solid_capstyle="butt")
                ax.plot([row.ratio], [y + 0.12], marker="o", markersize=6, color=color,
                        markerfacecolor=color if verdict else colors["bg"])  # hollow: about the same
            if row.gpu is not None:
                g = row.gpu
                ax.plot([g.low, g.high], [y - 0.12, y - 0.12], color=gpu_color, linewidth=1.5, solid_capstyle="butt")
                ax.plot([g.ratio], [y - 0.12], marker="D", markersize=5, color=gpu_color,
                        markerfacecolor="none" if g.method else gpu_color)  # hollow: one call per block
                if g.predicted is not None and g.predicted.ratio is not None and not g.recompiled:
                    ax.plot([g.predicted.ratio], [y - 0.12], marker="x", markersize=7, color=colors["fg"])
        ax.set_xscale("log")
        ends = [v for r in rows for v in ((r.low, r.high) if r.on_cpu else ()) + ((r.gpu.low, r.gpu.high) if r.gpu
                                                                                  else ())]
        predicted = [r.gpu.predicted.ratio for r in rows if r.gpu and r.gpu.predicted and r.gpu.predicted.ratio
                     and not r.gpu.recompiled]
        ends += predicted
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
        ratio_ticks(ax.xaxis, low / 1.2, high * 1.2)
        # A row's second side is its change: compiling, unless the row names another ("..., channels-last").
        ax.set_xlabel("speed-up from the row's change\n(compiling unless named; log scale)" if narrow
                      else "speed-up from the row's change (compiling, unless the row names another; log scale)")
        ax.grid(axis="x")
        ax.tick_params(axis="y", length=0)
        gpus = sorted({r.gpu.hardware for r in rows if r.gpu})
        handles = [Line2D([], [], marker="o", color=colors["series"][0], linestyle="", label="CPU, faster"),
                   Line2D([], [], marker="o", color=colors["muted"], markerfacecolor=colors["bg"], linestyle="",
                          label="about the same"),
                   Line2D([], [], marker="o", color=colors["series"][1], linestyle="", label="slower")]
        if gpus:
            handles.append(Line2D([], [], marker="D", color=gpu_color, linestyle="",
                                  label=f"GPU ({', '.join(gpus)})"))
        if any(r.gpu and r.gpu.method for r in rows):
            handles.append(hollow("D", gpu_color, "GPU, timed one call per block"))
        if predicted:
            handles.append(Line2D([], [], marker="x", color=colors["fg"], linestyle="", label="GPU model (roofs)"))
        return legend_above(fig, ax, handles, narrow)


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


@dataclass
class Residual:
    """One point of the model's figure: a GPU's comparison beside the model's prediction of it."""
    number: int  # its number in the figure, from 1
    finding: Finding

    @property
    def measured(self) -> Measured:
        return self.finding.gpu

    @property
    def predicted(self) -> float:
        return self.finding.gpu.predicted.ratio

    @property
    def factor(self) -> float:
        """Measured gain over predicted: above 1, the GPU gained more than the model's roofs say."""
        return self.measured.ratio / self.predicted


RESIDUAL = 1.25  # a measured gain this far from the model's, either way, is a residual the page explains


def against_model(found: list[Finding]) -> tuple[list[Residual], list[Finding]]:
    """(every GPU comparison that the model predicts a ratio for, numbered; every other GPU comparison: no model
    of its workload, overhead-bound, or not the program its page compares, RECOMPILED)."""
    plotted, left = [], []
    for f in found:
        if f.gpu is None:
            continue
        if f.gpu.predicted is not None and f.gpu.predicted.ratio is not None and not f.gpu.recompiled:
            plotted.append(Residual(len(plotted) + 1, f))
        else:
            left.append(f)
    return plotted, left


def beyond(residual: Residual) -> bool:
    return not 1 / RESIDUAL <= residual.factor <= RESIDUAL


def model_chart(points: list[Residual], colors: dict, style: dict, narrow: bool = False) -> str:
    """The SVG of each GPU comparison's measured gain (a dot, its range over the fresh processes a line) against
    the model's gain at the roof for the same workload, both on log axes: on the diagonal the model is right; the
    shaded band is within RESIDUAL of it. Each point is numbered; the page lists what each number is. A record
    made by an earlier version of its snippet (stale) is hollow."""
    from matplotlib.lines import Line2D

    plt = plots.pyplot()
    with plt.rc_context(style):
        # Shown at the column's width: wide and low there (the page stays within its screens), squarer on a phone.
        fig, ax = plt.subplots(figsize=(plots.NARROW_PT / 72, 3.9) if narrow else (6.4, 3.0))
        values = [v for p in points for v in (p.predicted, p.measured.low, p.measured.high)]
        low, high = min(values + [1]) / 1.3, max(values + [1.5]) * 1.3
        line = [low, high]
        ax.fill_between(line, [v / RESIDUAL for v in line], [v * RESIDUAL for v in line], color=colors["grid"],
                        alpha=0.8, linewidth=0)
        ax.plot(line, line, color=colors["fg"], linewidth=1)
        ax.axhline(1, color=colors["muted"], linewidth=0.8, linestyle=":")
        color = colors["series"][2]
        for p in points:
            g = p.measured
            ax.plot([p.predicted, p.predicted], [g.low, g.high], color=color, linewidth=1.5, solid_capstyle="butt")
            ax.plot([p.predicted], [g.ratio], marker="o", markersize=7, color=color,
                    markerfacecolor="none" if g.stale else color)
            # Points on one prediction (one workload timed by several records) fan their numbers out to the right.
            same = [q.number for q in points if abs(q.predicted / p.predicted - 1) < 0.02]
            ax.annotate(str(p.number), (p.predicted, g.ratio), textcoords="offset points",
                        xytext=(9 + 11 * same.index(p.number), 0), ha="left", va="center", color=colors["fg"])
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(low, high)
        ax.set_ylim(low, high)
        for axis in (ax.xaxis, ax.yaxis):
            ratio_ticks(axis, low, high)
        gpus = sorted({p.measured.hardware for p in points})
        ax.set_xlabel("model: gain at the roof\n(published specifications)" if narrow
                      else "model: gain at the roof (published specs)")
        ax.set_ylabel(f"measured on the {', '.join(gpus)}" if gpus else "measured")
        ax.grid(True)
        handles = [Line2D([], [], marker="o", color=color, linestyle="", label="measured"),
                   Line2D([], [], color=colors["fg"], linewidth=1, label="model = measured")]
        if any(p.measured.stale for p in points):
            handles.append(hollow("o", color, "record stale"))
        # Inside, top left: a gain far above the model's would need eager to run far below its roof.
        ax.legend(handles=handles, loc="upper left", frameon=False)
        return plots.svg(fig, narrow)


def describe_model(points: list[Residual]) -> str:
    """The model figure's alt text."""
    outside = sum(beyond(p) for p in points)
    return (f"{len(points)} GPU comparisons, measured gain against the model's gain at the roof, on log axes: "
            f"{len(points) - outside} within {RESIDUAL}× of the model, {outside} beyond it.")
