"""scripts/mkdocs_hooks.py's changes to a page's HTML."""

from scripts.mkdocs_hooks import seams


def test_a_name_in_a_table_cell_wraps_at_its_seams_not_inside_a_word():
    html = ("<table><tr><td><code>fullgraph=True</code> and <code>torch.compiler.cudagraph_mark_step_begin</code>"
            "</td><td>x <code>f(a,b)</code> <code>plain</code></td></tr></table>")
    marked = seams(html)
    assert "<code>fullgraph=<wbr>True</code>" in marked
    assert "<code>torch.<wbr>compiler.<wbr>cudagraph_<wbr>mark_<wbr>step_<wbr>begin</code>" in marked
    assert "<code>f(<wbr>a,<wbr>b)</code> <code>plain</code>" in marked
    assert seams(marked) == marked  # once is enough


def test_code_outside_a_table_and_highlighted_code_are_left_alone():
    html = '<p><code>fullgraph=True</code></p><td><code class="highlight"><span>a.b</span></code></td>'
    assert seams(html) == html
