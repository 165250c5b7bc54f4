"""The site's search index, made to find a name whole and in its parts, and a name of several words where it is
taught.

Material's search (lunr) splits text into words at its `separator` (mkdocs.yml, `plugins: search:`). Split at
dots, `torch.compiler.disable` would be three common words; not split, it would not be found by `disable`. So
the separator keeps a name whole (it splits at spaces and punctuation, and at a "." or "-" only where it does
not join two word characters), and after Material's plugin has written `search/search_index.json`, the mkdocs
hook (`on_post_build`) calls `rewrite`, which gives each section two fields the reader never sees:

- `parts`: each name's parts (`torch compiler disable`), so a part finds the name. Material asks for a
  hyphenated query `reduce-overhead` as `reduce` exactly and `overhead*`, so a part is also what that query
  needs;
- `names`: the names of TAUGHT that this section teaches. Lunr has no phrases: `custom op` is `custom*` or
  `op*`, and lands wherever "op" is common. TAUGHT names the section for the few names whose words are common.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

TAG = re.compile(r"<[^>]+>")
JOINER = re.compile(r"[-._]+")  # where a name has parts
# The extra fields, each with its boost; Material's own are title (1000) and text (1).
FIELDS = {"parts": 1.0, "names": 1e5}
# Names of several words, or of words the site uses everywhere, and the section that teaches each: a query for
# the name lands there first. Lunr has no phrases, and matches each query word against the start of an index
# word, so the section gets one word in its `names` field, the name's words joined behind the word that should
# find it on its own (the lead): "custom op" -> "custom_op", found by "custom" and by "custom op", while "op"
# alone is left to the text. The build fails on a section that is gone (its heading renamed).
TAUGHT = [  # (name, lead word, location)
    ("reduce-overhead", "reduce", "levers/#mode-named-option-sets"),
    ("max-autotune", "max", "dissecting/regimes/#max-autotune-and-epilogue-fusion"),
    ("epilogue fusion", "epilogue", "dissecting/regimes/#max-autotune-and-epilogue-fusion"),
    ("FX graph cache", "cache", "dissecting/warm-start/"),
    ("custom op", "custom", "dissecting/data-dependent/#torchlibrarycustom_op-opaque-on-purpose"),
    ("CUDA graphs", "cuda", "dissecting/graphs/#cuda-graphs-one-launch-for-many-kernels"),
    ("memory-bound", "memory", "dissecting/regimes/#memory-bound-bandwidth-is-the-limit"),
    ("compute-bound", "compute", "dissecting/regimes/#compute-bound-flops-is-the-limit"),
    ("recompile_limit", "recompile", "dissecting/recompile-atlas/#at-the-recompile-limit"),
    ("graph break", "break", "graph-mode/#torchdynamo-and-graph-breaks"),
    ("kernel fusion", "kernel", "optimizations/#kernel-fusion"),
    # `disable` is in many names (`disable_compile`, `torch._dynamo.disable`); the lever is taught here.
    ("disable", "disable", "levers/#torchcompilerdisable-leave-a-function-out"),
]


def joined(name: str, lead: str) -> str:
    """The one index word for a name: `custom_op`, `reduce_overhead`, `break_graph`."""
    words = JOINER.sub(" ", name.lower()).split()
    return "_".join([lead, *(w for w in words if w != lead)])


INDEX = Path("search") / "search_index.json"
# mkdocs.yml's `separator` for Material's search (a test holds the two equal): words split at spaces and
# punctuation, and at a "." or "-" that does not join two word characters.
SEPARATOR = r"""[\s,;:!?=()\[\]{}<>"'’“”/|]+|(?<=\w)[.\-](?!\w)|(?<!\w)[.\-](?=\w)|&[a-z]+;"""


def names(text: str, separator: str) -> list[str]:
    """The words of an index field's text (its HTML tags dropped) that have parts: `torch.compile`,
    `reduce-overhead`, `mark_dynamic`, each trimmed of the punctuation that ends a sentence."""
    found = []
    for word in re.split(separator, TAG.sub(" ", text)):
        word = word.strip(".-_")
        if JOINER.search(word) and re.search(r"[A-Za-z]", word):
            found.append(word)
    return found


def parts(text: str, separator: str) -> str:
    """Each name's parts, once each in order of first use: `torch.library.custom_op` gives `torch library
    custom_op custom op`; numbers (`2.13.0`) give none."""
    seen: dict[str, None] = {}
    for name in names(text, separator):
        for piece in re.split(r"[-.]+", name):
            for part in [piece, *re.split(r"_+", piece)] if "_" in piece.strip("_") else [piece.strip("_")]:
                part = part.strip("_")
                if part and re.search(r"[A-Za-z]", part) and part.lower() != name.lower():
                    seen.setdefault(part.lower())
    return " ".join(seen)


def rewrite(site_dir: Path) -> int:
    """Add the parts fields to the built site's search index; the number of sections given parts."""
    path = Path(site_dir) / INDEX
    if not path.is_file():
        return 0
    index = json.loads(path.read_text())
    separator = index["config"]["separator"]  # mkdocs.yml's, as the browser splits words
    fields = index["config"].setdefault("fields", {})
    for field, boost in FIELDS.items():
        fields[field] = {"boost": boost}
    taught: dict[str, list[str]] = {}
    for name, lead, location in TAUGHT:
        taught.setdefault(location, []).append(joined(name, lead))
        if "-" in name:  # Material asks for "reduce-overhead" as "reduce" exactly and "overhead*"
            taught[location].append(name.lower().split("-")[0])
    given = 0
    for doc in index["docs"]:
        # Every field must be present in every document (lunr reads each through Material's extractor).
        doc["parts"] = parts(doc.get("title", "") + " " + doc.get("text", ""), separator)
        doc["names"] = " ".join(taught.pop(doc["location"], []))
        given += bool(doc["parts"])
    if taught:
        raise ValueError(f"scripts/search_index.py TAUGHT names sections the site no longer has: {sorted(taught)}")
    path.write_text(json.dumps(index, ensure_ascii=False, separators=(",", ":")))
    return given
