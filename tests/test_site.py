"""The site builds strictly, and no built page loads anything from a third-party host."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from harness import ROOT

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
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=300, env=dict(os.environ, NO_MKDOCS_2_WARNING="1"),
    )
    return out, result


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
