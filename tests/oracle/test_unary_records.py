"""Unary functions, clip and reductions agree with the frameworks' recorded answers
(tests/observed/<stem>.unary.jsonl.gz and .unary-extra: argmax, argmin, cumprod), under every policy."""
import pytest

import gpupromote as gp
from gpupromote.tools.conformance import POLICY_OF, agrees, records, repository_records

OBSERVED = repository_records()

# Note: the floors below 100% are calls one gp.result_type cannot tell apart: TF's `~x` on a bool
# tensor is logical_not while tf.bitwise.invert refuses bool (the policy follows tf.bitwise).
FLOORS = {("tf-all", "unary"): 99.8, ("tf-safe", "unary"): 99.8, ("tf-none", "unary"): 99.8}
CASES = [(stem, policy, family, suffix) for stem, policy in POLICY_OF.items()
         for family, suffix in (("unary", ""), ("clip", ""), ("reduction", ""), ("reduction", "-extra"))]


@pytest.mark.parametrize("stem, policy, family, suffix", CASES,
                         ids=[f"{p}-{f}{s}" for _, p, f, s in CASES])
def test_records_agree(stem, policy, family, suffix):
    path = OBSERVED / f"{stem}.unary{suffix}.jsonl.gz"
    results = [agrees(gp, r, policy) for r in records(path, stem, {family})]
    assert results, f"no {family} records in {path.name}"
    misses = [text for ok, text in results if not ok]
    percent = 100.0 * (len(results) - len(misses)) / len(results)
    floor = FLOORS.get((policy, family), 100.0)
    assert percent >= floor, f"{policy} {family}{suffix}: {percent:.2f}% < {floor}%\n" + "\n".join(misses[:20])
