"""Facts printed by the Eager mode chapter's snippets."""

import re

from harness import snippet

run = snippet("eager_mode/complex_activation.py")

SIX_OPS = ["aten::sin", "aten::cos", "aten::mul", "aten::add", "aten::mul", "aten::relu"]


def test_profile_table_lists_the_six_ops_in_call_order(run):
    printed = re.findall(r"^\s+(aten::\w+)\s", run.section("profile"), re.MULTILINE)
    assert printed == SIX_OPS
    assert run.results["profile"]["ops"] == SIX_OPS


def test_one_gpu_kernel_per_op_on_cuda_and_none_on_cpu(run):
    kernels = run.results["profile"]["kernel_count"]
    assert kernels == (6 if run.device == "cuda" else 0)
    assert f"6 ops called, {kernels} GPU kernels launched" in run.section("profile")


def test_totals_are_consistent(run):
    profile = run.results["profile"]
    assert 0 < profile["busy_us"] <= profile["work_done_us"]
    assert profile["cpu_done_us"] <= profile["work_done_us"]


def test_call_returns_no_later_than_its_result_is_ready(run):
    dispatch = run.results["dispatch"]
    assert 0 < dispatch["returned_us"] <= dispatch["finished_us"]


def test_eager_moves_five_times_the_least_traffic(run):
    traffic = run.results["traffic"]
    assert traffic["eager_mib"] == 15 * run.results["tensor_mib"]  # 9 reads + 6 writes of N values
    assert traffic["least_mib"] == 3 * run.results["tensor_mib"]
    assert "eager moves" in run.section("traffic") and "(5x less)" in run.section("traffic")
    assert 0 < traffic["eager_share_of_copy"]


def test_profiler_trace_is_written_for_perfetto(run):
    trace = run.files / "eager_trace.json"
    assert trace.exists() and '"traceEvents"' in trace.read_text()
