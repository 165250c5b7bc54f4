# ruff: noqa
"""Makes the held-out messages: python tests/atlas_heldout/make.py OUT.json, in a venv of one torch release.
Each scenario of scenarios.py is compiled (backend="eager") and its first graph-break or recompile message kept,
as a log (with the log's prefixes), the message alone, or fullgraph=True's exception, in turn; paths under this
folder read /home/dev/project. tests/atlas_heldout/heldout.json was assembled from two such runs."""
import contextlib, io, json, logging, sys, warnings
from pathlib import Path
import torch
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import scenarios

class Keep(logging.Handler):
    def __init__(self):
        super().__init__(); self.records = []
    def emit(self, record):
        self.records.append(record)

def capture(run, kind):
    torch._dynamo.reset()
    keep = Keep()
    log = logging.getLogger("torch._dynamo")
    if kind == "break":
        torch._logging.set_logs(graph_breaks=True)
    else:
        torch._logging.set_logs(recompiles=True)
    log.addHandler(keep)
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            run(lambda f: torch.compile(f, backend="eager"))
    except Exception as e:
        return None, f"{type(e).__name__}: {e}"
    finally:
        log.removeHandler(keep); torch._logging.set_logs()
    want = "Graph break in user code" if kind == "break" else "Recompiling function"
    for r in keep.records:
        m = r.getMessage()
        if m.startswith(want):
            return m, r
    return None, None

def fullgraph_text(run):
    torch._dynamo.reset()
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            run(lambda f: torch.compile(f, backend="eager", fullgraph=True))
    except Exception as e:
        t = type(e)
        return f"{t.__module__}.{t.__qualname__}: {e}"
    return None

out = []
release = torch.__version__.split("+")[0]
for i, (name, (make, expect, source)) in enumerate(scenarios.S.items()):
    message, rec = capture(make(), "break")
    form = ["log", "plain", "fullgraph"][i % 3]
    if message is None:
        out.append({"name": name, "release": release, "expect": expect, "source": source, "text": None,
                    "note": str(rec) if rec else "no break"})
        continue
    if form == "log":
        prefix = f"W1128 04:{i:02d}:31.118000 48211 torch/_dynamo/symbolic_convert.py:612] [0/0] [__graph_breaks] "
        text = "\n".join(prefix + line for line in message.splitlines())
    elif form == "fullgraph":
        text = fullgraph_text(make()) or message
    else:
        text = message
    out.append({"name": name, "release": release, "expect": expect, "source": source, "form": form,
                "text": text.replace(str(HERE), "/home/dev/project")})
for i, (name, (make, expect, source)) in enumerate(scenarios.R.items()):
    message, rec = capture(make(), "recompile")
    if message is None:
        out.append({"name": name, "release": release, "expect": expect, "source": source, "text": None,
                    "note": str(rec) if rec else "no recompile"})
        continue
    form = ["log", "plain"][i % 2]
    if form == "log":
        prefix = f"V1128 05:{i:02d}:02.771000 48211 torch/_dynamo/guards.py:3012] [0/1] [__recompiles] "
        message = "\n".join(prefix + line for line in message.splitlines())
    out.append({"name": name, "release": release, "expect": expect, "source": source, "form": form,
                "text": message.replace(str(HERE), "/home/dev/project")})
json.dump(out, open(sys.argv[1], "w"), indent=1)
print(len(out), sum(o["text"] is not None for o in out))
