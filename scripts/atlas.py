"""The atlases (md:atlas): a table of cases, each one's messages release by release, and a "paste your error"
lookup that runs in the reader's browser over every atlas on the site.

    <!-- md:atlas SNIPPET [kind=graph_break|recompile] [device=cpu|cuda] [part=lookup|table] -->

An atlas snippet stores, in its `results`:

    results["atlas_kind"] = "graph_break"        # or "recompile"; kind= on the directive must agree with it
    results["atlas"] = {
        CASE: {                                   # CASE: a Python identifier, unique in the snippet
            "what": str,                          # one line: what the case does
            "id": "GB0170" | None,                # the registry id the message carries, if any
            "message": str,                       # the first message as the release printed it, normalised
                                                  # (no paths, no addresses, no line numbers); "" if none
            "before": int,                        # breaks (or recompiles) the case causes on this release
            "fix": str,                           # one line: the fix
            "after": int,                         # breaks (or recompiles) left with the fix
            ...                                   # other keys are kept in the record and ignored here
        },
        ...
    }

Every release's fresh record of the snippet on the device (device=cpu by default) is read: the table says for each
release whether the case breaks (or recompiles) there ("yes", "yes, 2", "no", "–" for no record), so a reader sees
where a break is new or gone, and the folded messages give each release's text (one block where releases printed the
same). Each case has the anchor KIND-CASE (gb-if_on_tensor, rc-new_size) on its table row and KIND-msg-CASE on its
messages.
part=lookup renders the lookup alone and part=table the rest (the counts, the table, the messages), so a page can
put text between them; without part= the directive renders both.

The lookup's data is embedded in the page as <script type="application/json" id="mlc-atlas-data">: every case
of every md:atlas on the site (found the way md:changes finds outputs, scripts/directives.py
site_directives), with its link, its ids and its messages normalised for matching by `normalise` here;
docs/assets/javascripts/atlas.js normalises a pasted message by the same rules and ranks the cases (an id in
common first, then the weighted share of words in common). tests/test_atlas.py holds the two normalisers to
the same output. The directive loads atlas.js with its own script tag, so only a page with an atlas loads it
(it runs once if mkdocs.yml's extra_javascript loads it too). In a notebook the directive gives the counts and
the table.
"""

from __future__ import annotations

import functools
import html
import importlib.util
import json
import re
from pathlib import Path

from scripts import records, releases

KINDS = {  # kind -> (anchor prefix, what a case does, as a column says it)
    "graph_break": ("gb", "Graph break", "breaks"),
    "recompile": ("rc", "Recompile", "recompiles"),
}
SCRIPT = "assets/javascripts/atlas.js"
FOLD_OVER = 30  # cases: a longer table is folded
# Each registry id's page, as torch/_dynamo/exc.py's get_gbid_documentation_link builds it.
SITE = "https://meta-pytorch.github.io/compile-graph-break-site/gb/"

# The lookup's rules, mirrored in atlas.js: keep the registry ids, then drop what differs between one run and a
# reader's (links, paths, addresses, numbers, quotes and punctuation), in this order; ASCII rules, as in JavaScript.
ID = re.compile(r"\bgb(\d{4})\b", re.ASCII)
DROPS = [
    re.compile(r"https?://\S+", re.ASCII),  # links (the registry link's id is read first)
    re.compile(r"(?:[a-z]:)?[\w.~+-]*[/\\][\w.~+/\\-]*", re.ASCII),  # paths, with or without a drive
    re.compile(r"0x[0-9a-f]+", re.ASCII),  # addresses
    re.compile(r"\d+", re.ASCII),  # line numbers, sizes, ids
    re.compile(r"[^a-z_]+", re.ASCII),  # quotes, backticks, punctuation
]


