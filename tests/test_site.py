"""The built site: strict build, no third-party loads, links and anchors resolve, pages read whole."""

import json
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from scripts import chapters, records

pytestmark = pytest.mark.site_wide  # reads the whole site: --chapter runs it (tests/conftest.py)

# Attributes through which a page *loads* something (links a reader clicks are fine).
LOADS = re.compile(
    r"""<(?:script|img|iframe|source|audio|video|embed)\b[^>]*\bsrc=["'](https?:)?//"""
    r"""|<link\b[^>]*\bhref=["'](https?:)?//[^"']*["'][^>]*>"""
    r"""|url\(\s*["']?(https?:)?//""",
    re.IGNORECASE,
)


@pytest.fixture(scope="module")
def site(built_site):
    return built_site, (built_site.parent / "build.log").read_text()


def test_strict_build_passes_without_warnings_or_nav_noise(site):
    _, log = site
    noisy = [line for line in log.splitlines() if "WARNING" in line or "not included in the nav" in line]
    assert not noisy, "\n".join(noisy)


def test_pages_load_nothing_from_other_hosts(site):
    out, _ = site
    pages = sorted(out.rglob("*.html"))
    assert pages
    offenders = []
    for page in pages:
        for match in LOADS.finditer(page.read_text()):
            tag = match.group(0)
            if 'rel="canonical"' in tag or "rel=canonical" in tag:
                continue
            offenders.append(f"{page.relative_to(out)}: {tag[:120]}")
    assert not offenders, "third-party loads:\n" + "\n".join(offenders)


def test_vendored_scripts_are_served(site):
    out, _ = site
    for name in ("mathjax-tex-svg.js",):  # diagrams need no script (scripts/diagrams.py draws them as SVG)
        assert (out / "assets" / "vendor" / name).stat().st_size > 100_000


def test_chapter_shows_recorded_output_and_numbers(site):
    out, _ = site
    page = (out / "eager-mode" / "index.html").read_text()
    assert "Recorded on" in page and 'class="provenance"' in page
    assert page.count('class="recorded"') >= 5
    assert "aten::sin" in page


# A sentence that holds a missing value reads "... eager takes not yet recorded on CUDA per call": the phrase
# stands where a value should, after a word. A note saying a record does not exist yet is a sentence of its own.
# "x=None" is an argument written out (an atlas case's name), not a value gone missing.
MISSING_VALUE = re.compile(r"(?i:[\w,:]\s+not yet recorded on \w+)|\bnan\b|(?<!=)\bNone\b(?! of)")


def test_no_sentence_holds_a_missing_value(site):
    out, _ = site
    found = []
    for page in sorted(out.rglob("*.html")):
        if "notebooks" in page.parts:
            continue
        text = re.sub(r"<(pre|script|style)\b.*?</\1>", " ", page.read_text(), flags=re.S)
        text = re.sub(r"<code\b.*?</code>", "CODE", text, flags=re.S)  # code reads as a word
        for paragraph in re.findall(r"<(?:p|li)\b[^>]*>(.*?)</(?:p|li)>", text, flags=re.S):
            plain = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", paragraph))
            match = MISSING_VALUE.search(plain)
            if match:
                found.append(f"{page.relative_to(out)}: ...{plain[max(0, match.start() - 60):match.end() + 40]}...")
    assert not found, "sentences with a missing value:\n" + "\n".join(found)


def test_the_gpu_is_never_named_by_hand():
    """The GPU a measurement came from is named by its record (md:hardware): a record may come from an H100 or
    an H200. A paragraph may name a part only as a compile target or for a model from published specifications."""
    typed = []
    allowed = re.compile(r"published|specification|datasheet|model|diagram|sm_\d+|target|compile|bound", re.IGNORECASE)
    for page in (chapters.DOCS / name for name in chapters.pages()):
        for paragraph in re.split(r"\n\s*\n", page.read_text()):
            if re.search(r"\b(H100|H200|A100|B200)\b", paragraph) and not allowed.search(paragraph):
                typed.append(f"{page.relative_to(records.ROOT)}: {paragraph.strip()[:160]}")
    assert not typed, "GPU names typed by hand (use md:hardware):\n" + "\n".join(typed)


