"""A staged gp.fuse call is recorded the first time its key is met and replayed after
(engines/cpu/program.py): the replay gives the eager calls' bits, on new data, on any number of
threads, with a new result array each call; a recording it cannot replay is not kept."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import gpupromote as gp
from gpupromote.engines.cpu import threads
from gpupromote.engines.cpu.program import TRIAL_CALLS, Program

SHAPE = (300, 1000)   # above STAGED_EAGER_MAX: the stages, not the eager calls


def softmax(x):
    m = gp.max(x, axis=-1, keepdims=True)
    e = gp.exp(x - m)
    return e / gp.sum(e, axis=-1, keepdims=True)


def log_softmax(x):
    s = x - gp.max(x, axis=-1, keepdims=True)
    return s - gp.log(gp.sum(gp.exp(s), axis=-1, keepdims=True))


def layer_norm(x):
    d = x - gp.mean(x, axis=-1, keepdims=True)
    return d / gp.sqrt(gp.mean(d * d, axis=-1, keepdims=True) + 1e-5)


def rms_scaled(x, s):
    return x * s / gp.sqrt(gp.mean(x * x, axis=-1, keepdims=True))


def std_plus_var(x):
    return gp.std(x, axis=-1, keepdims=True) + gp.var(x, axis=-1, keepdims=True)


def column_share(x):
    return x / gp.sum(x, axis=0, keepdims=True)


def running_share(x):
    return gp.cumsum(x, axis=-1) / gp.sum(x, axis=-1, keepdims=True)


def _data(dtype, seed):
    return np.random.default_rng(seed).standard_normal(SHAPE).astype(dtype)


def _eager(fn, policy, *args):
    with gp.use_policy(policy):
        r = fn(*[gp.asarray(a) if isinstance(a, np.ndarray) else a for a in args])
    return np.asarray(r.numpy())


def _programs(F):
    return list(F.__dict__.get("_programs", {}).values())


# (function, extra arguments, whether each thread may run every launch over its own rows)
REPLAYED = [(softmax, (), True), (log_softmax, (), True), (layer_norm, (), True), (rms_scaled, (0.5,), True),
            (std_plus_var, (), None)]


@pytest.mark.parametrize("policy", ["numpy", "torch", "jax"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, ml_dtypes.bfloat16],
                         ids=["f4", "f8", "f2", "bf16"])
@pytest.mark.parametrize("fn, extra, row_local", REPLAYED, ids=[f.__name__ for f, _, _ in REPLAYED])
def test_a_replayed_call_gives_the_eager_bits_on_new_data(policy, dtype, fn, extra, row_local):
    F = gp.fuse(fn, policy=policy)
    first = F(_data(dtype, 1), *extra)
    (program,) = _programs(F)
    assert isinstance(program, Program)
    if row_local is not None:
        assert program.row_local is row_local
    for seed in (2, 3):
        x = _data(dtype, seed)
        got = F(x, *extra)
        assert got.dtype == first.dtype and got.shape == first.shape
        assert got.tobytes() == _eager(fn, policy, x, *extra).tobytes(), f"seed {seed}"
    assert len(_programs(F)) == 1


def test_each_call_returns_a_new_array():
    F = gp.fuse(softmax)
    x1, x2 = _data(np.float32, 1), _data(np.float32, 2)
    r1 = F(x1)
    keep = r1.copy()
    r2 = F(x2)
    r3 = F(x1)
    assert not np.shares_memory(r1, r2) and not np.shares_memory(r2, r3)
    assert r1.tobytes() == keep.tobytes() == r3.tobytes()


@pytest.mark.parametrize("threads_count", [1, 2, 3, 8])
def test_the_replay_gives_the_same_bits_on_any_number_of_threads(threads_count):
    x = _data(np.float32, 4)
    want = _eager(layer_norm, "numpy", x)
    F = gp.fuse(layer_norm)
    with threads.num_threads(threads_count):
        F(_data(np.float32, 5))
        assert F(x).tobytes() == want.tobytes()
        assert isinstance(_programs(F)[0], Program)


@pytest.mark.parametrize("threads_count", [1, 3])
@pytest.mark.parametrize("fn", [softmax, layer_norm], ids=["softmax", "layer_norm"])
def test_rows_in_blocks_give_the_bits_of_all_rows_at_once(fn, threads_count):
    """A row-local program's two ways (each launch over all of a thread's rows, or every launch over
    a block of rows before the next block) each give the eager bits; its first TRIAL_CALLS replays
    try both, and then it keeps one."""
    F = gp.fuse(fn)
    with threads.num_threads(threads_count):
        F(_data(np.float32, 14))
        (program,) = _programs(F)
        ways = list(program.ways)
        assert ways[0] is None and 1 <= ways[1] < SHAPE[0] // threads_count   # several blocks a thread
        x = _data(np.float32, 15)
        want = _eager(fn, "numpy", x).tobytes()
        for way in ways:
            program.ways = [way]
            assert F(x).tobytes() == want, f"blocks of {way} rows"
        program.ways = ways
        for _ in range(TRIAL_CALLS):
            assert F(x).tobytes() == want
        assert program.trials <= 0 and len(program.ways) == 1 and program.ways[0] in ways


@pytest.mark.parametrize("threads_count", [1, 3])
@pytest.mark.parametrize("fn", [softmax, log_softmax, layer_norm], ids=["softmax", "log_softmax", "layer_norm"])
def test_in_blocks_the_last_reduction_asks_for_the_next_block(fn, threads_count):
    """In blocks, the program's last reduction launch asks the caches for the next block's rows of
    what it reads (ahead = the block's rows), except on a thread's last block (ahead = 0); the other
    launches never ask. The bits are the eager ones either way."""
    F = gp.fuse(fn)
    with threads.num_threads(threads_count):
        F(_data(np.float32, 19))
        (program,) = _programs(F)
        asking = [i for i, launch in enumerate(program.launches) if launch[3][2] is not None]
        reductions = [i for i, launch in enumerate(program.launches) if launch[0].__name__ == "rows"]
        assert asking == reductions[-1:] and len(reductions) >= 1, [launch[0].__name__ for launch in program.launches]
        fn_, base, slots, (at0, at1, at_ahead), rows, size = program.launches[asking[0]]
        seen = []

        def spy(*args):
            seen.append((args[at0], args[at1], args[at_ahead]))
            return fn_(*args)
        program.launches[asking[0]][0] = spy
        block = program.ways[1]
        program.ways = [block]
        x = _data(np.float32, 20)
        assert F(x).tobytes() == _eager(fn, "numpy", x).tobytes()
        ends = {m1 for m0, m1 in threads.row_ranges(rows, size)}
        assert len(seen) > len(ends)
        assert all(ahead == (0 if m1 in ends else block) for m0, m1, ahead in seen), seen

def test_whole_buffers_are_passed_as_they_are():
    """A view that is a whole argument, or a whole buffer the call makes (allocated as that view),
    reaches its launches as the array itself, or where the view is read-only as a read-only view of
    it, not a new array on its bytes; the results stay the eager bits and each call's own."""
    F = gp.fuse(softmax)
    F(_data(np.float32, 16))
    (program,) = _programs(F)
    ways = {("argument" if v.root < program.n_args else "made", v.writeable, d) for v, d in zip(program.views, program.direct)}
    assert {d for _, _, d in ways} == {"as it is", "read-only"}, ways          # no new array on a buffer's bytes
    assert {("argument", False, "read-only"), ("made", False, "read-only"), ("made", True, "as it is")} <= ways, ways
    x1, x2 = _data(np.float32, 17), _data(np.float32, 18)
    r1, r2 = F(x1), F(x2)
    assert not np.shares_memory(r1, r2)
    assert r1.tobytes() == _eager(softmax, "numpy", x1).tobytes() and r2.tobytes() == _eager(softmax, "numpy", x2).tobytes()


def test_a_python_scalar_is_part_of_the_key():
    F = gp.fuse(rms_scaled)
    x = _data(np.float32, 6)
    for s in (0.5, 0.25, 0.5, -0.0, 3):
        assert F(x, s).tobytes() == _eager(rms_scaled, "numpy", x, s).tobytes(), repr(s)
    assert len(_programs(F)) == 4


SCALE = 2.0


def scaled_softmax(x):
    return softmax(x * SCALE)


def test_a_captured_scalar_is_part_of_the_key():
    global SCALE
    F = gp.fuse(scaled_softmax)
    x = _data(np.float32, 7)
    try:
        for SCALE in (2.0, 3.0, 2.0):
            F(x)
            assert F(x).tobytes() == _eager(scaled_softmax, "numpy", x).tobytes(), SCALE
    finally:
        SCALE = 2.0
    assert len(_programs(F)) == 2


WEIGHTS = np.linspace(0.5, 1.5, SHAPE[1]).astype(np.float32)


def weighted_softmax(x):
    return softmax(x * WEIGHTS)


@pytest.mark.parametrize("fn", [column_share, running_share, weighted_softmax],
                         ids=["column reduction", "scan", "captured array"])
def test_what_a_recording_cannot_replay_runs_the_stages_every_call(fn):
    """A column reduction and a scan launch kernels a recording does not replay; a captured array
    (which may change between calls) keeps a call from being recorded at all."""
    F = gp.fuse(fn)
    for seed in (8, 9):
        x = _data(np.float32, seed)
        assert F(x).tobytes() == _eager(fn, "numpy", x).tobytes()
    assert _programs(F) == ([] if fn is weighted_softmax else [False])
    WEIGHTS[0] += 1   # the next call reads the array as it is now
    try:
        if fn is weighted_softmax:
            assert F(x).tobytes() == _eager(fn, "numpy", x).tobytes()
    finally:
        WEIGHTS[0] -= 1


def test_a_read_only_argument_is_replayed_too():
    x = _data(np.float32, 10)
    x.flags.writeable = False
    F = gp.fuse(softmax)
    F(x)
    assert F(x).tobytes() == _eager(softmax, "numpy", x).tobytes()
    assert isinstance(_programs(F)[0], Program)


def product_softmax(x, y):
    return softmax(x * y)


def test_arguments_that_share_memory_are_not_recorded():
    """A call on (x, x) would record views of one buffer for both arguments; replayed on (a, b)
    it would read a twice. Such calls stage every time, and do not spoil the key of distinct ones."""
    F = gp.fuse(product_softmax)
    x, y = _data(np.float32, 11), _data(np.float32, 12)
    for a, b in [(x, x), (x, x), (x, y), (y, x), (x, x)]:
        assert F(a, b).tobytes() == _eager(product_softmax, "numpy", a, b).tobytes()
    assert [type(p) for p in _programs(F)] == [Program]


def dot(x):
    return gp.sum(x * x)


@pytest.mark.staged_eager
@pytest.mark.parametrize("fn, replayed", [(softmax, True), (layer_norm, True), (dot, False)],
                         ids=["softmax", "layer_norm", "dot"])
def test_a_small_call_runs_eagerly_then_is_recorded_then_replayed(fn, replayed):
    """At most STAGED_EAGER_MAX elements: the first call of a key runs eagerly, the second is
    recorded, the third replays, where the program has at least SMALL_REPLAY_MIN_LAUNCHES launches
    (a one-launch gp.sum(x * x) is faster as its eager calls)."""
    F = gp.fuse(fn)
    x = np.random.default_rng(13).standard_normal((16, 1024)).astype(np.float32)
    want = _eager(fn, "numpy", x).tobytes()
    states = []
    for _ in range(4):
        assert np.asarray(F(x)).tobytes() == want
        states.append([p if p in (0, False) else type(p).__name__ for p in _programs(F)])
    assert states[0] == [0]
    assert states[-1] == (["Program"] if replayed else [False])


def _branches_on_a_max(x):
    if float(gp.max(x)) > 0.5:
        return x - gp.max(x, axis=-1, keepdims=True)
    return x


def _branches_on_a_sum(x):
    return x / gp.sum(x) if gp.sum(x) else x


def _counts(x):
    return x * int(gp.sum(x > 0))


@pytest.mark.staged_eager
@pytest.mark.parametrize("fn", [_branches_on_a_max, _branches_on_a_sum, _counts], ids=["float", "bool", "int"])
@pytest.mark.parametrize("shape", [(16, 8), (1024, 1024)], ids=["small", "large"])
def test_reading_an_array_value_is_refused_on_every_call(fn, shape):
    """A function whose Python control flow reads an array's value cannot be replayed (a recording
    would keep the first call's branch) nor staged: every call raises the same FuseError, the first
    call of a small one too (which runs eagerly, where the value could be read)."""
    F = gp.fuse(fn)
    x = np.random.default_rng(3).random(shape, dtype=np.float32)
    for _ in range(3):
        with pytest.raises(gp.FuseError, match=r"value of an array is unknown.*gp\.where"):
            F(x)
    assert fn(gp.asarray(x)).shape == shape   # (unfused, it runs)


def test_threads_calling_one_function_at_once_get_their_own_results():
    """Recording is per thread and a replay allocates per call: four threads calling one fused
    function on their own arrays, over and over, each get the eager bits of their own array."""
    from concurrent.futures import ThreadPoolExecutor
    F = gp.fuse(layer_norm)
    xs = [_data(np.float32, 20 + i) for i in range(4)]
    wants = [_eager(layer_norm, "numpy", x).tobytes() for x in xs]

    def work(i):
        return all(F(xs[i]).tobytes() == wants[i] for _ in range(6))
    with ThreadPoolExecutor(4) as pool:
        assert all(pool.map(work, range(4)))
    assert isinstance(_programs(F)[0], Program)


@pytest.mark.parametrize("fn", [softmax, layer_norm], ids=["softmax", "layer_norm"])
def test_out_of_the_result_dtype_and_shape_is_written_by_the_replay(fn):
    F = gp.fuse(fn)
    out = np.empty(SHAPE, np.float32)
    for seed in (30, 31, 32):
        x = _data(np.float32, seed)
        got = F(x, out=out)
        assert got is out
        assert out.tobytes() == _eager(fn, "numpy", x).tobytes()
    assert isinstance(_programs(F)[0], Program)


def test_any_other_out_runs_the_stages_and_their_rules():
    """An out= of another dtype (a cast), the argument itself, or a strided view: the stages, with
    gp.fuse's rules for out=, every call."""
    F = gp.fuse(softmax)
    x = _data(np.float32, 33)
    want = _eager(softmax, "numpy", x)
    F(x)   # recorded
    wide = np.empty(SHAPE, np.float64)
    for _ in range(2):
        assert F(x, out=wide) is wide
        assert wide.tobytes() == want.astype(np.float64).tobytes()
    own = x.copy()
    assert F(own, out=own) is own and own.tobytes() == want.tobytes()
    strided = np.empty((SHAPE[0], 2 * SHAPE[1]), np.float32)[:, ::2]
    assert F(x, out=strided) is strided and strided.tobytes() == want.tobytes()


def share_of_total(x):
    return x / gp.sum(x)


def centred(x):
    return x - gp.mean(x)


@pytest.mark.parametrize("fn", [share_of_total, centred], ids=["x / sum(x)", "x - mean(x)"])
@pytest.mark.parametrize("threads_count", [1, 2])
def test_a_whole_array_reduction_folded_by_value_is_not_recorded(fn, threads_count):
    """A whole-array reduction's 0-d result reaches the next kernel as a folded scalar, a value of
    this call's data: a recording would replay it on the next call's. Such calls stage every time."""
    F = gp.fuse(fn)
    with threads.num_threads(threads_count):
        for seed in (40, 41, 42):
            x = _data(np.float32, seed)
            assert F(x).tobytes() == _eager(fn, "numpy", x).tobytes(), seed
    assert _programs(F) == [False]