# What tells the cases of one id apart, mirrored in atlas.js `keys`: the names a message quotes (in backticks,
# after qualname:/module:, in a `code:` line, a `<function NAME at`, the source line under a traceback's File
# line), and for a recompile the shape of the guard that failed ("guard_local_eq_float" for `lr == 0.1`).
PREFIX = re.compile(r"^(?:\[rank\d+\]:)?[A-Z]\d{4} [\d:.]+\s+\d+ \S+\] (?:\[[^\]]*\] )*", re.ASCII)
SPANS = [re.compile(p, re.ASCII) for p in (
    r"`([^`\n]+)`", r"qualname: ([\w.<>]+)", r"module: ([\w.]+)", r"<function ([\w.<>]+) at",
    r"method (\w+) of class (\w+)", r"argument types \[([^\]\n]*)\]", r"attempting to trace (\w+)")]
CODE = re.compile(r"code: (.*)$", re.ASCII)
FILE_LINE = re.compile(r'^\s*File "[^"]*", line \d+, in ', re.ASCII)
GUARD = re.compile(r"^\s*- \d+/\d+: (.*?)(?:\s+#.*)?$", re.ASCII)
COMPARE = re.compile(r"^(\S+(?: \S+)*?) (==|!=|<=|>=|<|>) (\S+)$", re.ASCII)
STOP = frozenset(
    "torch dynamo config tensor tensors self the variable variables true false none return def fn function "
    "call calls in of to is and or not for if_ with as at from by this that be it an on".split())


def words_of(text: str) -> list[str]:
    """Names in a piece of code or text: lower case, split at anything but letters, digits and _."""
    out = []
    for word in re.split(r"[^a-z0-9_]+", text.lower()):
        word = word.strip("_")
        if len(word) > 1 and not word.isdigit() and word not in STOP and not re.fullmatch(r"0x[0-9a-f]+", word):
            out.append(word)
    return out


def guard_key(expr: str) -> str | None:
    """The shape of a failed guard: what it checks, not the user's names."""
    expr = expr.strip()
    found = re.search(r"tensor '[^']*' ([\w ]+?) mismatch", expr)
    if found:
        return "guard_tensor_" + "_".join(found.group(1).split())
    found = re.search(r"GLOBAL_STATE changed: (\w+)", expr)
    if found:
        return "guard_global_" + found.group(1).lower()
    if re.search(r"___check_obj_id|___check_type_id|\bid\(", expr):
        return "guard_id"
    if re.search(r"dict\.keys|\.keys\(\)", expr):
        return "guard_dict_keys"
    if expr.startswith("len("):
        return "guard_len"
    found = COMPARE.match(expr)
    if not found:
        return None
    left, right = found.group(1), found.group(3)
    if re.fullmatch(r"-?\d+", left) and "size()" in right:
        return "guard_size_bound"
    if re.fullmatch(r"-?\d+\.\d*(?:e-?\d+)?", right):
        kind = "float"
    elif re.fullmatch(r"-?\d+", right):
        kind = "int"
    elif right in ("True", "False"):
        kind = "bool"
    elif right in ("None",):
        kind = "none"
    else:
        kind = "other"
    where = "global" if left.startswith("G[") else "attr" if re.search(r"[.\[]", left) else "local"
    return f"guard_{where}_{kind}"


def keys(text: str) -> list[str]:
    """What tells a message apart from others of its id: the names it quotes, the guard it failed, and the
    words of the line where it broke."""
    names, code = key_parts(text)
    return list(dict.fromkeys(names + code))


def key_parts(text: str) -> tuple[list[str], list[str]]:
    """(the names a message quotes and the guard it failed, the words of the line where it broke)."""
    out: list[str] = []
    code: list[str] = []  # the source line under the last File line: where the break happened
    code_next = False
    for raw in text.splitlines():
        line = PREFIX.sub("", raw)
        if code_next and line.strip():
            code = words_of(line)
        branch = CODE.search(line)
        if branch:
            code = words_of(branch.group(1))
        code_next = bool(FILE_LINE.match(line))
        guard = GUARD.match(line)
        if guard:
            key = guard_key(guard.group(1))
            if key:
                out.append(key)
            if at := re.search(r"mismatch at index (\d+)", guard.group(1)):
                out.append(f"guard_at_index_{at.group(1)}")  # a transpose fails at 0, channels_last at 1
            continue
        if re.match(r"\s*Hint:", line):
            continue  # hints are the registry's wording, the same for every cause
        for pattern in SPANS:
            for found in pattern.finditer(line):
                for group in found.groups():
                    if group and not re.search(r"[/\\]", group):
                        out += words_of(group)
    if re.search(r"hit config\.(?:recompile_limit|cache_size_limit)", text):
        out.append("guard_limit")
    return list(dict.fromkeys(out)), list(dict.fromkeys(code))


