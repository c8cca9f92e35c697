"""Issue 32 item 5 (native turns, turn 100 to 10,000): what turn recall does each turn for every earlier turn, cut to
what is new. Its gists are held widened (ranked without widening each row per query, the same cosines bit for bit),
and the lists of earlier turns are extended in place as read-only ``Prefix`` views (the turn index's, the searched
columns), so a turn neither copies them nor compares them with the last turn's item by item."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from components.context_window import relevance
from components.context_window.base import TurnRecord
from components.context_window.grown import Numbered, Prefix
from components.context_window.recall import turns as turn_recall
from components.context_window.recall.turns import SearchedTurns, TurnRecall, TurnText
from components.context_window.relevance import VectorIndex
from tda.recall.turns import TurnIndex
from tests.support import turn_row

KEY = ("s", "s@0")


# ---------------------------------------------------------------------------------------------
# Gists held widened
# ---------------------------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(batches=st.lists(st.integers(1, 700), min_size=1, max_size=8), seed=st.integers(0, 2**16))
def test_a_wide_index_scores_as_the_float16_one_bit_for_bit(batches, seed):
    """Across blocks' and widening chunks' edges, with components below float16's normal range: a wide index's
    cosines are the float16 index's exactly (the same rounded values, the same product), ``scores_at`` too."""
    rng = np.random.default_rng(seed)
    narrow, wide = VectorIndex(), VectorIndex(wide=True)
    for size in batches:
        rows = rng.normal(size=(size, 384)).astype(np.float32)
        rows[0, :3] = [1e-6, -3e-7, 0.0]
        narrow.add(rows)
        wide.add(rows)
    query = rng.normal(size=384)
    assert np.array_equal(wide.scores(query), narrow.scores(query))
    some = rng.integers(0, len(wide), size=5)
    assert np.array_equal(wide.scores_at(query, some), narrow.scores_at(query, some))
    assert np.array_equal(wide.matrix, narrow.matrix)
    assert wide.nbytes == 2 * narrow.nbytes


async def test_turn_recall_ranks_its_gists_without_widening_them(monkeypatch):
    """A turn ranks every earlier turn's gist: held widened, no row is widened again (on main every gist was, each
    query: ~1.7 ms of a turn's ~2.3 for 10,000 gists)."""
    embedder = _Embedder()
    recall = TurnRecall()
    texts = [TurnText(n, f"step {n} of the plan", (f"gist {n}",)) for n in range(60)]
    await recall.match("w", texts, "what was step 7", shown=[59], candidates=np.arange(59), embedder=embedder)
    widened = []
    monkeypatch.setattr(relevance, "widened", lambda *a: widened.append(1) or _widen(*a))
    found = await recall.match("w", texts, "what was step 7", shown=[59], candidates=np.arange(59), embedder=embedder)
    assert found.method == "lexical+dense"
    assert widened == []


_widen = relevance.widened


class _Embedder:
    model = "counted"

    async def embed(self, texts: list[str]) -> list[list[float]]:
        return [[float(len(t)), float(sum(map(ord, t)) % 97), 1.0] for t in texts]


# ---------------------------------------------------------------------------------------------
# Lists extended in place
# ---------------------------------------------------------------------------------------------


@settings(max_examples=80, deadline=None)
@given(steps=st.lists(st.tuples(st.integers(0, 5), st.integers(0, 3)), max_size=30))
def test_prefix_views_never_change_as_their_list_grows(steps):
    """However views are taken and extended (the newest view, or an older one: then a copy), each reads what it held
    when made, and ``extends`` holds exactly when one view starts with the other by construction."""
    views: list[tuple[Prefix[int], list[int]]] = [(Prefix([]), [])]
    for count, back in steps:
        view, items = views[-1 - min(back, len(views) - 1)]
        added = list(range(len(items), len(items) + count))
        newest = all(not other.extends(view) or len(other) == len(view) for other, _ in views)
        grown = view.appended(added)
        views.append((grown, items + added))
        assert grown.extends(view) == newest  # grown in place only from the list's whole view
    for view, items in views:
        assert list(view) == items and len(view) == len(items) and view == items and view.as_list() == items
        assert view[:] == items and view[1:3] == items[1:3] and view[-3:] == items[-3:]
        assert view[1:-1] == items[1:-1] and view[::-1] == items[::-1] and view[5:1:-2] == items[5:1:-2]
        if items:
            assert view[-1] == items[-1] and view[0] == items[0]
        with pytest.raises(IndexError):
            view[len(items)]
    for longer, items in views:
        for shorter, start in views:
            if longer.extends(shorter):
                assert items[: len(start)] == start


def _describe(turn: TurnRecord) -> Any:
    return (turn.turn, turn.query)