class Anchors(HTMLParser):
    """The ids a page defines and the links it holds."""

    def __init__(self):
        super().__init__()
        self.ids, self.links = set(), []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if attrs.get("id"):
            self.ids.add(attrs["id"])
        for name in ("href", "src"):
            if attrs.get(name) and not (tag == "link" and attrs.get("rel") == "canonical"):
                self.links.append(attrs[name])


def parse(path: Path) -> Anchors:
    parser = Anchors()
    parser.feed(path.read_text())
    return parser


def test_every_internal_link_and_anchor_resolves(site):
    out, _ = site
    pages = {page: parse(page) for page in out.rglob("*.html")}
    broken = []
    for page, parsed in pages.items():
        for link in parsed.links:
            parts = urlsplit(link)
            if parts.scheme or parts.netloc or link.startswith(("mailto:", "javascript:", "data:")):
                continue
            base = out if parts.path.startswith("/") else page.parent  # 404.html links from the site root
            target = (base / unquote(parts.path).lstrip("/")).resolve() if parts.path else page
            if target.is_dir():
                target = target / "index.html"
            if not target.exists():
                broken.append(f"{page.relative_to(out)}: {link} (no such file)")
            elif parts.fragment and target.suffix == ".html":
                ids = pages[target].ids if target in pages else parse(target).ids
                if unquote(parts.fragment) not in ids:
                    broken.append(f"{page.relative_to(out)}: {link} (no such anchor)")
    assert not broken, "broken links:\n" + "\n".join(sorted(set(broken)))


PAGES = [chapters.DOCS / name for name in chapters.pages()]
CUDA_BLOCK = re.compile(r"<!--\s*md:recorded\s[^>]*device=cuda[^>]*-->(.*?)<!--\s*md:end\s*-->", re.S)
OUTPUT = re.compile(r"<!--\s*md:output\s+(\S+?\.py):(\S+?)(?:\s[^>]*)?-->")


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(records.ROOT / "docs").as_posix() for p in PAGES])
def test_the_missing_gpu_is_quiet(page):
    """At most one note per section about a CUDA record that does not exist yet, and no output shown on a
    page that says only that there is no GPU."""
    from scripts import chapters

    text = "".join(part for is_code, part in chapters.fenced_segments(page.read_text()) if not is_code)
    problems = []
    for section in re.split(r"^#{1,2} ", text, flags=re.M):
        notes = [block for block in CUDA_BLOCK.findall(section) if re.search(r"<!--\s*md:else\s*-->", block)]
        if len(notes) > 1:
            problems.append(f"{len(notes)} notes about a missing CUDA record in '{section.splitlines()[0]}'")
    for snippet, name in OUTPUT.findall(text):
        lines = [line for line in records.record(snippet, "cpu").section(name).splitlines() if line.strip()]
        if lines and all(line.startswith("no GPU") for line in lines):
            problems.append(f"the output of {snippet}:{name} says only that there is no GPU")
    assert not problems, "\n".join(problems)


def test_search_indexes_the_teaching_not_the_recordings(site):
    """What a record printed, its provenance line and the diffs between releases stay out of the search index:
    a query should land on the sentence that explains a word, not on an output that prints it."""
    out, _ = site
    index = json.loads((out / "search" / "search_index.json").read_text())
    text = "\n".join(doc["title"] + "\n" + doc["text"] for doc in index["docs"])
    printed = [line.strip() for snippet in ("eager_mode/complex_activation.py", "graph_mode/recompiles.py")
               for line in records.record(snippet, "cpu").stdout.splitlines() if len(line.strip()) > 30][:6]
    assert printed and not [line for line in printed if line in text], printed
    assert "printed this otherwise" not in text and "record</a>" not in text