class AtlasError(ValueError):
    """A record that does not hold an atlas; the message is one line."""


def ids(text: str) -> list[str]:
    """The registry ids a message carries ('GB0170'), in order, once each."""
    return list(dict.fromkeys(f"GB{n}" for n in ID.findall(text.lower())))


def normalise(text: str) -> str:
    """A message as the lookup compares it: lower case, its words only, one space apart."""
    text = text.lower()
    for pattern in DROPS:
        text = pattern.sub(" ", text)
    return " ".join(word.strip("_") for word in text.split() if len(word.strip("_")) > 1)


def gb_link(gb: str) -> str:
    """The registry's page of an id: 'GB0170' -> .../gb/gb0170.html."""
    return f"{SITE}gb{gb.removeprefix('GB')}.html"


def _tidy(text: str) -> str:
    """A registry explanation as the message prints it: its source's string pieces joined, no `+ name` tail."""
    text = re.sub(r'"\s+"', "", text.strip())
    text = re.sub(r'\s*\+\s*[A-Za-z_][\w.]*(?:\([^)]*\))?\s*$', "", text)
    return text.strip('"').strip()


@functools.lru_cache(maxsize=1)
def registry() -> dict[str, list]:
    """Every id of the graph-break registry the installed torch ships (torch/_dynamo/graph_break_registry.json,
    read without importing torch): id -> [short name, explanation, hints, the short names it had before]. {}
    where torch or the file is missing."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return {}
    path = Path(spec.submodule_search_locations[0]) / "_dynamo" / "graph_break_registry.json"
    if not path.is_file():
        return {}
    def words(text: str) -> str:  # "" where the registry kept a variable's name, not its text
        text = _tidy(text)
        return "" if re.fullmatch(r"[\w.]+", text) else text
    out = {}
    for gb, versions in json.loads(path.read_text()).items():
        newest = versions[0]  # the registry lists an id's current entry first, then what it said before
        older = [words(v["Gb_type"]) for v in versions[1:] if v["Gb_type"] != newest["Gb_type"]]
        out[gb] = [words(newest["Gb_type"]) or newest["Gb_type"], words(newest["Explanation"]),
                   [h for h in map(words, newest["Hints"]) if h], [t for t in dict.fromkeys(older) if t]]
    return out


def page_url(src: str) -> str:
    """The built page of a docs/ source ('dissecting/graph-break-atlas.md' -> 'dissecting/graph-break-atlas/')."""
    stem = src.removesuffix(".md")
    if stem == "index" or stem.endswith("/index"):
        return stem.removesuffix("index")
    return stem + "/"


def atlas_of(record: records.Record, kind: str | None) -> tuple[str, dict]:
    """(kind, cases) of one record; AtlasError where the record holds none or another kind."""
    results = record.results
    cases = results.get("atlas")
    if not isinstance(cases, dict) or not cases:
        raise AtlasError(f"{record.where()} holds no results['atlas']")
    found = results.get("atlas_kind", kind)
    if kind and found != kind:
        raise AtlasError(f"kind={kind}, but {record.where()} holds a {found} atlas")
    if found not in KINDS:
        raise AtlasError(f"atlas kind '{found}' is not one of {', '.join(KINDS)}")
    for case, entry in cases.items():
        missing = {"what", "id", "message", "before", "fix", "after"} - set(entry)
        if missing:
            raise AtlasError(f"{record.where()}: case '{case}' lacks {', '.join(sorted(missing))}")
    return found, cases


def fresh_records(snippet: str, device: str, outputs: Path, snippets: Path) -> list[records.Record]:
    """The fresh records of the snippet on the device, oldest release first; where none is fresh (the snippet
    changed since), every record there is, which the page marks stale."""
    found = releases.comparable(snippet, device, outputs, snippets) or records.releases_of(
        snippet, device, outputs, snippets)
    return sorted(found, key=lambda r: records.version_key(r.release))


def collect(snippet: str, kind: str | None, device: str, outputs: Path, snippets: Path):
    """(kind, releases oldest first, {case: {release: entry}}) from every fresh record of an atlas snippet."""
    found = fresh_records(snippet, device, outputs, snippets)
    if not found:
        raise AtlasError(f"snippets/{snippet} has no {device} record: run {records.remake_hint(snippet, device)}")
    cases: dict[str, dict[str, dict]] = {}
    kinds = set()
    for record in reversed(found):  # the newest release's order first
        found_kind, entries = atlas_of(record, kind)
        kinds.add(found_kind)
        for case, entry in entries.items():
            cases.setdefault(case, {})[record.release] = entry
    if len(kinds) > 1:
        raise AtlasError(f"the records of snippets/{snippet} hold different kinds of atlas: {', '.join(kinds)}")
    return kinds.pop(), [r.release for r in found], cases


def lookup_entries(snippet: str, kind: str | None, device: str, href: str, title: str, outputs: Path,
                   snippets: Path) -> list[dict]:
    """The lookup's data for one atlas: per case its link, words and the distinct messages, normalised."""
    found_kind, _, cases = collect(snippet, kind, device, outputs, snippets)
    prefix, label, _ = KINDS[found_kind]
    out = []
    for case, by_release in cases.items():
        newest = list(by_release.values())[0]
        messages = list(dict.fromkeys(normalise(e["message"]) for e in by_release.values() if e["message"]))
        changes = newest.get("changes") or ""
        out.append({"kind": label, "case": case, "what": newest["what"], "fix": newest["fix"], "page": title,
                    "changes": changes,
                    "href": f"{href}#{prefix}-{case}",
                    "ids": list(dict.fromkeys(e["id"] for e in by_release.values() if e["id"])),
                    "breaks": {release: e["before"] for release, e in by_release.items()},
                    "words": normalise(f"{case.replace('_', ' ')} {newest['what']}"), "messages": messages,
                    "keys": list(dict.fromkeys([k for e in by_release.values() for k in key_parts(e["message"])[0]]
                                               + words_of(newest["what"]))),
                    "code": list(dict.fromkeys(k for e in by_release.values() for k in key_parts(e["message"])[1]))})
    return out


