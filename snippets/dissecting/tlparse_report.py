"""tlparse: a compile report of the six-op activation, from torch's structured trace.

    python snippets/dissecting/tlparse_report.py

Writes the structured trace that TORCH_TRACE would write, for two calls of the compiled
activation (the second, at a new size, recompiles), into a temporary folder; runs
tlparse (pip install tlparse) on it and prints what the report holds. Without tlparse,
it says so and prints the trace's own summary. The folder is removed at the end.
"""

import ast
import collections
import contextlib
import html
import json
import logging
import re
import shutil
import subprocess
import sysconfig
import tempfile
from pathlib import Path

import torch
from torch._logging._internal import TorchLogsFormatter, trace_log

device = "cuda" if torch.cuda.is_available() else "cpu"
results = {}
results["device"] = device


# --8<-- [start:trace]
@contextlib.contextmanager
def structured_trace(log_file):
    """What TORCH_TRACE=<folder> does for a whole program, for the calls inside `with`:
    every compile event as one JSON line (and its payload) written to log_file."""
    handler = logging.FileHandler(log_file)
    handler.setFormatter(TorchLogsFormatter(trace=True))  # the TORCH_TRACE format
    trace_log.addHandler(handler)  # torch's logger for the structured trace
    try:
        yield
    finally:
        trace_log.removeHandler(handler)
        handler.close()
# --8<-- [end:trace]


# --8<-- [start:function]
def complex_activation(x, y):  # the six element-wise ops of the Eager mode chapter
    a = torch.sin(x)
    b = torch.cos(y)
    c = a * b
    d = c + x
    e = d * y
    return torch.relu(e)
# --8<-- [end:function]


scratch = tempfile.TemporaryDirectory()  # the trace and the report; removed at the end
folder = Path(scratch.name)

