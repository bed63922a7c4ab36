"""`make bench`'s summary (bench/report.py, bench/run.py): gpupromote's own goals, a machine limit
said as such rather than "missed", and one unit for the times of a row."""
import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _load(name):
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(BENCH))


report = _load("report")


def _row(group, impl, median, **extra):
    return {"group": group, "name": group, "stats": {"median": median}, "extra_info": {"impl": impl, **extra}}


def _data(ceiling_all_cores=2.3e-3, threads_gp=1.8e-3):
    return {"benchmarks": [
        _row("threads ceiling: np.add(f32, f32, out=) N=1e7 split over all cores", "all cores", ceiling_all_cores),
        _row("threads ceiling: np.add(f32, f32, out=) N=1e7 split over all cores", "1 thread", 2.5e-3),
        _row("threads out= N=1e7 float16+float32", "gpupromote", threads_gp),
        _row("threads out= N=1e7 float16+float32", "1 thread", 2.3e-3),
        _row("dispatch: float32[1] + float32[1]", "gpupromote", 950e-9),
        _row("dispatch: float32[1] + float32[1]", "numpy", 1.2e-6),
        _row("cold compile, one kernel", "gpupromote", 451e-9, per_kernel_s=0.118),
    ]}


def _line(text, start):
    return next(line for line in text.splitlines() if line.startswith(start))


def test_a_goal_the_memory_system_rules_out_is_called_a_machine_limit():
    text = report.table(_data())
    row = _line(text, "threads out= N=1e7 float16+float32")
    assert "machine limit: memory gives NumPy 1.09x" in row and "NO" not in text
    assert text.splitlines()[0].startswith("goal: the speed gpupromote set itself")


def test_a_reachable_goal_that_is_not_met_is_missed():
    fast_memory = report.table(_data(ceiling_all_cores=1.2e-3))    # NumPy gets 2.08x from all cores here
    assert _line(fast_memory, "threads out= N=1e7 float16+float32").endswith("missed")
    slow = report.table({"benchmarks": [_row("dispatch: float32[1] + float32[1]", "gpupromote", 2e-6),
                                        _row("dispatch: float32[1] + float32[1]", "numpy", 1e-6)]})
    assert _line(slow, "dispatch: float32[1]").endswith("missed")


def test_a_rows_times_share_one_unit():
    text = report.table(_data())
    assert "950 ns" in _line(text, "dispatch: float32[1]") and "numpy 1,200 ns" in _line(text, "dispatch: float32[1]")
    cold = _line(text, "cold compile, one kernel")
    assert "118 ms" in cold and "<= 100 ms" in cold and cold.endswith("missed")   # the time measured in the child


def test_run_writes_the_raw_tables_under_dot_benchmarks():
    run = _load("run")
    json_path, raw_path = run.output_paths("20260101-000000")
    assert json_path.parent.name == raw_path.parent.name == ".benchmarks"
    assert raw_path.name.endswith("-raw.txt") and json_path.suffix == ".json"


@pytest.mark.parametrize("seconds, shown", [(68.2e-9, "68.2 ns"), (2.54e-3, "2.54 ms"), (1.5, "1.5 s")])
def test_a_lone_time_takes_its_own_unit(seconds, shown):
    assert report._fmt(seconds) == shown


def _unary_data(numpy_f16_exp):
    """The reference add moves 120 MB in 3.17 ms (37.9 GB/s); float16 exp moves 40 MB."""
    return {"benchmarks": [
        _row("out= N=1e7 float32+float32 (same dtype)", "numpy", 3.17e-3, bytes=120_000_000),
        _row("out= N=1e7 float32+float32 (same dtype)", "gpupromote", 3.84e-3, bytes=120_000_000),
        _row("unary exp N=1e7 float16", "gpupromote", 5.41e-3, bytes=40_000_000),
        _row("unary exp N=1e7 float16", "numpy", numpy_f16_exp, bytes=40_000_000),
    ]}


def test_a_goal_faster_than_moving_the_rows_bytes_is_called_a_machine_limit():
    # 3x of NumPy's 3.04 ms is 1.01 ms; 40 MB at 37.9 GB/s take 1.06 ms: no code can get there
    row = _line(report.table(_unary_data(3.04e-3)), "unary exp N=1e7 float16")
    assert "machine limit: the goal asks 1.01 ms, its bytes take 1.06 ms at the reference rate" in row


def test_a_goal_the_bytes_allow_is_missed_when_not_met():
    # 3x of 4.8 ms is 1.6 ms, above the 1.06 ms the bytes take: reachable, so "missed"
    row = _line(report.table(_unary_data(4.8e-3)), "unary exp N=1e7 float16")
    assert row.endswith("missed")