def release_cell(entry: dict | None) -> str:
    if entry is None:
        return "–"
    said = "no" if not entry["before"] else "yes" if entry["before"] == 1 else f"yes, {entry['before']}"
    return said + (", frame skipped" if entry.get("skipped") else "")


def same_note(by_release: dict[str, dict], shown: list[str]) -> str:
    """After the fix: whether it, compiled, computed what the original computed eagerly, on every release shown
    ("same"), or on which it differed; a fix that changes the program says how. "" where no record says."""
    entries = [by_release[r] for r in shown if r in by_release and "same" in by_release[r]]
    if not entries:
        return ""
    changes = html.escape(entries[-1].get("changes") or "").replace("|", "\\|")
    differs = [r.removesuffix(".0") for r in shown if r in by_release and by_release[r].get("same") is False]
    said = "same" if not differs else f"differs on {', '.join(differs)}"
    return f" ({said}; *it changes the program:* {changes})" if changes else f" ({said})"


def id_cell(by_release: dict[str, dict], shown: list[str]) -> str:
    """The id, or each release's where they differ ('GB0179 (2.11.0); GB4198 (2.13.0, 2.15.0)')."""
    groups: dict[str, list[str]] = {}
    for release in shown:
        if release in by_release and by_release[release]["before"]:
            groups.setdefault(by_release[release]["id"] or "–", []).append(release)
    def linked(gb: str) -> str:
        return f"[{gb}]({gb_link(gb)})" if gb != "–" else gb
    if len(groups) <= 1:
        return linked(next(iter(groups), "–"))
    return "; ".join(f"{linked(gb)} ({', '.join(r)})" for gb, r in groups.items())