# --8<-- [start:capture]
n = 2**20 if device == "cuda" else 2**16  # 64 Ki values per tensor on a CPU
x, y = torch.randn(n, device=device), torch.randn(n, device=device)
compiled = torch.compile(complex_activation)
log_file = folder / "trace.log"
with structured_trace(log_file):
    compiled(x, y)  # compile [0/0]
    compiled(x[: n // 2], y[: n // 2])  # a new size: recompile [0/1], now dynamic
# --8<-- [end:capture]


# --8<-- [start:summary]
def read_trace(log_file):
    """(kind, metadata, payload) per event: a header line "V... file:line] {json}",
    then its payload, one tab-indented line each."""
    events = []
    for line in log_file.read_text().splitlines():
        if line.startswith("\t"):
            events[-1][2].append(line[1:])
        else:
            metadata = json.loads(line.split("] ", 1)[1])
            events.append((next(iter(metadata)), metadata, []))
    return [(kind, meta, "\n".join(payload)) for kind, meta, payload in events]


events = read_trace(log_file)
kinds = collections.Counter(kind for kind, _, _ in events)
print(f"{len(events)} events; graphs: {kinds['dynamo_output_graph']}, "
      f"generated code: {kinds['inductor_output_code']}")
for kind, meta, payload in events:
    if kind == "artifact" and meta[kind]["name"] == "recompile_reasons":
        print(f"recompiled because: {payload.strip()}")
    if kind == "compilation_metrics":
        m = meta[kind]
        shapes = ast.literal_eval(m.get("graph_node_shapes") or "{}")  # of every node
        x_size = str(shapes.get("l_x_")).replace("'", "")  # a symbol prints unquoted
        print(f"[{m['compile_id']}] {m['co_name']}: {m['graph_op_count']} ops, "
              f"x: {x_size}, {m['guard_count']} guards, "
              f"{m.get('shape_env_guard_count')} on symbolic sizes")
# --8<-- [end:summary]
metrics = [meta["compilation_metrics"] for kind, meta, _ in events
           if kind == "compilation_metrics"]
results["events"] = dict(kinds)
results["event_count"] = len(events)
results["compiles"] = [{key: m.get(key) for key in (
    "compile_id", "co_name", "graph_op_count", "guard_count", "shape_env_guard_count",
    "graph_node_shapes")} for m in metrics]
results["recompile_reasons"] = [payload.strip() for kind, meta, payload in events
                                if kind == "artifact"
                                and meta[kind]["name"] == "recompile_reasons"]


# --8<-- [start:tlparse]
def find_tlparse():
    """The tlparse program: on the PATH, or beside this Python (in a venv)."""
    return shutil.which("tlparse") or shutil.which(
        "tlparse", path=sysconfig.get_path("scripts"))


tlparse = find_tlparse()
report = folder / "report"
if tlparse is None:
    print("tlparse is not installed (pip install tlparse): no report")
else:
    subprocess.run([tlparse, str(log_file), "-o", str(report), "--no-browser"],
                   check=True, capture_output=True)
    pages = sorted(p.name for p in report.glob("*.html"))
    print(f"report: {', '.join(pages)}")
    directory = json.loads((report / "compile_directory.json").read_text())
    for compile_id, entry in directory.items():
        if entry["artifacts"]:  # one line per compile: what tlparse made of it
            products = [re.sub(r"(_[0-9a-z]{52})?_\d+\.\w+$", "", a["name"])
                        for a in entry["artifacts"]]
            print(f"{compile_id}: {len(products)} products: {', '.join(products)}")
# --8<-- [end:tlparse]


# The details of the FX graph cache's key: tens of thousands of characters each.
LEFT_OUT = ("fx_graph_cache_",)


def one_page(report: Path) -> tuple[str, list[str]]:
    """tlparse's index.html with every build product it links folded into the page, so
    one file holds the report (less the products named in LEFT_OUT). Absolute paths
    keep their last part only ("…/x.py"): the page names no folder of the machine."""

    def local(text):
        return re.sub(r"(?<![\w:/.])(?:/[\w.-]+)+/([\w.-]+)", "…/\\1", text)

    def anchor(name):
        return "product-" + re.sub(r"[^\w.-]", "_", name)

    def body(text):  # the <body> of a full page, or the text itself
        match = re.search(r"<body>(.*)</body>", text, re.S)
        return match.group(1) if match else text

    def quoted(text):  # href='x' as href="x"
        return re.sub(r"href='([^']*)'", r'href="\1"', text)

    page = quoted((report / "index.html").read_text())
    linked = dict.fromkeys(re.findall(r'href="([^"#:]+)"', page))
    products, left_out = [], []
    for name in linked:
        path = report / name
        if not path.is_file():
            # tlparse links a file it did not write: keep the text, drop the link
            page = page.replace(f'<a href="{name}">', "<a>")
            continue
        text = path.read_text(errors="replace")
        if Path(name).name.startswith(LEFT_OUT):
            shown = f"<p>not kept here: {len(text):,} characters</p>"
            left_out.append(name)
        elif name.endswith(".html"):
            shown = quoted(body(text))
            for other in re.findall(r'href="([^"#:]+)"', shown):
                if other in linked:
                    shown = shown.replace(f'href="{other}"', f'href="#{anchor(other)}"')
        else:
            shown = f"<pre>{html.escape(local(text))}</pre>"
        title = html.escape(name)  # open: following a link shows the product at once
        products.append(f'<details id="{anchor(name)}" open><summary>{title}</summary>'
                        f"{shown}</details>")
        page = page.replace(f'href="{name}"', f'href="#{anchor(name)}"')
    folded = "<h2>Build products</h2>\n" + "\n".join(products)
    page = page.replace("</body>", folded + "\n</body>")
    # tlparse's script that copies the query string onto links: no links left to copy to
    page = re.sub(r"<script>\s*document\.addEventListener.*?</script>", "", page,
                  flags=re.S)
    return local(page), left_out


if tlparse is None:
    results["tlparse"] = {"available": False,
                          "skipped": "tlparse is not installed (pip install tlparse)"}
else:
    results["tlparse"] = {
        "available": True,
        "version": subprocess.run([tlparse, "--version"], capture_output=True,
                                  text=True).stdout.split()[-1],
        "compile_ids": [cid for cid, entry in directory.items() if entry["artifacts"]],
        "pages": pages,
        "products": {cid: [a["name"] for a in entry["artifacts"]]
                     for cid, entry in directory.items() if entry["artifacts"]},
        "report": "tlparse_report.html",
    }
    page, left_out = one_page(report)
    results["files"] = {"tlparse_report.html": page}
    results["tlparse"]["left_out"] = left_out
scratch.cleanup()
