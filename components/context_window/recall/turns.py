"""Recall of earlier turns by relevance: what plan_hydration (old tool results) and workflow_history (turn lines)
bring back once a turn is out of their usual reach.

A pure module over the relevance engine (``relevance.py``). A module describes each turn it may recall as a
``TurnText`` (a key naming the turn, its number, the text searched by words, the short parts embedded);
``TurnRecall.match`` keeps one index per session, keyed by turn, that texts are added to once, at the first call that
hands them (a turn handed with another text is added again; vectors cached by text: nothing is stemmed or embedded
twice), and says which of the ``candidates`` match the query *clearly*:

* by words: the candidate holds at least ``MIN_MATCH`` of the query's distinctive words (by idf, counting the
  words that occur in some indexed turn), two of them or ``MIN_SHARE`` of all of them, and its BM25 score is
  ``LEXICAL_LEAD`` times the best of the turns the window shows anyway (``shown``), or
* by meaning (with an embedder): its best part's cosine is at least ``MIN_COSINE`` and beats the shown turns' best
  by ``DENSE_LEAD``.

So a question that goes on with what the window shows recalls nothing, and neither does one about something no
turn holds; then ``TurnMatches.reason`` says why (the snapshot shows it). The clear matches come back best first,
by reciprocal-rank fusion of the two signals. Every statistic (BM25's document count, lengths and frequencies, the
word shares) is taken over the texts handed in alone, never over others the index holds from earlier calls (turns
that changed, or slid out of a service's newest turns): the same inputs always rank the same way.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field, replace
from itertools import repeat
from typing import Any, ClassVar, Final, Generic, NamedTuple, TypeVar

import numpy as np

from ..base import AssemblyContext, D, Embedder, TurnRecord, vector_space
from ..fitting import clip
from ..grown import Joined, Numbered, Prefix, number_prefix
from ..relevance import (
    TAKEN_VECTORS_BYTES,
    VECTORS_BY_TEXT_BYTES,
    BM25Index,
    Floor,
    GrowingArray,
    PartRuns,
    VectorIndex,
    fuse,
    terms,
)
from ..session_cache import BoundedCache, VectorsByText

MIN_MATCH = 0.5
"""Share of the query's distinctive words (idf-weighted) a candidate must hold to match by words: one common word
in common ("data", "show") is not a match."""
MIN_SHARE = 0.25
"""A candidate sharing a single word with the query must also hold this share of all the query's words (idf-weighted;
a word no turn holds weighs as the rarest): a long question sharing one word with a turn ("team") is about something
else, while "what was the revenue?" is about the one turn that holds "revenue"."""
LEXICAL_LEAD = 1.2
"""A candidate's BM25 score over the best shown turn's, to be worth recalling (as conversation_history's lead)."""
MIN_COSINE = 0.35
"""Least cosine with the query for a match by meaning. MiniLM on bench/tool_recall_bench.py: questions unrelated to any
turn reach 0.31 at most, questions about a turn score 0.3-0.9 with it (most above 0.4)."""
DENSE_LEAD = 0.03
"""A candidate's cosine over the best shown turn's, to be worth recalling (as conversation_history's lead)."""
EMBED_BATCH = 64
COMPACT_FACTOR, COMPACT_SLACK = 2, 256
"""An index holding more than twice the texts asked about (plus this slack) is rebuilt from the cached terms: a
service that hands the newest turns only, or turns that changed, leave texts behind."""
EMBED_PER_CALL = 64
"""Parts embedded at most in one call when many are new (a long session's first turn): the rest follow on the next
calls, by words only meanwhile. Measured: 64 short parts take ~0.3-1 s with minilm-int8 on the shared 2-core machine,
within the 2 s a module may take."""
M = TypeVar("M")
T = TypeVar("T")
GIST_CHARS = 300
"""Characters of a turn's gist embedded (a query and a plan step: what the turn is about)."""


def turn_gist(turn: TurnRecord) -> str:
    """What a turn is about, as embedded by both modules (one text, so one vector): its query and its plan's first
    step, on one line."""
    first_step = turn.plan.strip().splitlines()[0] if turn.plan.strip() else ""
    return clip(f"{turn.query} {first_step}", GIST_CHARS)


async def earlier_described(
    ctx: AssemblyContext, kind: str, describe: Callable[[TurnRecord], D]
) -> Sequence[tuple[int, D]]:
    """The descriptions of the session's valid, visible turns older than those the module was handed
    (``AssemblyContext.earlier_turns``; none for a library call, which hands every turn). ``describe`` must be the
    same function every call (a module-level one): the application keeps what it made by it."""
    if ctx.earlier_turns is None or not ctx.session.turns:
        return []
    before = min(t.turn for t in ctx.session.turns)
    return await ctx.earlier_turns.described(kind, describe, before=before)


async def described_turns(
    ctx: AssemblyContext, kind: str, describe: Callable[[TurnRecord], D]
) -> Sequence[tuple[int, D]] | None:
    """Every valid, visible turn of the session as the application keeps it described (``earlier_turns``), those
    handed included: each was described once, as it was recorded, so nothing is keyed or read again per turn.
    ``None`` without such an application (a library call): the module describes the turns it was handed."""
    if ctx.earlier_turns is None or not ctx.session.turns:
        return None
    return await ctx.earlier_turns.described(kind, describe, before=max(t.turn for t in ctx.session.turns) + 1)


async def with_records(ctx: AssemblyContext, chosen: list[tuple[TurnRecord | int, M]]) -> list[tuple[TurnRecord, M]]:
    """``chosen`` with each older turn (a number) replaced by its whole record, read in one call; a turn that is no
    longer valid or visible is left out."""
    numbers = [ref for ref, _ in chosen if isinstance(ref, int)]
    if not numbers or ctx.earlier_turns is None:
        return [(ref, m) for ref, m in chosen if not isinstance(ref, int)]
    records = {r.turn: r for r in await ctx.earlier_turns.records(numbers)}
    out = []
    for ref, m in chosen:
        record = records.get(ref) if isinstance(ref, int) else ref
        if record is not None:
            out.append((record, m))
    return out


class TurnText(NamedTuple):
    """One recallable turn as a module sees it. ``TurnRecall`` reads any tuple of these three fields
    (``TurnFields``): a session keeps its earlier turns as plain tuples of strings, which the cycle collector stops
    tracking (it never stops tracking a NamedTuple's instances, one more object a turn in every full pass)."""

    key: Hashable
    """The turn's number (or anything naming the turn): a key handed again with another text or other parts is a new
    text in the index, so a changed turn is searched as it is now."""
    text: str
    """Searched by words (BM25)."""
    parts: tuple[str, ...] | str = ()
    """Embedded, each alone; a turn matches by its best part (the query, a result's name and columns, ...). A single
    part may be the ``str`` itself (a turn's gist: no tuple a turn for a session's life)."""


TurnFields = tuple[Hashable, str, tuple[str, ...] | str]
"""A ``TurnText``'s fields, in its order: key, text, parts."""
KEY: Final = 0
TEXT: Final = 1
PARTS: Final = 2


def parts_of(fields: TurnFields) -> tuple[str, ...]:
    """A text's parts, a single one held as its ``str`` included."""
    parts = fields[PARTS]
    return (parts,) if isinstance(parts, str) else parts


@dataclass(frozen=True, eq=False)
class Searched:
    """The turns a module searches, in columns made from the application's described list (``source``)."""

    source: Sequence[tuple[int, Any]]
    rows: np.ndarray
    """Per searched turn, its position in ``source``."""
    numbers: Prefix[int]
    """Each searched turn's number, oldest first (machine integers, read as ``int``)."""
    texts: Prefix[TurnFields]
    sizes: np.ndarray
    """Each searched turn's size, as its module measures it (plan_hydration: its results' characters)."""
    grown: tuple[GrowingArray, GrowingArray] = field(repr=False)
    """What ``rows`` and ``sizes`` are views of: the next turn's columns extend them in place."""


class SearchedTurns(Generic[D]):
    """Per session, the turns ``described`` lists that a module searches, as ``Searched`` columns. A session's list
    only grows, most turns (the same items, the newest maybe described again as its tool loop went on, and the turns
    recorded since): only the items past what the last list had in common with it are read, and the columns are
    extended in place (views of lists and arrays that only grow, ``Prefix`` and ``GrowingArray``), so a turn costs
    the same at the 10,000th turn as at the 100th: nothing is copied or compared whole when the service's list
    extends the last one (``Prefix.extends``)."""

    def __init__(self, text_of: Callable[[D], tuple[TurnFields, int] | None], max_sessions: int = 64) -> None:
        self._text_of = text_of
        """A description's searched text and size; ``None``: the turn is not searched."""
        self._last: BoundedCache[str, Searched] = BoundedCache(max_sessions)

    def of(self, session_id: str, described: Sequence[tuple[int, D]]) -> Searched:
        last = self._last.get(session_id)
        held = shared_start(described, last.source) if last is not None else 0
        added = [
            (i, n, found) for i, (n, d) in enumerate(described[held:], held) if (found := self._text_of(d)) is not None
        ]
        rows = np.fromiter((i for i, _, _ in added), dtype=np.int64, count=len(added))
        numbers, texts = [n for _, n, _ in added], [text for _, _, (text, _) in added]
        sizes = np.fromiter((size for _, _, (_, size) in added), dtype=np.int64, count=len(added))
        kept = int(np.searchsorted(last.rows, held)) if last is not None and held else 0  # columns of items still there
        if last is not None and kept and kept == len(last.numbers):  # the list only grew: its columns are extended
            columns = _extended(last, described, rows, numbers, texts, sizes)
        else:
            if last is not None and kept:
                numbers, texts = [*last.numbers[:kept], *numbers], [*last.texts[:kept], *texts]
                rows, sizes = np.concatenate([last.rows[:kept], rows]), np.concatenate([last.sizes[:kept], sizes])
            grown = (GrowingArray(np.int64, rows), GrowingArray(np.int64, sizes))
            columns = Searched(described, grown[0].view, number_prefix(numbers), Prefix(texts), grown[1].view, grown)
        return self._last.put(session_id, columns)

    def forget(self, session_id: str) -> None:
        self._last.discard(session_id)


def _extended(
    last: Searched,
    source: Sequence[tuple[int, Any]],
    rows: np.ndarray,
    numbers: list[int],
    texts: list[TurnFields],
    sizes: np.ndarray,
) -> Searched:
    """``last``'s columns with those of the items ``source`` added, in place (what ``last`` shows does not change)."""
    grown_rows, grown_sizes = last.grown
    grown_rows.extend(rows)
    grown_sizes.extend(sizes)
    appended_numbers, appended_texts = last.numbers.appended(numbers), last.texts.appended(texts)
    return Searched(source, grown_rows.view, appended_numbers, appended_texts, grown_sizes.view, last.grown)


@dataclass(frozen=True, slots=True)
class Match:
    position: int
    """The candidate's position in the texts handed to ``match``."""
    score: float
    """Fused relevance (reciprocal-rank fusion of the signals it matched by)."""
    coverage: float
    """Share of the query's distinctive words it holds (idf-weighted)."""
    lexical_lead: float
    """Its BM25 score over the best shown turn's (``inf`` when no shown turn shares a word)."""
    dense_lead: float | None
    """Its cosine minus the best shown turn's (``None`` without an embedder)."""
    cosine: float | None = None
    """Its best part's cosine with the query (``None`` without an embedder)."""

    def why(self) -> str:
        """The lead that made it a match, in words a snapshot reader can check."""
        lexical = "no shown turn" if self.lexical_lead == float("inf") else f"x{self.lexical_lead:.2f} the shown"
        words = f"{self.coverage:.0%} of the question's distinctive words, {lexical} by BM25"
        if self.dense_lead is None or self.cosine is None:
            return words
        return f"{words}, meaning {self.cosine:.2f} ({self.dense_lead:+.2f} on the shown)"


@dataclass(frozen=True)
class TurnMatches:
    matches: tuple[Match, ...]
    """Clear matches, best first."""
    method: str
    """The signals used: "lexical" or "lexical+dense"."""
    reason: str | None = None
    """Why nothing matched (``None`` when something did)."""
    searched: int = 0
    """How many candidates were compared."""
    pending: int = 0
    """Parts of earlier turns still to embed (a long session met for the first time): matched by words only until
    they are, ``EMBED_PER_CALL`` more each call."""


SEEN_LISTS = 8
"""Lists of texts remembered per index (a module or two search each session)."""
SPARSE = 4_096
"""A number key more than this past the highest held is kept in the dict: numbers are a session's turns, 0, 1, 2..."""


class _Places:
    """Where each key's text is in an index: a turn's number (most keys) in machine integers by number, 8 bytes a turn
    (a dict's slot and a boxed position were ~70), any other key in a dict."""

    __slots__ = ("_by_number", "_other")

    def __init__(self) -> None:
        self._by_number = array("q")
        """Per number, its text's position (-1: none)."""
        self._other: dict[Hashable, int] = {}

    def get(self, key: Hashable) -> int:
        """The position of ``key``'s newest text (-1: none)."""
        if type(key) is int and 0 <= key < len(self._by_number) and (at := self._by_number[key]) >= 0:
            return at
        return self._other.get(key, -1)

    def set(self, key: Hashable, position: int) -> None:
        if type(key) is int and 0 <= key < len(self._by_number) + SPARSE:
            if key >= len(self._by_number):
                self._by_number.extend(repeat(-1, key + 1 - len(self._by_number)))
            self._by_number[key] = position
            self._other.pop(key, None)
        else:
            self._other[key] = position


@dataclass(eq=False)
class _Index:
    """Texts as they were first seen, appended only: the texts of a call are picked out by position (``among``), and
    every statistic is taken over them alone, so what else the index holds never changes a ranking."""

    fields: list[TurnFields] = field(default_factory=list)
    """Per position, the fields its text was made from (the caller's own tuple, not a copy)."""
    places: _Places = field(default_factory=lambda: _Places())
    """Where each key's newest text is."""
    lexical: BM25Index = field(default_factory=BM25Index)
    """Its postings say which texts hold a word (``BM25Index.rows``)."""
    dense: VectorIndex | None = None
    owner: array[int] = field(default_factory=lambda: array("q"))
    """Per embedded part, the position of the text it belongs to (parts are in order; machine integers: numpy copies
    them as one buffer, not one boxed integer at a time)."""
    seen: dict[int, tuple[Sequence[TurnFields], np.ndarray, bool]] = field(default_factory=dict)
    """The last texts each caller handed (by its first text's id: a module's list starts with the session's oldest
    turn it searches; the list held keeps that object, so the id is not reused), their positions, and whether those
    are 0, 1, 2, ... (the texts in the index's order: a session's list most turns)."""
    _order: GrowingArray = field(default_factory=lambda: GrowingArray(np.intp))
    """0, 1, 2, ...: the positions of a list holding the index's texts in its order, handed as views of it."""
    _runs: PartRuns = field(default_factory=PartRuns)
    """Where each text's parts begin (a copy of ``owner`` and a pass over it each query: ~0.1 ms at 10,000 turns'
    gists)."""

    def place(self, fields: TurnFields) -> int:
        """Where the text made of ``fields`` is (-1: none: its key's text, if any, was made of others)."""
        at = self.places.get(fields[KEY])
        return at if at >= 0 and ((held := self.fields[at]) is fields or held == fields) else -1

    def put(self, fields: TurnFields) -> None:
        self.places.set(fields[KEY], len(self.fields))
        self.fields.append(fields)

    def in_order(self, n: int) -> np.ndarray:
        """The positions 0 .. n-1 (read-only): the first n texts', found in the index's order (no copy a turn)."""
        if n > len(self._order):
            self._order.extend(np.arange(len(self._order), n, dtype=np.intp))
        return self._order.view[:n]

    def best_cosines(self, query_vector: Sequence[float] | np.ndarray) -> np.ndarray:
        """Each text's best part cosine with the query (-1 for a text without parts)."""
        if self.dense is None or not self.owner:
            return np.full(len(self.fields), -1.0)
        starts, texts = self._runs.caught_up(self.owner)
        scores = self.dense.scores(query_vector)
        if len(starts) == len(scores) == len(self.fields):  # one part a text (a turn's gist): its part's is its best
            return scores  # (runs ascending and distinct, as many as the texts: text i owns part i)
        best = np.full(len(self.fields), -1.0)
        best[texts] = np.maximum.reduceat(scores, starts)
        return best


def _placed(index: _Index, texts: Sequence[TurnFields]) -> tuple[np.ndarray, int, bool]:
    """How many of ``texts`` from the start the index placed last time (the list a caller handed then, grown since),
    their positions, and whether those are 0, 1, 2, ..."""
    last = index.seen.get(id(texts[0])) if texts else None
    if last is None:
        return _NOWHERE, 0, True
    held = shared_start(texts, last[0])
    return last[1][:held], held, last[2]


def shared_start(items: Sequence[T], last: Sequence[T]) -> int:
    """``common_prefix``, at once when ``items`` is a view that extends ``last`` (a list that only grew), and past
    their views' shared start when both are ``Joined`` (only the items after it compared: the turns handed)."""
    if isinstance(items, Prefix | Numbered) and items.extends(last):
        return len(last)
    if isinstance(items, Joined) and (held := items.extends_head(last)) is not None:
        return held + common_prefix(items[held:], list(last[held:]))
    return common_prefix(items, last if isinstance(last, list) else list(last))


def common_prefix(items: Sequence[T], last: list[T]) -> int:
    """How many items from the start ``items`` shares with ``last``: all of ``last`` when the list only grew (in C, the
    same objects at once), else found by halving (most often the newest item was made again: a turn's tool loop went
    on), in a few comparisons of C, never one Python step per item."""
    if len(items) >= len(last) and list(items[: len(last)]) == last:
        return len(last)
    low, high = 0, min(len(items), len(last))
    while low < high:
        middle = (low + high + 1) // 2
        if list(items[:middle]) == last[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


_NOWHERE = np.zeros(0, dtype=np.intp)


class TurnRecall:
    """One index per session (and embedder), with each text's terms and each part's vector cached by content."""

    _shared_vectors: ClassVar[VectorsByText[tuple[str, str]]] = VectorsByText(
        20_000, VECTORS_BY_TEXT_BYTES, TAKEN_VECTORS_BYTES
    )
    """Vectors by embedder and part text, shared by every ``TurnRecall`` (plan_hydration's and workflow_history's
    both embed a turn's query with its plan's first step): a text is embedded once. A vector depends only on the
    text and the embedder, so sharing cannot change a ranking. Those embedded ahead wait here for the index that
    takes them; once taken (or a query ranked for), only the most recent are kept: a session's index holds its own
    (kept for its life here too, a native session's gists grew memory ~2 KB a turn until ~10,900 turns)."""

    def __init__(self, max_sessions: int = 64) -> None:
        self._indexes: BoundedCache[tuple[str, str], _Index] = BoundedCache(max_sessions)
        # No terms are kept by text beside the indexes: they served only an index built again (a compaction, a
        # session back after 64 others), and held ~0.3 KB a turn up to 8,192 texts (docs/history/benchmarks-log.md,
        # "Session 46 (memflat8)"); stemming a text again costs a few microseconds (``terms`` keeps each word's stem).
        self._vectors = self._shared_vectors

    @classmethod
    async def embed_parts(cls, parts: Sequence[str], embedder: Embedder) -> None:
        """Embed ``parts`` now, ahead of the turn that searches them (an application does it as a turn is recorded,
        after the response): ``match`` then finds their vectors cached and embeds only the query."""
        missing = [p for p in dict.fromkeys(parts) if cls._shared_vectors.get((vector_space(embedder), p)) is None]
        for start in range(0, len(missing), EMBED_BATCH):
            batch = missing[start : start + EMBED_BATCH]
            for part, vector in zip(batch, await embedder.embed(batch), strict=True):
                cls._shared_vectors.put((vector_space(embedder), part), np.asarray(vector, dtype=np.float32))

    def forget(self, session_id: str) -> int:
        """Drop a session's indexes; returns how many went."""
        return self._indexes.discard_where(lambda key: key[0] == session_id)

    def stats(self) -> dict[str, int]:
        texts = sum(len(index.fields) for index in self._indexes.values())
        return {"sessions": len(self._indexes), "texts": texts, "vectors": len(self._vectors)}

    async def match(
        self,
        session_id: str,
        texts: Sequence[TurnFields],
        query: str,
        *,
        shown: Sequence[int] | np.ndarray,
        candidates: Sequence[int] | np.ndarray,
        embedder: Embedder | None = None,
        limit: int | None = None,
    ) -> TurnMatches:
        """The ``candidates`` (positions in ``texts``) that match ``query`` clearly better than the ``shown`` ones
        (numpy arrays of positions: a long session's thousands of candidates are not converted one by one); the
        best ``limit`` of them (None: all): on a long session hundreds match, and a caller takes a few."""
        method = "lexical" if embedder is None else "lexical+dense"
        if not len(candidates):
            return TurnMatches((), method, "no earlier turns to recall from", 0)
        pending = await self._catch_up(session_id, texts, embedder) if embedder is not None else 0
        if pending:  # a long session met for the first time: by words this turn, by meaning once all are embedded
            embedder, method = None, "lexical"
        index, among, in_order = await self._sync(session_id, texts, embedder)
        # the texts are the index's, in its order (a session's list, most turns): every score is read as it comes,
        # nothing picked out (the same figures: BM25 over every text is BM25 over ``among`` holding every text)
        picked = None if in_order and len(among) == len(index.fields) else among
        lexical = _at(index.lexical.scores(query, picked), picked)
        coverage, whole, common = _coverage(index, query, picked)
        dense = None
        if embedder is not None and index.dense is not None:
            (query_vector,) = (await self._vectors_of([TurnText(None, query, (query,))], embedder))[0]
            self._vectors.take([(vector_space(embedder), query)])
            dense = _at(index.best_cosines(query_vector), picked)
        whole = np.where(common >= 2, 1.0, whole)  # two words in common answer enough of the question
        found = _clear_matches(lexical, coverage, whole, dense, shown, candidates, method, limit)
        return replace(found, pending=pending) if pending else found

    async def _catch_up(self, session_id: str, texts: Sequence[TurnFields], embedder: Embedder) -> int:
        """Embed up to ``EMBED_PER_CALL`` parts of the texts the session's index does not hold yet; returns how many
        are left after that (0: every part has its vector). A turn on a long session met for the first time stays
        within the module's time; on later turns only the texts added since are looked at."""
        kind = vector_space(embedder)
        index = self._index((session_id, kind), texts)
        _, held, _ = _placed(index, texts)
        new = (t for t in texts[held:] if index.place(t) < 0)
        missing = list(dict.fromkeys(p for t in new for p in parts_of(t) if self._vectors.get((kind, p)) is None))
        if len(missing) <= EMBED_PER_CALL:
            return 0
        await self._vectors_of([TurnText(None, "", tuple(missing[:EMBED_PER_CALL]))], embedder)
        return len(missing) - EMBED_PER_CALL

    def _index(self, slot: tuple[str, str], texts: Sequence[TurnFields]) -> _Index:
        """The slot's index, new when there is none or when it mostly holds texts no longer asked about."""
        index = self._indexes.get(slot)
        if index is None or len(index.fields) > COMPACT_FACTOR * len(texts) + COMPACT_SLACK:
            return self._indexes.put(slot, _Index())
        self._indexes.touch(slot)
        return index

    async def _sync(
        self, session_id: str, texts: Sequence[TurnFields], embedder: Embedder | None
    ) -> tuple[_Index, np.ndarray, bool]:
        """The session's index holding every text (the new ones added), the texts' positions in it, and whether those
        are 0, 1, 2, ... (found from the new texts' alone when the list extends the last one)."""
        index = self._index((session_id, vector_space(embedder) if embedder is not None else ""), texts)
        before, held, in_order = _placed(index, texts)
        rest = texts[held:]  # a session's texts only grow, most turns: the start was placed last time
        new = list({t[KEY]: t for t in rest if index.place(t) < 0}.values())
        if new:
            await self._add(index, new, embedder)
        placed = np.fromiter((index.places.get(t[KEY]) for t in rest), dtype=np.intp, count=len(rest))
        in_order = in_order and bool(np.array_equal(placed, np.arange(held, len(texts))))
        if in_order:  # a session's list, most turns: its positions are a view, not the last ones copied and extended
            among = index.in_order(len(texts))
        else:
            among = np.concatenate([before, placed]) if held else placed
            among.flags.writeable = False
        if texts:
            if len(index.seen) >= SEEN_LISTS:
                index.seen.clear()
            index.seen[id(texts[0])] = (texts if isinstance(texts, Prefix | Joined) else list(texts), among, in_order)
        return index, among, in_order

    async def _add(self, index: _Index, texts: Sequence[TurnFields], embedder: Embedder | None) -> None:
        vectors = await self._vectors_of(texts, embedder) if embedder is not None else None
        for offset, fields in enumerate(texts):
            index.lexical.add_terms(terms(fields[TEXT]))
            if vectors is not None and vectors[offset]:
                if index.dense is None:
                    index.dense = VectorIndex(wide=True)  # ranked every turn: not widened each time
                index.dense.add(np.stack(vectors[offset]))
                index.owner.extend([len(index.fields)] * len(vectors[offset]))
            index.put(fields)
        if embedder is not None:  # the index holds them now
            self._vectors.take((vector_space(embedder), p) for t in texts for p in parts_of(t))

    async def _vectors_of(self, texts: Sequence[TurnFields], embedder: Embedder) -> list[list[np.ndarray]]:
        """Each text's part vectors; only parts not embedded before are sent to the embedder."""
        kind = vector_space(embedder)
        await self.embed_parts([p for t in texts for p in parts_of(t)], embedder)
        out = []
        for t in texts:
            found = [self._vectors.get((kind, p)) for p in parts_of(t)]
            out.append([v for v in found if v is not None])
        return out


def _coverage(index: _Index, query: str, among: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per text (at ``among``; ``None``: every text, in order), the idf-weighted share of the query's words that it
    holds: among the words some text holds (how much of what the turns could answer), and among all the query's
    words, a word no text holds weighing as the rarest (how much of the question it answers); and how many of the
    query's words it holds."""
    asked = set(terms(query))
    texts = len(index.fields) if among is None else len(among)
    held = None  # the texts at ``among`` as a mask; None: every text (most turns), no rows to pick out
    if among is not None:
        held = np.zeros(len(index.fields), dtype=bool)
        held[among] = True
        held = None if len(among) == len(held) and held.all() else held
    rows_of = {
        w: rows
        for w in sorted(asked)
        if w in index.lexical
        and len(rows := index.lexical.rows(w) if held is None else _held(index.lexical.rows(w), held))
    }
    matched, count = np.zeros(len(index.fields)), np.zeros(len(index.fields))
    if not rows_of:
        return _at(matched, among), _at(matched, among), _at(count, among)
    weights = {w: _idf(texts, len(rows)) for w, rows in rows_of.items()}
    for word, rows in rows_of.items():
        if len(rows) == len(index.fields):  # every text holds it (rows 0..n-1): the same sums, nothing picked out
            matched += weights[word]
            count += 1
        else:
            matched[rows] += weights[word]
            count[rows] += 1
    total = sum(weights.values())
    unknown = _idf(texts, 0) * (len(asked) - len(rows_of))  # the rarest word's idf
    held_weight = _at(matched, among)
    return held_weight / total, held_weight / (total + unknown), _at(count, among)


def _at(values: np.ndarray, among: np.ndarray | None) -> np.ndarray:
    """``values`` of the texts at ``among`` (``None``: every text in order, ``values`` itself: nothing gathered)."""
    return values if among is None else values[among]


def _idf(texts: int, holding: int) -> float:
    """BM25's idf (``BM25Index.idf``) of a word ``holding`` of ``texts`` texts hold: counted from the rows already
    picked out, not from a mask of every text made again per word."""
    return math.log(1 + (texts - holding + 0.5) / (holding + 0.5))


def _held(rows: np.ndarray, held: np.ndarray) -> np.ndarray:
    return rows[held[rows]]


def _clear_matches(
    lexical: np.ndarray,
    coverage: np.ndarray,
    whole: np.ndarray,
    dense: np.ndarray | None,
    shown: Sequence[int] | np.ndarray,
    candidates: Sequence[int] | np.ndarray,
    method: str,
    limit: int | None = None,
) -> TurnMatches:
    pool, seen = _index_of(candidates), _index_of(shown)
    shown_lexical = float(lexical[seen].max(initial=0.0))
    lex, held, answered = lexical[pool], coverage[pool], whole[pool]  # a run of candidates: views, nothing copied
    lexical_lead = lex / shown_lexical if shown_lexical > 0 else np.where(lex > 0, np.inf, 0.0)
    answers = (held >= MIN_MATCH) & (answered >= MIN_SHARE)
    by_words = (lex > 0) & answers & (lexical_lead >= LEXICAL_LEAD)
    dense_lead = near = None
    by_meaning = np.zeros(len(lex), dtype=bool)
    if dense is not None:
        shown_dense = float(dense[seen].max(initial=-1.0))
        near = dense[pool]
        dense_lead = near - shown_dense
        by_meaning = (near >= MIN_COSINE) & (dense_lead >= DENSE_LEAD)
    clear = by_words | by_meaning
    if not clear.any():
        reason = _no_match(lex, held, answered, lexical_lead, near)
        return TurnMatches((), method, reason, len(lex))
    positions = np.asarray(candidates, dtype=np.intp)
    ranking = fuse(
        lexical=np.where(by_words, lex, 0.0),
        dense=None if near is None else np.where(by_meaning, near, -2.0),
        order=positions,
        floor=Floor(min_lexical=0.0, min_dense=-1.0),
    )
    matches = tuple(
        Match(
            int(positions[i]),
            float(score),
            float(held[i]),
            float(lexical_lead[i]),
            None if dense_lead is None else float(dense_lead[i]),
            None if near is None else float(near[i]),
        )
        for i, score in zip(ranking.positions[:limit].tolist(), ranking.scores[:limit].tolist(), strict=True)
    )
    return TurnMatches(matches, method, None, len(lex))


def _index_of(positions: Sequence[int] | np.ndarray) -> slice | np.ndarray:
    """Positions as an index: a ``range`` (a module's candidates, its older turns) as a slice, which reads a run of
    scores as a view where an array of its positions gathers a copy; anything else as an array."""
    if isinstance(positions, range) and positions.step == 1 and positions.start >= 0:
        return slice(positions.start, max(positions.start, positions.stop))
    return np.asarray(positions, dtype=np.intp)


def _no_match(
    lex: np.ndarray,
    coverage: np.ndarray,
    whole: np.ndarray,
    lexical_lead: np.ndarray,
    dense: np.ndarray | None,
) -> str:
    """Why no candidate is a clear match, naming the closest one's figures against the thresholds."""
    if not (lex > 0).any():
        words = "no earlier turn shares a word with the question"
    else:
        best = int(np.argmax(coverage * (lex > 0)))
        lead = "∞" if lexical_lead[best] == np.inf else f"{lexical_lead[best]:.2f}"
        words = (
            f"the closest by words holds {coverage[best]:.0%} of the question's distinctive words (recalls from "
            f"{MIN_MATCH:.0%}; with one word in common, {whole[best]:.0%} of all, from {MIN_SHARE:.0%}) and scores "
            f"x{lead} the shown turns by BM25 (from x{LEXICAL_LEAD})"
        )
    if dense is None:
        return f"nothing relevant: {words}"
    closest = float(dense.max())
    meaning = (
        f"the closest in meaning scores {closest:.2f} (recalls from {MIN_COSINE}, and {DENSE_LEAD} above the shown)"
    )
    return f"nothing relevant: {words}; {meaning}"