def table(kind: str, shown: list[str], cases: dict[str, dict[str, dict]], anchors: bool) -> str:
    """The table, a row per case: what it does (its name on hover, a link to its messages), its id where the
    records have one (graph breaks have registry ids, recompiles none, linked to the id's page), whether it
    breaks (recompiles) on each release, the fix and whether it computes the same."""
    prefix, _, _ = KINDS[kind]
    heads = " · ".join(release.removesuffix(".0") for release in shown)
    with_ids = any(entry["id"] for by_release in cases.values() for entry in by_release.values())
    rows = [f"| Case |{' Id |' if with_ids else ''} On torch {heads} | Fix |",
            f"|---|{'---|' if with_ids else ''}:-:|---|"]
    for case, by_release in cases.items():
        newest = list(by_release.values())[0]
        what = html.escape(newest["what"]).replace("|", "\\|")
        name = f"{what} (`{case}`)"
        if anchors:
            name = (f'<span id="{prefix}-{case}"></span>'
                    f'<a href="#{prefix}-msg-{case}" title="{case}: its messages">{what}</a>')
        fix = html.escape(newest["fix"]).replace("|", "\\|") + same_note(by_release, shown)
        cells = " · ".join(release_cell(by_release.get(release)) for release in shown)
        ids = f" {id_cell(by_release, shown)} |" if with_ids else ""
        rows.append(f"| {name} |{ids} {cells} | {fix} |")
    return "\n".join(rows) + "\n"


def fence(text: str) -> str:
    marks = "`" * max(3, 1 + max((len(m) for m in re.findall(r"`+", text)), default=0))
    return f"{marks}{{ .text .mlc-output }}\n{text}\n{marks}"


def messages(kind: str, shown: list[str], cases: dict[str, dict[str, dict]]) -> str:
    """One folded block: each case's messages, one per distinct text, naming the releases that printed it."""
    prefix, label, _ = KINDS[kind]
    parts = []
    for case, by_release in cases.items():
        groups: dict[str, list[str]] = {}
        for release in shown:
            entry = by_release.get(release)
            if entry is not None:
                groups.setdefault(entry["message"], []).append(release)
        blocks = []
        for text, made in groups.items():
            names = ", ".join(made)
            blocks.append(f"torch {names}:\n\n{fence(text)}" if text else f"torch {names}: no message, no "
                          f"{label.lower()}.")
        what = html.escape(list(by_release.values())[0]["what"])
        parts.append(f'<p id="{prefix}-msg-{case}"><strong>{what}</strong> (<code>{case}</code>)</p>\n\n'
                     + "\n\n".join(blocks))
    body = "\n\n".join(parts)
    indented = "\n".join("    " + line if line else "" for line in body.splitlines())
    return f'??? note "Each case\'s message, release by release"\n\n{indented}\n'


def lookup(data: list[dict], script: str) -> str:
    """The lookup box and its data (the cases, and every id of the registry the build's torch ships); atlas.js
    runs it."""
    hints: dict[str, int] = {}  # each hint once: many ids share one
    ids = {gb: [name, explanation, [hints.setdefault(h, len(hints)) for h in said], older]
           for gb, (name, explanation, said, older) in registry().items()}
    payload = json.dumps({"cases": data, "registry": ids, "hints": list(hints), "site": SITE}, ensure_ascii=False,
                         separators=(",", ":")).replace("</", "<\\/")
    return (
        '<div class="mlc-atlas-lookup">\n'
        '<label for="mlc-atlas-query"><strong>Paste your message</strong> (or a few words of it): the closest cases '
        "of every atlas on this site appear below, matched in your browser.</label>\n"
        '<textarea id="mlc-atlas-query" rows="4" spellcheck="false" '
        'style="width:100%;font-family:var(--md-code-font-family);font-size:.75rem;'
        'color:var(--md-default-fg-color);background:var(--md-code-bg-color);'
        'border:1px solid var(--md-default-fg-color--lighter);border-radius:.2rem;padding:.4rem"></textarea>\n'
        '<div class="mlc-atlas-id" aria-live="polite"></div>\n'
        '<ol class="mlc-atlas-hits" aria-live="polite"></ol>\n'
        "</div>\n"
        f'<script type="application/json" id="mlc-atlas-data">{payload}</script>\n'
        f'<script src="{script}"></script>\n'
    )


