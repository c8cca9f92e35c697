"""A small, default-suite run of bench/property_bench.py (the 100,000-case run is `make bench`'s)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

spec = importlib.util.spec_from_file_location(
    "property_bench", Path(__file__).parents[1] / "bench" / "property_bench.py"
)
assert spec is not None and spec.loader is not None
property_bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(property_bench)


def test_properties_hold_over_generated_windows_and_do_not_depend_on_earlier_ones():
    seeds = list(range(500, 540))
    outcomes, violations = property_bench.run(
        seeds, fresh_each=False, quiet=False
    )  # one handler, every case after the others
    again, more = property_bench.run(seeds[::-3], fresh_each=True, quiet=False)  # fresh modules per case, reverse order
    assert violations == {"a": [], "b": [], "c": [], "d": []}
    assert more == {"a": [], "b": [], "c": [], "d": []}
    compared = [s for s in again if outcomes[s] is not None and again[s] is not None]
    assert len(compared) > 5
    assert [outcomes[s] for s in compared] == [again[s] for s in compared]
