"""The reference-count check the compiled paths' tests share: code that borrows and takes
references by hand shows a leak as a growing count on the objects every call touches, a dropped
reference as a shrinking one."""
import gc
import sys


def assert_no_reference_leaked_or_dropped(run, watched):
    """``run(n)`` makes n rounds of calls; the counts of ``watched`` must not move with n."""
    run(10)  # fill the caches first
    gc.collect()  # why: cycles left by earlier tests (tracebacks, frames) must not drop refs midway
    before = [sys.getrefcount(x) for x in watched]
    run(2000)
    gc.collect()
    after = [sys.getrefcount(x) for x in watched]
    # a reference leaked or dropped per call moves a count by thousands; threads other tests leave
    # running (distributed's) touch None, True and False now and then, by a few
    assert all(abs(c - b) < 100 for b, c in zip(before, after)), \
        [(repr(x), b, c) for x, b, c in zip(watched, before, after) if b != c]
