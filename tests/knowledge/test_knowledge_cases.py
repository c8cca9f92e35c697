"""Champion cases: recorded successful turns, served by similarity, never with negative feedback."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tda.knowledge.cases import CaseRecord, CaseScope, ChampionCaseStore
from tda.knowledge.embeddings import HashingEmbedding
from tda.knowledge.store import CASES_COLLECTION, KnowledgeStore, open_client

WORDS = ["invoice", "export", "revenue", "region", "ticket", "refund", "users", "country"]


SCOPE = CaseScope("p1", "s1@2026-01-01T00:00:00+00:00", "alice")
"""The session every case here is recorded in and searched from (scopes themselves: test_case_scopes.py)."""


def rec(query: str, answer: str, **fields: object) -> CaseRecord:
    return CaseRecord(query, answer, scope=SCOPE, **fields)  # type: ignore[arg-type]


@pytest.fixture
def cases(store: KnowledgeStore) -> ChampionCaseStore:
    return ChampionCaseStore(store)


async def test_similar_cases_are_served_best_first_with_their_details(cases: ChampionCaseStore) -> None:
    cases.record(
        rec(
            "monthly revenue by region for 2024",
            "Revenue table",
            plan="query sales; group by region",
            tokens=812,
            feedback=1,
        )
    )
    cases.record(rec("list open support tickets", "12 tickets", plan="query tickets"))
    [best, other] = await cases.retrieve_cases("revenue by region for 2023", scope=SCOPE, k=2)
    assert (best.query, best.answer, best.plan, best.tokens, best.feedback) == (
        "monthly revenue by region for 2024",
        "Revenue table",
        "query sales; group by region",
        812,
        1,
    )
    assert 0 <= other.score < best.score <= 1


async def test_identical_cases_are_stored_once_and_updated(cases: ChampionCaseStore) -> None:
    first = cases.record(rec("count users", "42", tokens=10))
    second = cases.record(rec("count  users", "42", tokens=12, feedback=1))
    assert first == second and cases.count() == 1
    [case] = await cases.retrieve_cases("count users", scope=SCOPE)
    assert (case.tokens, case.feedback) == (12, 1)


async def test_negative_feedback_removes_a_case_from_what_is_served(cases: ChampionCaseStore) -> None:
    cid = cases.record(rec("export invoices to csv", "done"))
    assert [c.id for c in await cases.retrieve_cases("export invoices", scope=SCOPE)] == [cid]
    cases.set_feedback(cid, -1)
    assert await cases.retrieve_cases("export invoices", scope=SCOPE) == []


async def test_a_rating_sticks_through_later_unrated_records(cases: ChampionCaseStore) -> None:
    cid = cases.record(rec("export invoices to csv", "done", feedback=-1))
    assert cases.record(rec("export invoices to csv", "done", tokens=99)) == cid  # the same turn again
    assert await cases.retrieve_cases("export invoices", scope=SCOPE) == []  # still rated -1: never served
    cases.record(rec("export invoices to csv", "done", feedback=0))  # an explicit rating does change it
    [case] = await cases.retrieve_cases("export invoices", scope=SCOPE)
    assert (case.feedback, case.tokens) == (0, 0)


async def test_a_replay_is_served_the_cases_recorded_by_its_time(cases: ChampionCaseStore) -> None:
    older = cases.record(rec("export invoices to csv", "done"))
    time.sleep(0.01)
    turn_assembled = time.time()
    time.sleep(0.01)
    newer = cases.record(rec("export invoices to pdf", "done"))
    cases.record(rec("export invoices to csv", "done", tokens=7))  # the older case recorded again
    served = await cases.retrieve_cases("export invoices", scope=SCOPE, k=3, recorded_before=turn_assembled)
    assert [c.id for c in served] == [older]  # still there: it existed since its first record
    assert {c.id for c in await cases.retrieve_cases("export invoices", scope=SCOPE, k=3)} == {older, newer}
    assert await cases.retrieve_cases("export invoices", scope=SCOPE, recorded_before=turn_assembled - 60) == []


def test_bad_input_is_refused(cases: ChampionCaseStore) -> None:
    with pytest.raises(ValueError, match="non-empty query"):
        cases.record(rec("  ", "x"))
    with pytest.raises(ValueError, match="feedback"):
        cases.record(rec("q", "a", feedback=5))
    with pytest.raises(KeyError, match="no champion case"):
        cases.set_feedback("missing", 1)


async def test_cases_do_not_show_up_as_a_knowledge_collection(cases: ChampionCaseStore, store: KnowledgeStore) -> None:
    cases.record(rec("a question", "an answer"))
    assert store.collection_names() == []
    assert await cases.retrieve_cases("anything", scope=SCOPE, k=0) == []


async def test_negative_neighbours_never_crowd_out_the_servable_cases(cases: ChampionCaseStore) -> None:
    """More negatively rated cases nearer the query than a search over-fetches: the servable one still comes."""
    for i in range(20):
        cases.record(rec(f"export invoices to csv {i}", "done", feedback=-1))
    wanted = cases.record(rec("send the invoices by mail", "sent"))
    for written in (False, True):
        if written:
            cases.flush()
        assert [c.id for c in await cases.retrieve_cases("export invoices to csv", scope=SCOPE, k=1)] == [wanted]
        assert (
            await cases.retrieve_cases("export invoices to csv", scope=SCOPE, k=3, recorded_before=time.time() - 60)
            == []
        )


async def test_recorded_cases_are_served_before_and_after_they_are_written(cases: ChampionCaseStore) -> None:
    cid = cases.record(rec("count users by country", "a table"))
    assert cases.pending == 1  # kept in memory, not yet written
    before = await cases.retrieve_cases("users by country", scope=SCOPE)
    assert cases.flush() == 1 and cases.pending == 0
    after = await cases.retrieve_cases("users by country", scope=SCOPE)
    assert [c.id for c in before] == [c.id for c in after] == [cid]
    assert before[0].score == pytest.approx(after[0].score, abs=1e-5)  # pending and written cases score alike


async def test_a_rating_is_written_at_once(cases: ChampionCaseStore, store: KnowledgeStore) -> None:
    cid = cases.record(rec("export invoices", "done"))
    cases.record(rec("export invoices", "done", feedback=-1))
    assert cases.pending == 0
    assert (
        await ChampionCaseStore(store).retrieve_cases("export invoices", scope=SCOPE) == []
    )  # reopened: it is written
    cases.set_feedback(cid, 1)
    assert [c.feedback for c in await ChampionCaseStore(store).retrieve_cases("export invoices", scope=SCOPE)] == [1]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    records=st.lists(
        st.tuples(st.sampled_from(WORDS), st.sampled_from(WORDS), st.sampled_from([-1, 0, 1, None])),
        min_size=1,
        max_size=30,
    ),
    written=st.integers(0, 30),
    k=st.integers(1, 5),
    cutoff=st.integers(0, 30),
    query=st.sampled_from(WORDS),
)
async def test_search_serves_the_k_nearest_servable_cases(
    tmp_path_factory: pytest.TempPathFactory,
    records: list[tuple[str, str, int | None]],
    written: int,
    k: int,
    cutoff: int,
    query: str,
) -> None:
    """Against a brute-force oracle: cosine of the hashing vectors over every case rated >= 0 and recorded by
    the cutoff; some cases written to Chroma, the rest still in memory."""
    cases = ChampionCaseStore(KnowledgeStore(open_client(tmp_path_factory.mktemp("cases")), embedder="hashing"))
    first_at: dict[str, float] = {}
    rating: dict[str, int] = {}
    text: dict[str, str] = {}
    cutoff_at = 0.0
    for i, (a, b, feedback) in enumerate(records):
        if i == written:
            cases.flush()
        if i == cutoff:
            cutoff_at = time.time()
            time.sleep(0.002)
        cid = cases.record(rec(f"{a} {b}", "answer", feedback=feedback))
        first_at.setdefault(cid, time.time())
        rating[cid] = rating.get(cid, 0) if feedback is None else feedback
        text[cid] = f"{a} {b}"
    if cutoff >= len(records):
        cutoff_at = time.time()
    embed = HashingEmbedding()
    q = embed([query])[0]
    oracle = sorted(
        (
            round(max(0.0, float(np.dot(q, embed([text[cid]])[0]))), 4)
            for cid in text
            if rating[cid] >= 0 and first_at[cid] <= cutoff_at
        ),
        reverse=True,
    )[:k]
    served = await cases.retrieve_cases(query, scope=SCOPE, k=k, recorded_before=cutoff_at)
    assert [round(c.score, 4) for c in served] == pytest.approx(oracle, abs=2e-4)
    assert all(rating[c.id] >= 0 and first_at[c.id] <= cutoff_at for c in served)


async def test_a_full_store_writes_over_the_cases_least_worth_keeping(store: KnowledgeStore) -> None:
    cases = ChampionCaseStore(store, max_cases=4)
    rated = cases.record(rec("rated question", "kept", feedback=1))
    wrong = cases.record(rec("wrong question", "dropped first", feedback=-1))
    old = [cases.record(rec(f"old question {i}", "old")) for i in range(2)]
    cases.flush()
    time.sleep(0.01)
    new = [cases.record(rec(f"new question {i}", "new")) for i in range(2)]
    assert cases.count() == 4  # written over in place: the collection never holds more
    served = {c.id for c in await cases.retrieve_cases("question", scope=SCOPE, k=10)}
    assert served == {rated, old[1], *new}  # the negative went first, then the oldest unrated
    assert wrong not in served and old[0] not in served
    cases.set_feedback(new[0], 1)  # a case in a record that held another case before is rated as itself
    [case] = [c for c in await cases.retrieve_cases("new question 0", scope=SCOPE, k=10) if c.id == new[0]]
    assert case.feedback == 1 and case.answer == "new"
    again = cases.record(rec("old question 0", "old"))  # a dropped case comes back as a new one
    assert again == old[0] and cases.count() == 4
    assert old[0] in {c.id for c in await cases.retrieve_cases("old question 0", scope=SCOPE, k=10)}
    reopened = ChampionCaseStore(store, max_cases=4)  # another process reads which case each record holds
    assert {c.id for c in await reopened.retrieve_cases("question", scope=SCOPE, k=10)} == {rated, *new, old[0]}


async def test_cases_an_earlier_version_kept_in_chroma_move_to_the_case_table(store: KnowledgeStore) -> None:
    """Earlier versions kept an embedded store's cases in a Chroma collection, whose index grows with every write:
    the first open moves them out, with their embedder. The oldest records' ids are their case ids, without
    ``case_id`` in their metadata. They were recorded with no scope (whose session, which profile), so they are
    never served: a case is shown only where its scope says it may be."""
    legacy = store.collection(CASES_COLLECTION, create=True, kind="cases")
    legacy.upsert(ids=["old-case"], documents=["export invoices"], metadatas=[{"answer": "done", "feedback": 0}])
    legacy.upsert(
        ids=["a-record"], documents=["count users"], metadatas=[{"answer": "a table", "feedback": 1, "case_id": "c2"}]
    )
    cases = ChampionCaseStore(store, max_cases=3)
    assert await cases.retrieve_cases("export invoices", scope=SCOPE, k=1) == []
    assert CASES_COLLECTION not in [c.name for c in store.client.list_collections()]
    assert cases.count() == 2  # moved, not lost
    scoped = cases.record(rec("export invoices", "done", feedback=1))  # the same turn now: a case of its scope
    assert scoped not in ("old-case", "c2") and cases.count() == 3
    [case] = await ChampionCaseStore(store).retrieve_cases("export invoices", scope=SCOPE, k=1)  # from the table
    assert (case.id, case.feedback) == (scoped, 1)


async def test_written_through_cases_are_served_by_another_store_at_once(store: KnowledgeStore) -> None:
    """With a Chroma server shared by replicas, each case is written as it is recorded."""
    cid = ChampionCaseStore(store, write_through=True).record(rec("export invoices", "done"))
    other = ChampionCaseStore(store, write_through=True)
    assert [c.id for c in await other.retrieve_cases("export invoices", scope=SCOPE)] == [cid]


async def test_a_search_stays_on_the_event_loop_once_it_is_cheap(store: KnowledgeStore) -> None:
    """The first search loads the mirror of the written cases (Chroma: a worker thread); later ones, whose
    vectors need no model run (the hashing embedder), run on the loop's own thread: no hop there and back."""
    ChampionCaseStore(store).record(rec("export invoices to csv", "done", feedback=1))  # written at once
    cases = ChampionCaseStore(store)  # as after a restart: nothing loaded yet
    threads: list[str] = []
    search = cases.search

    def traced(*args: object, **kwargs: object) -> list:
        threads.append(threading.current_thread().name)
        return search(*args, **kwargs)

    cases.search = traced  # type: ignore[method-assign]
    first = await cases.retrieve_cases("export invoices", scope=SCOPE)
    second = await cases.retrieve_cases("export invoices", scope=SCOPE)
    assert [c.id for c in first] == [c.id for c in second] and len(first) == 1
    assert threads[0] != threading.main_thread().name and threads[1] == threading.main_thread().name
