"""What a long session's indexes keep beside the history's own data (issue 32 item 5: "memory that stays flat"): BM25's
postings read out for a word every text holds once are the start of one shared run (0, 1, 2, ... and 1.0 each), not
16 bytes a text in each such word's arrays; turn recall keeps no terms by text beside its indexes."""

from __future__ import annotations

import asyncio
import gc
import types
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from components.context_window.recall.turns import TurnRecall
from components.context_window.relevance import BM25Index, terms
from tests.agent_session import question


def _own_bytes(index: BM25Index) -> int:
    """Bytes of the arrays the postings read out hold, each buffer once (a view counts its base)."""
    buffers = {}
    for rows, counts, _ in index._arrays.values():
        for view in (rows.view, counts.view):
            base = view.base if view.base is not None else view
            buffers[id(base)] = base.nbytes
    return sum(buffers.values())


def test_the_postings_of_words_every_text_holds_once_share_one_run():
    """A native session's questions share ~9 words ("turn", "order", "customer", ...): their postings, read out
    each turn, were 16 bytes a text per word (and up to twice that grown by doubling); now the shared runs'."""
    index = BM25Index()
    for turn in range(1, 1201):
        index.add([question(turn), f"Echo: {question(turn)}"])
        index.scores(question(turn))
    texts = len(index)
    common = [t for t in terms(question(1)) if len(index.rows(t)) == texts]
    assert len(common) >= 7
    assert _own_bytes(index) < 2 * 16 * 2 * texts  # the two runs (grown by doubling), and the few other words'
    for term in common:
        rows, counts = index._posting_arrays(term)
        assert rows.tolist() == list(range(texts)) and counts.tolist() == [1.0] * texts


_WORDS = ["alpha", "beta", "gamma", "delta"]


@settings(max_examples=120, deadline=None)
@given(
    st.lists(
        st.tuples(st.lists(st.lists(st.sampled_from(_WORDS), max_size=4), min_size=1, max_size=5), st.booleans()),
        min_size=1,
        max_size=15,
    )
)
def test_postings_read_out_as_texts_come_are_each_texts_own(steps: list[tuple[list[list[str]], bool]]):
    """Texts added in batches, each led by "alpha" (a word every text holds once, until a batch says it twice or
    leaves it out) and queried between batches: every word's rows and counts are the texts' own, whether they are
    still a shared run's start or were copied when a text broke it."""
    index, docs = BM25Index(), []
    for batch, twice in steps:
        texts = [" ".join(["alpha", *(["alpha"] if twice else []), *words]) for words in batch]
        if twice and len(batch) > 1:
            texts[-1] = " ".join(batch[-1]) or "zeta"
        index.add(texts)
        docs += [terms(text) for text in texts]
        for word in _WORDS:
            term = terms(word)[0]
            if term not in index:
                assert not any(term in d for d in docs)
                continue
            rows, counts = index._posting_arrays(term)
            assert rows.tolist() == [i for i, d in enumerate(docs) if term in d]
            assert counts.tolist() == [float(d.count(term)) for d in docs if term in d]
            assert not rows.flags.writeable and not counts.flags.writeable


class _Vectors:
    vector_space = "test-kept"

    async def embed(self, texts: list[str]) -> list[list[float]]:
        return [[1.0, float(len(text) % 7), float(sum(map(ord, text)) % 11)] for text in texts]


_CODE = (types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType, types.MethodType, types.CodeType)


def _held_beside_indexes(recall: TurnRecall) -> int:
    """Objects reachable from ``recall`` but through its indexes and the vectors shared by text (code and classes
    not followed)."""
    skipped = {id(recall._indexes), id(recall._vectors)}
    seen, stack = set(skipped), [value for value in vars(recall).values() if id(value) not in skipped]
    while stack:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, _CODE):
            continue
        seen.add(id(obj))
        stack.extend(gc.get_referents(obj))
    return len(seen) - len(skipped)


def test_turn_recall_keeps_no_terms_by_text_beside_its_indexes():
    """A session's turns searched one by one: what the recall holds beside its indexes does not grow with the turns
    (it kept each text's terms by session and key, up to 8,192 texts, used only when an index is built again); an
    index built again scores as the first."""
    recall = TurnRecall()
    turns: list[Any] = [((n, question(n)), question(n), (question(n),)) for n in range(1, 301)]

    def match(upto: int) -> Any:
        return asyncio.run(
            recall.match(
                "s",
                turns[:upto],
                "which orders of customer CUST-007 are open",
                shown=range(upto - 3, upto),
                candidates=range(upto - 3),
                embedder=_Vectors(),
            )
        )

    match(50)
    early = _held_beside_indexes(recall)
    for upto in range(51, 301, 25):
        first = match(upto)
    assert _held_beside_indexes(recall) == early
    assert recall.stats()["texts"] == 276
    recall.forget("s")
    assert match(276) == first
