"""Champion cases: recorded successful turns, served by similarity, never with negative feedback."""

from __future__ import annotations

import time

import pytest

from components.context_window.base import CaseRetriever
from tda.knowledge.cases import CaseRecord, ChampionCaseStore
from tda.knowledge.store import KnowledgeStore


@pytest.fixture
def cases(store: KnowledgeStore) -> ChampionCaseStore:
    return ChampionCaseStore(store)


async def test_similar_cases_are_served_best_first_with_their_details(cases: ChampionCaseStore) -> None:
    assert isinstance(cases, CaseRetriever)
    cases.record(
        CaseRecord(
            "monthly revenue by region for 2024",
            "Revenue table",
            plan="query sales; group by region",
            tokens=812,
            feedback=1,
        )
    )
    cases.record(CaseRecord("list open support tickets", "12 tickets", plan="query tickets"))
    [best, other] = await cases.retrieve_cases("revenue by region for 2023", k=2)
    assert (best.query, best.answer, best.plan, best.tokens, best.feedback) == (
        "monthly revenue by region for 2024",
        "Revenue table",
        "query sales; group by region",
        812,
        1,
    )
    assert 0 <= other.score < best.score <= 1


async def test_identical_cases_are_stored_once_and_updated(cases: ChampionCaseStore) -> None:
    first = cases.record(CaseRecord("count users", "42", tokens=10))
    second = cases.record(CaseRecord("count  users", "42", tokens=12, feedback=1))
    assert first == second and cases.count() == 1
    [case] = await cases.retrieve_cases("count users")
    assert (case.tokens, case.feedback) == (12, 1)


async def test_negative_feedback_removes_a_case_from_what_is_served(cases: ChampionCaseStore) -> None:
    cid = cases.record(CaseRecord("export invoices to csv", "done"))
    assert [c.id for c in await cases.retrieve_cases("export invoices")] == [cid]
    cases.set_feedback(cid, -1)
    assert await cases.retrieve_cases("export invoices") == []


async def test_a_rating_sticks_through_later_unrated_records(cases: ChampionCaseStore) -> None:
    cid = cases.record(CaseRecord("export invoices to csv", "done", feedback=-1))
    assert cases.record(CaseRecord("export invoices to csv", "done", tokens=99)) == cid  # the same turn again
    assert await cases.retrieve_cases("export invoices") == []  # still rated -1: never served
    cases.record(CaseRecord("export invoices to csv", "done", feedback=0))  # an explicit rating does change it
    [case] = await cases.retrieve_cases("export invoices")
    assert (case.feedback, case.tokens) == (0, 0)


async def test_a_replay_is_served_the_cases_recorded_by_its_time(cases: ChampionCaseStore) -> None:
    older = cases.record(CaseRecord("export invoices to csv", "done"))
    time.sleep(0.01)
    turn_assembled = time.time()
    time.sleep(0.01)
    newer = cases.record(CaseRecord("export invoices to pdf", "done"))
    cases.record(CaseRecord("export invoices to csv", "done", tokens=7))  # the older case recorded again
    served = await cases.retrieve_cases("export invoices", k=3, recorded_before=turn_assembled)
    assert [c.id for c in served] == [older]  # still there: it existed since its first record
    assert {c.id for c in await cases.retrieve_cases("export invoices", k=3)} == {older, newer}
    assert await cases.retrieve_cases("export invoices", recorded_before=turn_assembled - 60) == []


def test_bad_input_is_refused(cases: ChampionCaseStore) -> None:
    with pytest.raises(ValueError, match="non-empty query"):
        cases.record(CaseRecord("  ", "x"))
    with pytest.raises(ValueError, match="feedback"):
        cases.record(CaseRecord("q", "a", feedback=5))
    with pytest.raises(KeyError, match="no champion case"):
        cases.set_feedback("missing", 1)


async def test_cases_do_not_show_up_as_a_knowledge_collection(cases: ChampionCaseStore, store: KnowledgeStore) -> None:
    cases.record(CaseRecord("a question", "an answer"))
    assert store.collection_names() == []
    assert await cases.retrieve_cases("anything", k=0) == []
