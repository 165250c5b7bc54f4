"""The site builds strictly, and no built page loads anything from a third-party host."""

import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from harness import build_site

# Attributes through which a page *loads* something (links a reader clicks are fine).
LOADS = re.compile(
    r"""<(?:script|img|iframe|source|audio|video|embed)\b[^>]*\bsrc=["'](https?:)?//"""
    r"""|<link\b[^>]*\bhref=["'](https?:)?//[^"']*["'][^>]*>"""
    r"""|url\(\s*["']?(https?:)?//""",
    re.IGNORECASE,
)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site")
    return out, build_site(out)


def test_strict_build_passes_without_warnings(site):
    _, result = site
    assert result.returncode == 0, result.stderr
    warnings = [line for line in result.stderr.splitlines() if "WARNING" in line]
    assert not warnings, "\n".join(warnings)


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
    for name in ("mermaid.min.js", "mathjax-tex-svg.js"):
        assert (out / "assets" / "vendor" / name).stat().st_size > 100_000


def test_chapter_shows_recorded_output_and_numbers(site):
    out, _ = site
    page = (out / "eager-mode" / "index.html").read_text()
    assert "Recorded on" in page and 'class="provenance"' in page
    assert page.count('class="recorded"') >= 5
    assert "aten::sin" in page


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
