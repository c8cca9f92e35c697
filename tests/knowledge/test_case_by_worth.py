"""The champion cases least worth keeping, found without reading every case (issue 32 item 5: a native turn's cost
the same at turn 10,000 as at 100; a full store was scanned for the case to write over on every turn)."""

from __future__ import annotations

import heapq
from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from tda.knowledge import cases as cases_module
from tda.knowledge.by_worth import ByWorth
from tda.knowledge.cases import CaseRecord, CaseScope, ChampionCaseStore
from tda.knowledge.store import KnowledgeStore

SCOPE = CaseScope("p1", "s1@2026-01-01T00:00:00+00:00", "alice")


@dataclass(frozen=True)
class Case:
    name: str
    feedback: int
    at: int

    def worth(self) -> tuple[int, int]:
        return (self.feedback, self.at)


KEYS = st.sampled_from([f"c{i}" for i in range(12)])
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("set"), KEYS, st.integers(-1, 1), st.integers(0, 3)),  # few worths: many ties
        st.tuples(st.just("del"), KEYS),
        st.tuples(st.just("least"), st.integers(-1, 14), st.frozensets(KEYS, max_size=4)),
    ),
    max_size=80,
)


@settings(max_examples=300, deadline=None)
@given(OPS)
def test_the_least_worth_keeping_are_a_stable_sorts_first_whatever_came_and_went(ops):
    """Entries set, set again (their place in the order kept), removed and set anew, in any order: ``least`` lists
    what ``heapq.nsmallest`` over the dict's values in its order lists (a stable sort by worth: ties in the dict's
    order), and the mapping holds what a dict holds."""
    by_worth: ByWorth[Case] = ByWorth()
    oracle: dict[str, Case] = {}
    for op in ops:
        if op[0] == "set":
            _, key, feedback, at = op
            by_worth[key] = oracle[key] = Case(key, feedback, at)
        elif op[0] == "del" and op[1] in oracle:
            del by_worth[op[1]], oracle[op[1]]
        elif op[0] == "least":
            _, n, excluded = op
            expected = heapq.nsmallest(n, (v for k, v in oracle.items() if k not in excluded), key=Case.worth)
            assert by_worth.least(n, excluded) == expected
        assert len(by_worth) == len(oracle) and list(by_worth) == list(oracle)
        assert all(by_worth.get(k) is v and k in by_worth for k, v in oracle.items())


def test_a_full_store_finds_the_case_to_write_over_without_reading_every_case(store: KnowledgeStore, monkeypatch):
    """A native session past the store's bound writes a case over each turn: each flush weighs a handful of cases
    (the new one, the one written over), not all it keeps (it weighed 200 a flush here, 2,000 in the service)."""
    weighed = []
    worth = cases_module._Kept.worth
    monkeypatch.setattr(cases_module._Kept, "worth", lambda self: weighed.append(self) or worth(self))
    cases = ChampionCaseStore(store, max_cases=200)
    for turn in range(260):
        cases.record(CaseRecord(f"which orders of customer {turn} are open?", "some", scope=SCOPE, turn=turn))
        weighed.clear()
        cases.flush()
        assert len(weighed) <= (1 if turn < 200 else 8)
    assert cases.count() == 200