async def test_the_turn_index_extends_the_last_list_it_handed():
    """Each turn's list of earlier turns is the last one's and the turns since, in the same list (no copy of the
    session's every turn), and the one handed before reads as it did."""
    index = TurnIndex(db=None, embedder=lambda: None)  # type: ignore[arg-type]
    assert await index.described(KEY, None, 0, "k", _describe, before=0) == []
    for n in range(50):
        await index.recorded(KEY, turn_row(n))
    first = await index.described(KEY, None, 0, "k", _describe, before=50)
    await index.recorded(KEY, turn_row(50))
    second = await index.described(KEY, None, 0, "k", _describe, before=51)
    assert isinstance(second, Numbered) and second.extends(first)
    assert first == [(n, (n, f"q{n}")) for n in range(50)]
    assert second == [(n, (n, f"q{n}")) for n in range(51)]
    await index.recorded(KEY, turn_row(50, query="q50 again"))  # the newest turn extended: a new list from there
    third = await index.described(KEY, None, 0, "k", _describe, before=51)
    assert not third.extends(second) and third == [*first, (50, (50, "q50 again"))]
    assert second == [(n, (n, f"q{n}")) for n in range(51)]


def _text_of(described: Any) -> tuple[TurnText, int] | None:
    number, query = described
    return None if number % 3 == 0 else (TurnText(described, query), number)


async def test_searched_turns_read_only_what_the_list_added(monkeypatch):
    """Given the turn index's list grown by one turn, the searched columns are the last ones extended: nothing is
    compared item by item (``common_prefix`` is not called) and the last columns read as they did."""
    index = TurnIndex(db=None, embedder=lambda: None)  # type: ignore[arg-type]
    await index.described(KEY, None, 0, "k", _describe, before=0)
    searched = SearchedTurns(_text_of)
    for n in range(40):
        await index.recorded(KEY, turn_row(n))
    first = searched.of("s", await index.described(KEY, None, 0, "k", _describe, before=40))
    compared = []
    monkeypatch.setattr(turn_recall, "common_prefix", lambda *a: compared.append(a) or 0)
    await index.recorded(KEY, turn_row(40))
    second = searched.of("s", await index.described(KEY, None, 0, "k", _describe, before=41))
    assert compared == []
    assert list(first.numbers) == [n for n in range(40) if n % 3]
    assert list(second.numbers) == [n for n in range(41) if n % 3]
    assert second.texts.extends(first.texts) and second.numbers.extends(first.numbers)
    assert second.sizes.tolist() == list(second.numbers) and first.sizes.tolist() == list(first.numbers)


@settings(max_examples=60, deadline=None)
@given(
    steps=st.lists(
        st.tuples(st.integers(0, 4), st.integers(0, 3), st.booleans()),
        max_size=20,
    )
)
def test_searched_columns_are_those_made_afresh(steps):
    """Whatever the lists handed (grown as views or as plain lists, cut back, items described again), the columns
    are those made from the whole list each time, and columns handed earlier never change."""
    searched = SearchedTurns(_text_of)
    items: list[tuple[int, Any]] = []
    view = Prefix(items)
    handed = []
    for grow, cut, plain in steps:
        kept = items[: max(0, len(items) - cut)] if cut != 3 else items
        redescribed = [(n, (n, f"again {n}")) for n, _ in items[len(kept) : len(kept) + 1]]
        items = [*kept, *redescribed]
        items += [(n, (n, f"q{n}")) for n in range(len(items), len(items) + grow)]
        view = view.appended(items[len(view) :]) if cut == 3 and not redescribed else Prefix(list(items))
        found = searched.of("s", list(items) if plain else view)
        fresh = SearchedTurns(_text_of).of("s", list(items))
        handed.append((found, list(fresh.numbers), list(fresh.texts), fresh.rows.tolist(), fresh.sizes.tolist()))
    for found, numbers, texts, rows, sizes in handed:
        assert list(found.numbers) == numbers and list(found.texts) == texts
        assert found.rows.tolist() == rows and found.sizes.tolist() == sizes


async def test_an_earlier_turn_kept_for_workflow_history_is_not_walked_by_the_collector():
    """A session's every turn is kept described for its life: workflow_history's description is a tuple of strings
    and a number, which the collector stops tracking (a ``TurnText`` was tracked, and so was each tuple holding one:
    two objects more a turn for every full pass to walk)."""
    import gc

    from modules.workflow_history.handler import turn_described

    index = TurnIndex(db=None, embedder=lambda: None)  # type: ignore[arg-type]
    await index.described(KEY, None, 0, "workflow_history", turn_described, before=0)
    for n in range(20):
        await index.recorded(KEY, turn_row(n))
    listed = await index.described(KEY, None, 0, "workflow_history", turn_described, before=20)
    gc.collect()  # a tuple of atoms is let go at its first collection
    assert not any(gc.is_tracked(described) for _, described in listed)  # the list holds no pair: made when read
    record = TurnRecord(turn=3, query="q3", plan="")
    assert listed[3][1] == turn_described(record)
