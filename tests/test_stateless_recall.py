"""Stateless calls' recall indexes kept for the call that goes on from their conversation (``CallIndexes``): what
a kept index ranks is what a fresh one would, whatever the next conversation repeats, edits or adds."""

from __future__ import annotations

import asyncio
import hashlib

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from components.context_window.base import Message, Session
from components.context_window.recall.messages import CallIndexes, HistoryIndex, SessionRecall
from tests.test_history_recall import CountingEmbedder, HistoryEmbedder, planted


def _beginnings(messages: list[Message]) -> list[str]:
    """What the gateway names a conversation's beginnings by: a digest of its first ``n`` messages, each ``n``."""
    out, h = [hashlib.sha256().hexdigest()], hashlib.sha256()
    for m in messages:
        h.update(repr((m.role, m.content, m.tool_calls, m.tool_call_id)).encode())
        out.append(h.hexdigest())
    return out


async def _answers(recall: SessionRecall, messages: list[Message], query: str) -> tuple:
    """What a window reads of the index: the lead of the older half and the ranking before the newest two."""
    session = Session("", messages=messages)
    lead = await recall.lead(session, query, split=len(messages) // 2)
    ranking = await recall.recall(session, query, before=len(messages) - 2, enough_tokens=10_000)
    return lead, [(u.position, u.messages, round(u.score, 12)) for u in ranking.units], ranking.method, ranking.reason


CALL = st.tuples(
    st.integers(0, 3),  # which earlier call's conversation this one goes on from (or edits)
    st.integers(0, 6),  # how many messages it adds
    st.one_of(st.none(), st.integers(0, 40)),  # where it edits one (None: it only goes on)
)


@settings(max_examples=30, deadline=None)
@given(st.lists(CALL, min_size=2, max_size=6), st.booleans())
async def test_a_call_going_on_from_an_earlier_calls_index_ranks_as_a_fresh_index_would(calls, lying_names):
    """Stateless calls going on from each other's conversations, editing them or branching: each ranks exactly as
    an index built afresh from its conversation would. Even when the names of the beginnings say a changed one is
    the same (``lying_names``: named by length alone), the messages are what counts."""
    said = [f"{w} item {i} about {w}s and {'xyz'[i % 3]}." for i, w in enumerate(["dog", "tea", "sail", "fog"] * 15)]
    service = SessionRecall(CountingEmbedder())
    sent: list[list[Message]] = [[]]
    for source, added, edit in calls:
        messages = list(sent[source % len(sent)])
        start = len(messages)
        messages += [Message("user" if (start + i) % 2 == 0 else "assistant", said[start + i]) for i in range(added)]
        if edit is not None and messages:
            at = edit % len(messages)
            messages[at] = Message(messages[at].role, "edited: the greyhound Biscuit sails")
        if len(messages) < 4:
            continue
        names = [str(n) for n in range(len(messages) + 1)] if lying_names else _beginnings(messages)
        one = service.for_one_call(names)
        got = await _answers(one, messages, "dog sails greyhound")
        one.call_done()
        assert got == await _answers(SessionRecall(CountingEmbedder()), list(messages), "dog sails greyhound")
        sent.append(messages)


async def test_a_call_going_on_from_an_earlier_one_indexes_only_what_it_added():
    """A stateless client sends its conversation again, one exchange longer: the index the last call built is gone on
    from (its messages are not indexed again), and one call at a time holds it."""
    embedder, messages = HistoryEmbedder(), planted(40)
    service = SessionRecall(embedder)
    first = service.for_one_call(_beginnings(messages[:-2]))
    await first._synced(Session("", messages=messages[:-2]))  # as a call does: it waits a moment for the vectors
    (built,) = first._indexes.values()
    first.call_done()
    second = service.for_one_call(_beginnings(messages))
    assert service.for_one_call(_beginnings(messages))._indexes.get("") is None  # taken by the second call
    await second.sync(Session("", messages=messages))
    assert second._indexes.get("") is built and len(built) == len(messages)
    second.call_done()
    assert len(service.call_indexes) == 1  # kept again, under the longer conversation's name


def test_the_indexes_kept_for_later_calls_are_bounded_in_number_and_memory():
    def index_of(chars: int) -> HistoryIndex:
        index = HistoryIndex(session_id="")
        index.add([Message("user", "x" * chars)])
        return index

    kept = CallIndexes(max_entries=3, max_bytes=10_000)
    for n in range(5):
        kept.keep(f"k{n}", index_of(1_000))
    assert len(kept) == 3 and kept.take(["", "k0"]) is None and kept.take(["", "k4"]) is not None
    kept.keep("big", index_of(6_000))  # over half of the memory: never kept
    assert kept.take(["", "big"]) is None
    for n in range(5):
        kept.keep(f"m{n}", index_of(4_000))
    assert kept.held_bytes <= 10_000 and len(kept) == 2


class SlowEmbedder(HistoryEmbedder):
    """Takes longer over a batch than a stateless call waits for its vectors."""

    async def embed(self, texts):
        await asyncio.sleep(0.05)
        return await super().embed(texts)


async def test_a_conversation_sent_again_and_again_is_embedded_once_though_every_call_stops_waiting():
    """A stateless client sends the same long conversation call after call, each call's vectors job cancelled before
    a batch is done (``vectors_wait_s``): the batches under way still land, a call finds the texts another is
    embedding and waits for them rather than embedding them again, and the calls come to rank by meaning."""
    embedder, messages = SlowEmbedder(), planted(100)
    service = SessionRecall(embedder, vectors_wait_s=0.01)
    methods = []
    for _ in range(12):
        one = service.for_one_call(_beginnings(messages))
        ranking = await one.recall(Session("", messages=messages), "greyhound", before=len(messages), enough_tokens=100)
        one.call_done()
        methods.append(ranking.method)
        await asyncio.sleep(0.02)
    history = embedder.history()
    assert len(history) == len(set(history)) and history  # no text embedded twice
    assert methods[0] == "lexical" and methods[-1] == "lexical+dense"


async def test_texts_a_job_finished_embedding_after_the_caller_looked_are_not_embedded_again():
    """A call looks up the vectors it has, then awaits (the store, an earlier batch) before it embeds the rest; a job
    that ends meanwhile has kept its texts' vectors and let go of them as "being embedded". The call embedded them
    again: a whole batch of 64, about once in 60 runs of the test above on a loaded machine (CI, load 10)."""
    embedder = HistoryEmbedder()
    service = SessionRecall(embedder)
    first = await service._embedded(["a dog", "a greyhound"])  # another call's job, done after this one looked
    again = await service._embedded(["a dog", "a greyhound"])
    assert embedder.texts == ["a dog", "a greyhound"]
    assert all(np.array_equal(first[t], again[t]) for t in first)


class StuckEmbedder(HistoryEmbedder):
    """Never done with a batch: its job ends only by being cancelled."""

    async def embed(self, texts):
        await asyncio.Event().wait()


async def test_a_call_whose_vectors_job_is_cancelled_while_it_waits_ranks_by_words():
    """A stateless call's vectors job is cancelled at ``vectors_wait_s``, the moment the call stops waiting for it;
    whichever of the two comes first (on a loaded machine, the cancellation), the call ranks by words. It failed
    with the job's CancelledError."""
    messages = planted(100)
    session = Session("", messages=messages)
    one = SessionRecall(StuckEmbedder(), vectors_wait_s=60).for_one_call(_beginnings(messages))
    call = asyncio.create_task(one.recall(session, "greyhound", before=len(messages), enough_tokens=100))
    index = one.index_of(session)
    while index.vectoring is None:  # the call has read the history and started the job
        await asyncio.sleep(0)
    for _ in range(20):  # the call goes on to wait for the job (the embedder never ends it)
        await asyncio.sleep(0)
    assert not call.done()
    index.vectoring.cancel()  # as its timer does
    ranking = await asyncio.wait_for(call, 30)
    assert ranking.method == "lexical" and ranking.units


async def test_a_conversation_resent_while_it_is_embedded_is_not_indexed_again():
    """A stateless client sends the same long conversation again while its vectors are still being embedded (each
    call's job stops before they are all in): the next call goes on from the index the last one built, rather than
    indexing every message's words again (~20 ms of CPU a call at 400 messages), and no text is embedded twice. On
    main an index was kept only once every message had its vectors."""
    embedder, messages = SlowEmbedder(), planted(100)
    service = SessionRecall(embedder, vectors_wait_s=0.01)
    session = Session("", messages=messages)
    first = service.for_one_call(_beginnings([*messages, Message("user", "next")]))
    await first.recall(session, "greyhound", before=len(messages), enough_tokens=100)
    (built,) = first._indexes.values()
    assert built.vectored < len(built)  # its job stopped before the vectors were in
    first.call_done()
    assert len(service.call_indexes) == 1
    again = [*messages, Message("user", "next")]
    second = service.for_one_call(_beginnings([*again, Message("assistant", "so")]))
    await second.recall(Session("", messages=again), "greyhound", before=len(again), enough_tokens=100)
    assert second._indexes.get("") is built and len(built) == len(again)
    second.call_done()
    await asyncio.gather(*set(service._embedding.values()))
    history = embedder.history()
    assert len(history) == len(set(history))


@settings(max_examples=10, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=3, max_size=10))
async def test_a_call_going_on_from_an_index_left_unvectored_ranks_as_a_fresh_index_would(added):
    """Calls resending a long conversation (a few messages longer each time, or the same), each call's vectors job
    stopped before it is done: a service that goes on from the index the last call left ranks each call exactly as
    one that builds every call's index afresh, given the same texts embedded by then (each call's batches land before
    the next call), down to the call that embeds the last few in the turn and ranks by meaning."""
    said = [f"{w} item {i} about {w}s and {'xyz'[i % 3]}." for i, w in enumerate(["dog", "tea", "sail", "fog"] * 40)]
    keeping = SessionRecall(SlowEmbedder(), vectors_wait_s=0.01)
    fresh = SessionRecall(SlowEmbedder(), vectors_wait_s=0.01)
    fresh.call_indexes = CallIndexes(max_entries=0)  # keeps nothing: every call's index is built afresh
    messages = [Message("user" if i % 2 == 0 else "assistant", said[i]) for i in range(100)]
    methods = []
    for n in [*added, *[0] * 4]:
        start = len(messages)
        messages = messages + [Message("user" if i % 2 == 0 else "assistant", said[i]) for i in range(start, start + n)]
        got = []
        for service in (keeping, fresh):
            one = service.for_one_call(_beginnings([*messages, Message("user", "more")]))
            got.append(await _answers(one, messages, "dog sails greyhound"))
            one.call_done()
            await asyncio.gather(*set(service._embedding.values()))  # the batches under way land before the next call
        assert got[0] == got[1]
        methods.append(got[0][2])
    assert len(keeping.call_indexes) == 1 and methods[-1] == "lexical+dense"
