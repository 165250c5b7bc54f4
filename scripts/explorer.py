"""The compiler explorer (`md:explorer SNIPPET KERNEL`): one Triton kernel of a line-map record, its Python
beside each stage the compiler made of it (TTIR, TTGIR, LLVM IR, PTX, SASS) for each target GPU, every line
linked to the lines it became (docs/assets/javascripts/explorer.js loads a target's stages and lights them),
and what each line cost in SASS. In a notebook, the cost table alone.

Needs no mkdocs: scripts/directives.py dispatches the directive here.
"""

from __future__ import annotations

import html

from scripts import records

EXPLORER_STAGES = ("TTIR", "TTGIR", "LLVM IR", "PTX", "SASS")
EXPLORER_GPUS = {"sm_80": "A100", "sm_90": "H100", "sm_100": "B200"}  # a generation each, by its best-known part


def cost_rows(kernel: dict, target: str) -> list[tuple[int, str, dict]]:
    """(line, code, SASS counts) for each line of the kernel that holds code, and one row for SASS that
    carries no line of the kernel."""
    costs = kernel["targets"][target]["cost"]
    rows = [(line, kernel["source"][line - kernel["first_line"]].split("  #")[0].strip(), costs.get(str(line), {}))
            for line in kernel["code_lines"]]
    others = {}
    for line, counts in costs.items():
        if line == "None" or int(line) not in kernel["code_lines"]:
            for kind, count in counts.items():
                others[kind] = others.get(kind, 0) + count
    return rows + ([(0, "the def line, and SASS with no source line", others)] if others else [])


def render(d, page) -> str:
    """md:explorer SNIPPET KERNEL, for a page or its notebook (page.target)."""
    snippet, name = d.args
    record = page.recorded(snippet)[0]
    kernels = record.value("maps")
    if name not in kernels:
        raise ValueError(f"the record of {snippet} maps no kernel '{name}' (it maps {', '.join(kernels)})")
    kernel = kernels[name]
    targets = list(kernel["targets"])
    default = "sm_90" if "sm_90" in targets else targets[0]
    header = ("| Line | Code | SASS | Memory | Tensor core | Other |", "|---:|---|---:|---:|---:|---:|")

    def table_rows(target: str) -> list[tuple[str, ...]]:
        kinds = ("sass", "memory", "tensor", "other")
        return [(str(line) if line else "", code, *(str(counts.get(k, 0)) for k in kinds))
                for line, code, counts in cost_rows(kernel, target)]

    label = kernel.get("label") or record.results["label"]  # how the stages were made: never run
    if page.target == "notebook":
        rows = [f"| {' | '.join(cells[:1] + (f'`{cells[1]}`' if cells[0] else cells[1],) + cells[2:])} |"
                for cells in table_rows(default)]
        return (f"What each line of `{name}` cost in SASS for {default} ({label}), in static instructions: "
                "each counted once, a loop's body too; the site's page links every line to its lines in each "
                "stage.\n\n"
                + "\n".join(header + tuple(rows)) + "\n")
    base = page.link(f"{record.site_path}/{records.FILES}/")
    linked = [kernel["first_line"] + offset for offset, text in enumerate(kernel["source"])
              if text.strip() and not text.lstrip().startswith(("#", "@"))]  # the def's lines too: the prologue
    hues = {line: (index * 137) % 360 for index, line in enumerate(linked)}
    source = []
    for offset, text in enumerate(kernel["source"]):
        line = kernel["first_line"] + offset
        attrs = f' data-src="{line}" style="--mlc-x-hue: {hues[line]}"' if line in hues else ""
        source.append(f'<span class="mlc-x-line"{attrs}><span class="mlc-x-no">{line}</span>'
                      f"{html.escape(text) or ' '}</span>")
    buttons = "".join(f'<button type="button" data-target="{t}" aria-pressed="{str(t == default).lower()}">'
                      f"{t} ({EXPLORER_GPUS.get(t, t)})</button>" for t in targets)
    panes = "".join(f'<div class="mlc-x-pane" data-stage="{stage}" data-file="{stage.replace(" ", "_")}">'
                    f'<p class="mlc-x-title">{stage}</p>'
                    f'<pre tabindex="0" aria-label="{stage}, lines linked to the source"><code>'
                    f"the {stage} of the chosen target loads here (it needs JavaScript); the files are in the "
                    f"record</code></pre></div>" for stage in EXPLORER_STAGES)
    tables = []
    for t in targets:
        body = "".join("<tr>" + "".join(f"<td><code>{html.escape(c)}</code></td>" if i == 1 and cells[0] else
                                        f"<td>{html.escape(c)}</td>" for i, c in enumerate(cells)) + "</tr>"
                       for cells in table_rows(t))
        heads = "".join(f"<th>{h.strip()}</th>" for h in header[0].strip("|").split("|"))
        tables.append(f'<div class="mlc-x-cost" data-target="{t}"{"" if t == default else " hidden"}>'
                      f"<table><caption>What each line cost in SASS for {t}, in static instructions (each "
                      f"counted once, a loop's body too)</caption><thead><tr>{heads}</tr>"
                      f"</thead><tbody>{body}</tbody></table></div>")
    chain = ""
    if "chain" in kernel:  # an Inductor kernel: where its lines came from, one step further back
        c = kernel["chain"]
        steps = [f"line {c['user_line']} of <code>snippets/{html.escape(snippet)}</code>: "
                 f"<code>{html.escape(c['user_code'])}</code>",
                 "the graph's nodes " + ", ".join(f"<code>{html.escape(n)}</code>" for n in c["fx_nodes"])
                 + " (" + ", ".join(f"<code>{html.escape(a)}</code>" for a in c["aten"]) + ")",
                 f"{len(c['buffers'])} scheduler node{'s' if len(c['buffers']) != 1 else ''}, writing "
                 + ", ".join(f"<code>{html.escape(b)}</code>" for node in c["buffers"] for b in node),
                 f"the kernel <code>{html.escape(name)}</code>, below, and its stages"]
        chain = '<ul class="mlc-x-chain">' + "".join(f"<li>{step}</li>" for step in steps) + "</ul>"
    return (f'<div class="mlc-explorer" data-files="{html.escape(base)}" data-kernel="{html.escape(name)}">'
            f'{chain}<div class="mlc-x-targets" role="group" aria-label="Target GPU">{buttons}</div>'
            f'<p class="mlc-caption">{html.escape(label[:1].upper() + label[1:])}.</p>'
            f'<div class="mlc-x-grid"><div class="mlc-x-pane mlc-x-source"><p class="mlc-x-title">Python</p>'
            f'<pre><code>{"".join(source)}</code></pre></div>{panes}</div>{"".join(tables)}'
            f"</div>\n\n{provenance(page, record)}\n")


def provenance(page, record: records.Record) -> str:
    link = page.link(f"{record.site_path}/{records.MANIFEST}")
    return f'<p class="provenance">{html.escape(record.provenance())} · <a href="{link}">record</a></p>'
