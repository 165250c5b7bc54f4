"""The one mkdocs hook (named in mkdocs.yml `hooks:`): mkdocs events only.

- on_files: builds the chapters' notebooks (scripts/notebooks.py, cached by content under .cache/notebooks/)
  and adds them to the site, where mkdocs-jupyter renders them;
- on_page_markdown: renders a chapter's `md:` directives for the page (scripts/directives.py), puts
  under its title the link to its notebook, and appends the glossary's terms as abbreviations
  (scripts/glossary.py);
- on_page_content / on_page_context / on_post_page: a term keeps its tooltip at its first use only; a
  notebook page is left out of search, and the navigation highlights its chapter;
- on_post_build: copies the figures drawn for the pages into the site, and gives the search index the parts of
  each name and the names each section teaches (scripts/search_index.py).

A notebook's links start with the site's address: SITE_URL, which the publishing workflow sets (gh-deploy refuses
to run without it); under `mkdocs serve`, the address it serves; otherwise mkdocs.yml's fallback, and the
notebook's first cell says so.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.plugins import event_priority
from mkdocs.structure.files import File

from scripts import chapters, directives, glossary, notebooks, render, search_index

_DRAWN: dict[str, str] = {}  # site path -> cached figure, for on_post_build
_CHAPTER: dict[str, str] = {}  # a notebook's src_uri -> its chapter's src_uri
_COMMAND: list[str] = []  # the mkdocs command: build, serve or gh-deploy


def on_startup(command, dirty):
    _COMMAND[:] = [command]


@event_priority(50)  # before mkdocs-jupyter wraps the .ipynb files it renders
def on_files(files, config):
    published = bool(os.environ.get("SITE_URL"))
    command = _COMMAND[0] if _COMMAND else "build"
    if command == "gh-deploy" and not published:
        raise PluginError("gh-deploy needs the site's address in SITE_URL: the notebooks' links are made from it")
    where = notebooks.where_the_site_is(config["site_url"], published, serving=command == "serve")
    try:
        names = notebooks.write_all(site=config["site_url"], where=where)
    except chapters.ChapterError as error:
        raise PluginError(str(error)) from None
    _CHAPTER.clear()
    _CHAPTER.update(chapters.notebooks())
    for name in names:
        files.append(File(name, str(notebooks.CACHE), config["site_dir"], config["use_directory_urls"]))
    return files


def notebook_link(page: render.Page) -> str:
    """Buttons under the title: the page's notebook as a page and as a file to download, where one exists."""
    name = next((nb for nb, chapter in _CHAPTER.items() if chapter == page.src_uri), None)
    if name is None:
        return ""
    stem = name.removesuffix(".ipynb")
    as_page = page.link(stem + "/")
    download = page.link(f"{stem}/{Path(name).name}")  # mkdocs-jupyter copies the .ipynb beside its page
    button = '<a class="md-button notebook-link" href="{}"{}>{}</a>'
    return (button.format(as_page, "", ":material-notebook-outline: This chapter as a notebook") + " "
            + button.format(download, " download", ":material-download: Download .ipynb") + "\n\n")


def on_page_markdown(markdown, page, config, files):
    state = render.Page(page.file.src_uri, page.url)
    try:
        markdown = render.expand(markdown, state)
    except directives.DirectiveError as error:
        raise PluginError(str(error)) from None
    _DRAWN.update(state.drawn)
    if page.file.src_uri != glossary.PAGE:
        markdown += glossary.abbreviations(chapters.DOCS)
    head = notebook_link(state)
    if head:
        # After the first heading, so the title stays first.
        first, sep, rest = markdown.partition("\n")
        markdown = first + sep + "\n" + head + rest if first.startswith("# ") else head + markdown
    return markdown


# What a record printed, its provenance, and diffs between releases: search should land on the sentence that
# teaches a word, not on an output block that happens to print it (Material's search skips marked elements).
RECORDED = re.compile(r'<(div|p|details) class="(?=[^"]*\b(?:mlc-output|provenance|mlc-recorded)\b)')


# A name in a table cell's code may wrap on a phone: at the seams of the name (after ".", "_", "=", "(" or ","),
# never inside a word ("fullgraph=T" / "rue"). CSS then breaks mid-word only a piece still wider than the column.
CELL = re.compile(r"(<td[^>]*>)(.*?)(</td>)", re.S)
CODE = re.compile(r"(<code>)([^<]*)(</code>)")
SEAM = re.compile(r"([._=(,])(?=\w)")


def seams(html_text: str) -> str:
    """Each table cell's code with a line-break opportunity (<wbr>) after the punctuation between its words."""
    def in_code(match):
        return match[1] + SEAM.sub(r"\1<wbr>", match[2]) + match[3]
    return CELL.sub(lambda cell: cell[1] + CODE.sub(in_code, cell[2]) + cell[3], html_text)


# A recorded number's source is its title; Material shows a title as a tooltip on tap only on <abbr> (the feature
# content.tooltips), so a recorded value is one: a phone shows where the number came from, as a mouse does.
RECORDED_VALUE = re.compile(r'<span (class="recorded[^"]*" title="[^"]*")>(.*?)</span>', re.S)


def on_page_content(html_text, page, config, files):
    html_text = seams(glossary.first_use_only(html_text))
    html_text = RECORDED_VALUE.sub(r"<abbr \1>\2</abbr>", html_text)
    html_text = RECORDED.sub(lambda m: f"<{m[1]} data-search-exclude {m[0][len(m[1]) + 2:]}", html_text)
    if page.file.src_uri in _CHAPTER:
        # A notebook repeats its chapter: search lands on the chapter, never on its notebook.
        page.meta["search"] = {"exclude": True}
    return html_text


def _chapter_in_nav(page, nav):
    chapter = _CHAPTER.get(page.file.src_uri)
    return next((p for p in nav.pages if p.file.src_uri == chapter), None) if chapter else None


def on_page_context(context, page, config, nav):
    # A notebook is not in the navigation: highlight its chapter's entry while the notebook is rendered.
    if (chapter := _chapter_in_nav(page, nav)) is not None:
        chapter.active = True  # and its section's
        page.mlc_chapter = chapter
    return context


def on_post_page(output, page, config):
    if (chapter := getattr(page, "mlc_chapter", None)) is not None:
        chapter.active = False
    return output


@event_priority(-100)  # after Material's search plugin has written the index
def on_post_build(config):
    site = Path(config["site_dir"])
    try:
        search_index.rewrite(site)
    except ValueError as error:
        raise PluginError(str(error)) from None
    for site_path, cached in _DRAWN.items():
        target = site / site_path
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(cached, target)
