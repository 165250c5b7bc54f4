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


@pytest.mark.parametrize("a, b", [
    ("eager: 15 passes, 1920 MiB at 9 GB/s", "eager: 15 passes, 1920 MiB at 7 GB/s"),
    ("x + y moves 48.45 GB/s: 79% of the copy's bandwidth", "x + y moves 76.10 GB/s: 95% of the copy's bandwidth"),
    ("compiling pays off after 15 calls", "compiling pays off after 14 calls"),
    ("SASS  HMMA.16816.F32 R80, R64.reuse, R104, R80", "SASS  HMMA.16816.F32 R4, R68.reuse, R2, R4"),
])
def test_measured_whole_numbers_and_allocated_registers_are_set_aside(a, b):
    assert releases.normalise(a) == releases.normalise(b)


def test_bytes_and_counts_are_kept():
    assert releases.normalise("15 passes, 1920 MiB") != releases.normalise("9 passes, 1152 MiB")


def test_a_measurement_after_a_colon_is_not_a_version():
    assert releases.normalise("error against torch: 5.6e-09") == releases.normalise("error against torch: 7.5e-09")
    assert releases.normalise("torch 2.13.0") != releases.normalise("torch 2.15.0")


@pytest.mark.parametrize("a, b", [
    (False, 0),
    (True, 1),
    ("HMMA.16816.F32 R80, R64.reuse, R104, R80", "HMMA.16816.F32 R4, R68.reuse, R2, R4"),
    (["buf3 = buf2"], ["buf2 = buf1"]),
])
def test_counts_take_a_flag_for_its_number_and_set_run_to_run_names_aside(a, b):
    assert releases.same(a) == releases.same(b)


@pytest.mark.parametrize("a, b", [(1, 2), ("GB0179", "GB4198"), (["add_", "mul"], ["add_"])])
def test_counts_keep_what_a_release_changed(a, b):
    assert releases.same(a) != releases.same(b)
