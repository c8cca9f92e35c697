"""What a long session's indexes hold per turn, and where (issue 32 item 5: "memory that stays flat";
docs/history/benchmarks-log.md, "Session 47 (memflat9)"): buffers grown a turn at a time mapped apart from the heap,
BM25's postings at 12 bytes, a turn's description holding its strings once; session 51: a stored history's messages held
packed by its recall index."""

from __future__ import annotations

import gc
import hashlib
import mmap
import weakref
from array import array
from collections import Counter

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from components.context_window import mapped
from components.context_window.base import InMemoryMessages, Message, Session, TurnRecord
from components.context_window.recall.messages import HistoryIndex, SessionRecall
from components.context_window.recall.packed import PackedMessages
from components.context_window.relevance import BM25Index, DigestTable, GrowingArray, PartRuns, terms
from modules.workflow_history.handler import turn_described
from tests.agent_session import question

_MAPPING = mmap.mmap


def _mapping_of(array: np.ndarray) -> mmap.mmap | None:
    """The memory mapping ``array``'s items live in (through its views and buffers), or None (numpy's heap)."""
    base = array
    while base is not None:
        if isinstance(base, _MAPPING):
            return base
        base = base.obj if isinstance(base, memoryview) else getattr(base, "base", None)
    return None


def test_a_buffer_grown_past_the_bound_is_a_mapping_of_its_own_and_the_one_it_replaced_is_unmapped():
    """A column a session lengthens by an item a turn: once its buffer holds ``MAPPED_FROM`` bytes it is mapped apart
    (its unwritten half not resident, no hole left in the heap when it moves on), and a buffer it outgrew is given
    back as soon as no view handed out holds it."""
    column = GrowingArray(np.intp)
    for turn in range(mapped.MAPPED_FROM // 8):
        column.extend(np.array([turn]))
    assert len(column) * 8 >= mapped.MAPPED_FROM
    outgrown = weakref.ref(_mapping_of(column.view))
    handed = column.view
    column.extend(np.arange(len(column)))  # past its capacity: a new, larger buffer
    assert _mapping_of(column.view) is not outgrown()
    assert handed[-1] == mapped.MAPPED_FROM // 8 - 1 and outgrown() is not None  # a view keeps its buffer
    del handed
    gc.collect()
    assert outgrown() is None
    assert np.array_equal(column.view, np.r_[np.arange(mapped.MAPPED_FROM // 8), np.arange(mapped.MAPPED_FROM // 8)])


def test_small_buffers_stay_in_the_heap():
    """Under the bound a page's rounding would cost more than a hole: numpy's own buffer."""
    assert _mapping_of(mapped.empty(mapped.MAPPED_FROM // 8 - 1, np.int64)) is None
    assert _mapping_of(mapped.copied(range(10), np.float64)) is None
    assert _mapping_of(mapped.empty(mapped.MAPPED_FROM // 8, np.int64)) is not None


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.integers(-(2**40), 2**40), max_size=3000), min_size=1, max_size=8))
def test_a_growing_array_reads_as_its_items_whatever_the_batches_and_keeps_each_view(batches):
    column, views, items = GrowingArray(np.int64), [], []
    for batch in batches:
        column.extend(np.asarray(batch, np.int64))
        items += batch
        views.append((column.view, list(items)))
    assert column.view.tolist() == items
    assert all(view.tolist() == held for view, held in views)


def _sorted_in(texts: list[str]) -> BM25Index:
    """An index of ``texts`` whose postings are sorted in (a long history's first query scans; the next turn's, with
    a text more, sorts)."""
    index = BM25Index(texts[:-1])
    index.scores("open order")
    index.add(texts[-1:])
    index.scores("open order")
    return index


def test_the_large_arrays_made_again_whole_are_mapped_apart():
    """BM25's merged postings and a digest table's sorted arrays are made again whole as they grow: mapped apart."""
    index = _sorted_in([f"order {i} of customer cust-{i} is open" for i in range(20_000)])
    keys, counts = index._main
    assert _mapping_of(keys) is not None and _mapping_of(counts) is not None
    table = DigestTable()
    for i in range(5_000):
        table.put(hashlib.blake2b(str(i).encode(), digest_size=16).digest(), i)
    assert _mapping_of(table._digests) is not None
    assert table.get(hashlib.blake2b(b"4321", digest_size=16).digest()) == 4321


def test_bm25_holds_a_posting_in_12_bytes():
    """A session's postings are held for its life: a sorted key (term and row, 8 bytes) and the term's count in
    that text (4 bytes, not a float64)."""
    index = _sorted_in([question(turn) for turn in range(2_000)])
    keys, counts = index._main
    assert len(keys) > 10_000 and (keys.nbytes + counts.nbytes) / len(keys) <= 12


_WORDS = st.sampled_from(["order", "orders", "open", "customer", "late", "paid", "refund", "ship", "shipped", "box"])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(_WORDS, min_size=1, max_size=30).map(" ".join), min_size=1, max_size=60), _WORDS)
def test_the_counts_read_out_are_each_texts_own_as_float64(texts, word):
    """Held as integers, read out as float64: scoring sees the same figures as before (a term's count in a text)."""
    index = BM25Index()
    for start in range(0, len(texts), 7):  # added in batches: the sorted tail and the merged arrays both read
        index.add(texts[start : start + 7])
        index.scores(word)
    term = terms(word)[0]
    rows, counts = index._posting_arrays(term)
    expected = {row: Counter(terms(text))[term] for row, text in enumerate(texts) if term in terms(text)}
    assert counts.dtype == np.float64
    assert dict(zip(rows.tolist(), counts.tolist(), strict=True)) == expected


def _strings(described: object) -> set[int]:
    """The string objects a description holds (each once, by identity)."""
    found, stack = set(), [described]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            found.add(id(item))
        elif isinstance(item, tuple):
            stack.extend(item)
    return found


def test_a_turn_without_a_plan_holds_its_query_once():
    """A native session's turn is kept described for the session's life: the text searched by words and the gist
    embedded are one string (three copies of the query before), keyed by the turn's number."""
    turn = TurnRecord(turn=7, query=question(7), plan="")
    key, text, gist = turn_described(turn)
    assert key == 7 and text == turn.query and gist is text


def test_a_turn_with_a_plan_is_its_number_text_and_gist():
    """With a plan, the description holds its number, the text and the gist, nothing else (no key tuple, no tuple of
    parts); turn recall tells a changed turn by its text (tests/test_turn_recall_by_number.py)."""
    turn = TurnRecord(turn=3, query="Which invoices are late?", plan="1. list invoices\n2. filter by date")
    described = turn_described(turn)
    assert described == (3, f"{turn.query}\n{turn.plan}", "Which invoices are late? 1. list invoices")
    assert len(_strings(described)) == 2


def _integer_columns(index: HistoryIndex) -> list[list[int]]:
    """Every integer column the index holds directly (``array`` s, numpy arrays, growing buffers, a part-runs
    table's), as lists."""
    found: list[list[int]] = []
    for value in vars(index).values():
        held = [value] if not isinstance(value, PartRuns) else list(vars(value).values())
        for item in held:
            if isinstance(item, GrowingArray):
                item = item.view
            if isinstance(item, array) or (isinstance(item, np.ndarray) and item.dtype.kind == "i"):
                found.append(list(item))
    return found


def test_each_per_message_column_is_held_once():
    """A session's index holds a column per message (its speaker, its unit) and per part (its vector's row) for the
    session's life: once, not as an ``array`` and a numpy mirror of it, whatever recall asked (ranked by words and
    meaning, about a speaker, units gathered)."""
    messages, vectors = [], []
    for turn in range(300):
        call = {"id": f"c{turn}", "type": "function", "function": {"name": "look", "arguments": "{}"}}
        messages += [
            Message("user", f"Maya: where is order {turn}?"),
            Message("assistant", "", tool_calls=(call,)),
            Message("tool", f"order {turn} ships on day {turn % 7}", tool_call_id=f"c{turn}"),
            Message("assistant", f"Theo: it ships on day {turn % 7}"),
        ]
        vectors += [[[1.0, turn % 5, 2.0]], [], [[0.5, 1.0, turn % 3]], [[2.0, 0.0, turn % 11]]]
    index = HistoryIndex()
    index.add(messages, vectors)
    about = index.asked_about("What did Maya say about order 12?")
    index.rank("What did Maya say about order 12?", np.array([1.0, 2.0, 0.0]), len(messages), about=about)
    index.unit_firsts(np.arange(len(messages)))
    index.dense_scores(np.array([1.0, 2.0, 0.0]), len(messages))
    columns = _integer_columns(index)
    for column in (list(index.said_by), list(index.unit_of), list(index.row_of)):
        assert columns.count(column) == 1
    assert index.unit_of[:4].tolist() == [0, 1, 1, 3] and {"Maya", "Theo"} <= index.speakers


def test_a_buffer_comes_from_the_heap_when_no_mapping_can_be_made(monkeypatch):
    """A process out of mappings (``vm.max_map_count``) still grows its buffers: from the heap, as before."""

    def refused(*args: object, **kwargs: object) -> mmap.mmap:
        raise OSError(12, "Cannot allocate memory")

    monkeypatch.setattr(mapped.mmap, "mmap", refused)
    column = GrowingArray(np.intp, range(mapped.MAPPED_FROM))
    column.extend(np.arange(10))
    assert _mapping_of(column.view) is None and column.view[-1] == 9 and len(column) == mapped.MAPPED_FROM + 10


class _StoredMessages(InMemoryMessages):
    """A versioned history, as the application's store gives (its messages the store's, read again on demand)."""

    version = "v1"


def _stored_turns(turns: int) -> list[Message]:
    """A native session's history: a question and its answer a turn, each with its stored counts, a tool call and its
    result now and then."""
    messages: list[Message] = []
    for turn in range(1, turns + 1):
        messages.append(Message("user", f"{question(turn)} (ticket {turn}, naïve café ✓)", turn, tokens={"o200k": 9}))
        if turn % 7 == 0:
            call = {
                "id": f"c{turn}",
                "type": "function",
                "function": {"name": "lookup", "arguments": f'{{"n": {turn}}}'},
            }
            messages.append(Message("assistant", "", turn, tool_calls=(call,)))
            messages.append(
                Message("tool", f"order {turn} shipped", turn, tool_call_id=f"c{turn}", tokens={"o200k": 6})
            )
        messages.append(Message("assistant", f"Order {turn} is open; customer cust{turn % 13} asked.", turn))
    return messages


async def test_a_stored_historys_recall_index_holds_no_plain_message():
    """A native session's recall index, synced with its stored history and recalled from, keeps none of the plain
    messages it read alive (their texts are held packed, a unit made again when gathered: 2 ``Message``s a turn, ~0.7
    KB with their texts, were held for the session's life); what it recalls is each unit's messages as stored."""
    stored = _stored_turns(300)
    recall = SessionRecall()
    session = Session(id="native", history=_StoredMessages(tuple(stored)))
    ranking = await recall.recall(session, "Is order 137 for cust7 still open?", before=len(stored), enough_tokens=600)
    assert len(ranking.units) > 5
    for unit in ranking.units:  # a message, or a tool call and its result after it
        held = stored[unit.position : unit.position + len(unit.messages)]
        assert unit.messages == tuple(held) and [m.tokens for m in unit.messages] == [m.tokens for m in held]
    plain = [weakref.ref(m) for m in stored if not m.tool_calls and m.tool_call_id is None]
    del stored, session, ranking, unit, held
    gc.collect()
    assert recall.index_of(Session(id="native")).messages[0].content.startswith(question(1))
    assert sum(ref() is not None for ref in plain) == 0


_MESSAGES = st.lists(
    st.builds(
        Message,
        st.sampled_from(["system", "user", "assistant", "tool"]),
        st.text(max_size=40),
        st.integers(0, 2**40),
        st.booleans(),
        st.just(()),
        st.none() | st.just("c1"),
        st.none() | st.sampled_from(["Maya", "Theo"]),
        st.none() | st.just("plan"),
        st.none() | st.dictionaries(st.sampled_from(["o200k", "cl100k"]), st.integers(0, 10**6), max_size=2),
    ),
    max_size=30,
)


@settings(max_examples=100, deadline=None)
@given(st.lists(_MESSAGES, max_size=5))
def test_packed_messages_read_as_the_messages_appended(batches):
    """Whatever the batches (texts of any characters, turns of any size, a name, a phase, counts or none): each
    message read back is equal to the one appended, its counts too, its role and text read alone the same."""
    packed, appended = PackedMessages(), []
    for batch in batches:
        packed.extend(batch)
        appended += batch
    assert len(packed) == len(appended) and list(packed) == appended and packed == appended
    assert [m.tokens for m in packed] == [m.tokens for m in appended]
    assert [packed.role(i) for i in range(len(packed))] == [m.role for m in appended]
    assert [packed.content(i) for i in range(len(packed))] == [m.content for m in appended]
    if appended:
        assert packed[-1] == appended[-1] and packed[1:3] == appended[1:3]
