"""What differs between torch releases' records (scripts/releases.py): run-to-run noise is set aside, and what a
release changed is not."""

from __future__ import annotations

import pytest

from scripts import releases


@pytest.mark.parametrize("a, b", [
    ("  1024     9,651.3 (  34.0)    0.96x   10", "  1024    11,780.0 ( 526.1)    0.97x   10"),
    ("the first compiled call took 10.38 s", "the first compiled call took 9.1 s"),
    ("compiles 2,076,818 us per call", "compiles 3,060,998 us per call"),
    ("<function f at 0x7f00aabb1122>", "<function f at 0x55e0ccdd0011>"),
    ("__temp_7 = [graph_out_0[0]]", "__temp_8 = [graph_out_0[0]]"),
    ("return __resume_at_76_3(*x)", "return __resume_at_80_4(*x)"),
    ("buf3 = empty_strided_cpu((8, 8), (8, 1))", "buf12 = empty_strided_cpu((8, 8), (8, 1))"),
])
def test_what_changes_from_run_to_run_is_set_aside(a, b):
    assert releases.normalise(a) == releases.normalise(b)


@pytest.mark.parametrize("a, b", [
    ("compiled frame sin_then_relu: 22 instructions -> 112", "compiled frame sin_then_relu: 22 instructions -> 129"),
    ("graphs: 1, graph breaks: 0", "graphs: 2, graph breaks: 1"),
    ("add_(arg0_1, mul)", "add_(arg0_1, arg4_1, alpha=-0.1)"),
    ("PTX 8.7", "PTX 9.4"),
])
def test_what_a_release_changes_is_kept(a, b):
    assert releases.normalise(a) != releases.normalise(b)


def test_a_diff_shows_the_lines_as_printed_with_a_line_of_context():
    old = "graph\nmul 1.5 ms\nadd_\nreturn\none\ntwo\nthree\nfour\nend 0x7f00aa\n"
    new = "graph\nadd_ alpha 2.5 ms\nreturn\none\ntwo\nthree\nfour\nend 0x55bb00\n"
    assert releases.diff(old, new) == ["  graph", "- mul 1.5 ms", "- add_", "+ add_ alpha 2.5 ms", "  return"]