def site_entries(page, atlases) -> list[dict]:
    """The lookup's data: every case of every md:atlas on the site (atlases: (page, title, directive) of each,
    as scripts/directives.py's site_directives finds them), linked from this page. An atlas whose snippet has
    no fresh record yet is left out here; its own page fails the build."""
    data, seen = [], set()
    for src, title, d in atlases:
        key = (src, d.args[0], d.options.get("device", "cpu"))
        if key in seen or not (page.snippets / d.args[0]).is_file():
            continue  # a page may show one atlas's lookup and table apart
        seen.add(key)
        try:
            data += lookup_entries(d.args[0], d.options.get("kind"), d.options.get("device", "cpu"),
                                   page.link(page_url(src)), title, page.outputs, page.snippets)
        except AtlasError:
            continue
    return data


def summary(kind: str, shown: list[str], cases: dict[str, dict[str, dict]]) -> str:
    """One sentence from the records: how many cases, how many break (recompile) on each release, and how
    many each release's fixes leave."""
    verb = KINDS[kind][2].removesuffix("s")
    counts, left = [], []
    for release in shown:
        entries = [by_release[release] for by_release in cases.values() if release in by_release]
        counts.append((release, sum(e["before"] > 0 for e in entries)))
        unfixed = sum(e["before"] > 0 and e["after"] > 0 for e in entries)
        if unfixed:
            left.append(f"{unfixed} on torch {release}")
    said = ", ".join(f"{n} on torch {r}" if i == 0 else f"{n} on {r}" for i, (r, n) in enumerate(counts))
    fixes = (f"with its fix, a case still {verb}s: {', '.join(left)}." if left
             else f"with its fix, none {verb}s on any of them.")
    return f"Of the {len(cases)} cases, {said} {verb}; {fixes}\n"


def render(d, page, atlases) -> str:
    """md:atlas SNIPPET: on the page the lookup, the counts, the table and the folded messages (part=lookup
    gives the lookup alone, part=table the rest); in a notebook the counts and the table. atlases: every
    md:atlas on the site, for the lookup."""
    snippet = d.args[0]
    if not (page.snippets / snippet).is_file():
        raise AtlasError(f"snippet 'snippets/{snippet}' does not exist")
    part = d.options.get("part", "all")
    if part not in ("all", "lookup", "table"):
        raise AtlasError(f"part={part}: expected lookup or table (or no part= for both)")
    kind, shown, cases = collect(snippet, d.options.get("kind"), d.options.get("device", "cpu"), page.outputs,
                                 page.snippets)
    counted = summary(kind, shown, cases)
    stale = [r for r in fresh_records(snippet, d.options.get("device", "cpu"), page.outputs, page.snippets)
             if r.state == "stale"]
    if stale:
        counted = (f'!!! warning "Stale records"\n\n    `snippets/{snippet}` changed after torch '
                   f'{", ".join(r.release for r in stale)} recorded what this atlas shows. Remake them with '
                   f'`{records.remake_hint(snippet, stale[0].device)}` and each release\'s venv.\n\n' + counted)
    if page.target == "notebook":
        return "" if part == "lookup" else counted + "\n" + table(kind, shown, cases, anchors=False)
    out = []
    if part in ("all", "lookup"):
        out.append(lookup(site_entries(page, atlases), page.link(SCRIPT)))
    if part in ("all", "table"):
        rows = table(kind, shown, cases, anchors=True)
        if len(cases) > FOLD_OVER:  # a long table folds (a link to a row opens it), so the page reads in a sitting
            rows = f'??? abstract "The {len(cases)} cases, release by release"\n\n' + "\n".join(
                "    " + line if line else "" for line in rows.splitlines()) + "\n"
        out += [counted, rows, messages(kind, shown, cases)]
    return "\n".join(out)
