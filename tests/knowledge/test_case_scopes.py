"""Champion-case scopes in the store: a search returns only the cases its scope may see, k of them when there are
k, whether they are still in memory, written to the embedded store's table, or in a Chroma collection (``where``).
The expected sets are written out by hand from the policy (``helpers.VISIBLE``), not computed by the code."""

from __future__ import annotations

import pytest

from tda.knowledge.cases import CaseRecord, CaseScope, ChampionCaseStore
from tda.knowledge.store import CASES_COLLECTION, KnowledgeStore
from tests.knowledge.helpers import VISIBLE, record_scoped_cases

QUERY = "export the invoices of march"


@pytest.mark.parametrize("where", ["pending", "written", "reopened", "chroma"])
@pytest.mark.parametrize(("window", "visible"), VISIBLE, ids=[":".join(w) for w, _ in VISIBLE])
async def test_a_search_serves_only_what_its_scope_may_see(
    store: KnowledgeStore, where: str, window: tuple[str, str, str, str], visible: set[str]
) -> None:
    cases = ChampionCaseStore(store, write_through=where == "chroma")
    record_scoped_cases(cases, QUERY)
    if where in ("written", "reopened"):
        cases.flush()
    if where == "reopened":  # another process: the scopes as the table holds them
        cases = ChampionCaseStore(store)
    served = await cases.retrieve_cases(QUERY, scope=CaseScope(*window), k=20)  # type: ignore[arg-type]
    assert {c.answer for c in served} == visible
    if visible:  # k servable ones, however many of other scopes are as near
        assert len(await cases.retrieve_cases(QUERY, scope=CaseScope(*window), k=1)) == 1  # type: ignore[arg-type]


@pytest.mark.parametrize("write_through", [False, True])
async def test_identical_turns_of_two_owners_are_two_cases(store: KnowledgeStore, write_through: bool) -> None:
    """Each user's case keeps its own rating: bob rating his wrong hides nothing of alice's."""
    cases = ChampionCaseStore(store, write_through=write_through)
    alice, bob = CaseScope("p1", "s1", "alice"), CaseScope("p1", "s2", "bob")
    mine = cases.record(CaseRecord(QUERY, "done", scope=alice))
    theirs = cases.record(CaseRecord(QUERY, "done", scope=bob, feedback=-1))
    assert mine != theirs and cases.count() == 2
    assert [c.id for c in await cases.retrieve_cases(QUERY, scope=alice)] == [mine]
    assert await cases.retrieve_cases(QUERY, scope=bob) == []
    # the same user's turn in another session is the same case; a turn built on tools stays its session's own
    assert cases.record(CaseRecord(QUERY, "done", scope=CaseScope("p1", "s3", "alice"))) == mine
    assert cases.record(CaseRecord(QUERY, "done", scope=CaseScope("p1", "s3", "alice"), from_tools=True)) != mine
    # shared across the profile, an identical turn is one case whoever had it
    shared = CaseScope("p1", "s1", "alice", "profile")
    assert cases.record(CaseRecord(QUERY, "done", scope=shared)) == cases.record(
        CaseRecord(QUERY, "done", scope=CaseScope("p1", "s2", "bob", "profile"))
    )


@pytest.mark.parametrize("write_through", [False, True])
async def test_cases_without_a_scope_are_never_served(store: KnowledgeStore, write_through: bool) -> None:
    """Cases recorded before scopes existed say nothing of whose they are: fail closed."""
    legacy = {"answer": "done", "feedback": 1, "session_id": "s1", "recorded_at": 1.0}
    collection = store.collection(CASES_COLLECTION, create=True, kind="cases")
    collection.upsert(ids=["old"], documents=[QUERY], metadatas=[legacy])
    cases = ChampionCaseStore(store, write_through=write_through)
    for scope in (CaseScope("p1", "s1", "alice", "profile"), CaseScope("", "", "", "profile")):
        assert await cases.retrieve_cases(QUERY, scope=scope, k=5) == []


async def test_a_record_written_over_by_another_scopes_case_leaves_the_first_scope(store: KnowledgeStore) -> None:
    """A full store writes a new case over an old one in place: the record is then the new case's scope's only."""
    cases = ChampionCaseStore(store, max_cases=1)
    alice, bob = CaseScope("p1", "s1", "alice"), CaseScope("p1", "s2", "bob")
    cases.record(CaseRecord(QUERY, "alice's", scope=alice))
    cases.flush()
    assert [c.answer for c in await cases.retrieve_cases(QUERY, scope=alice)] == ["alice's"]  # from the mirror
    cases.record(CaseRecord(QUERY, "bob's", scope=bob))
    cases.flush()
    assert cases.count() == 1
    assert await cases.retrieve_cases(QUERY, scope=alice) == []
    assert [c.answer for c in await cases.retrieve_cases(QUERY, scope=bob)] == ["bob's"]
