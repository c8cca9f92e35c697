"""The relevance engine the modules share: rank candidates for a query, then pack the best into a budget.

A pure module (numpy and a stemmer; no tda, database or web imports). The pieces, each usable alone:

* ``terms`` / ``BM25Index``: the one Okapi BM25 in the codebase (k1=1.2, b=0.75, Snowball stems, stopwords
  dropped). The index grows with ``add`` (history is indexed as it is recorded) and scores a query over every
  text in one numpy pass per query term.
* ``VectorIndex`` / ``dense_scores``: cosine similarity through the component's ``Embedder`` protocol.
* ``fuse``: reciprocal-rank fusion of the lexical and dense rankings, with a relevance ``Floor`` that can leave
  nothing, and then says why in ``Ranking.reason`` (what the snapshot shows).
* ``Evidence`` / ``abstention``: whether a query has evidence among the candidates at all (a clear outlier in meaning,
  measured against the candidates' own score distribution, or a candidate holding the weight of its rare words),
  calibrated per embedder (``evidence_for``); and the z-score floor a candidate needs to enter the dense ranking.
* ``pack``: greedy budget packing down the ranking. Its depth is the budget's, not a fixed k: it goes on while
  budget is left and ranked candidates remain, skipping one that does not fit and taking the next that does.
* ``select``: all of it for a list of ``Candidate`` s, returning a ``Selection`` in conversation/document order.

Conventions: a candidate is addressed by its position in the arrays handed in (0..n-1); rankings list positions
best first, ties broken by ``order`` (earlier first), so the same input always gives the same output.
"""

from __future__ import annotations

import math
import re
import struct
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import repeat
from operator import contains
from typing import Any

import numpy as np
import snowballstemmer

from . import mapped
from .base import Embedder

# ---------------------------------------------------------------------------------------------
# Lexical: BM25
# ---------------------------------------------------------------------------------------------

_TOKEN = re.compile(r"[a-z0-9_]+")
STOPWORDS = frozenset(
    "a an and are as at be by can do does for from has have how i if in is it its of on or that the "
    "their there these this to was what when where which who why will with you your".split()
)
"""Function words carry no topic; dropping them keeps BM25 from rewarding "the" and "of"."""

_STEMMER = snowballstemmer.stemmer("english")


@lru_cache(maxsize=100_000)
def stem(word: str) -> str:
    """English Snowball stem, so "grows", "growing" and "grow" match (cached: vocabularies are small)."""
    return str(_STEMMER.stemWord(word))


_SEPARATORS = bytes(
    c if chr(c).isascii() and (chr(c).isalnum() or c == 95) and not chr(c).isupper() else 32 for c in range(256)
)
"""Bytes of lower-cased UTF-8 text: ``[a-z0-9_]`` kept, every other byte (a non-ASCII one too) a space: the words
``_TOKEN`` finds, split in C (twice as fast as the regex over a long history met cold)."""
_TERM_OF: dict[str, str] = {}
"""Word -> its term ("" for a stopword): a history says the same words again and again."""
_TERMS_HELD = 200_000


def terms(text: str) -> list[str]:
    """The stemmed content words of ``text``, lower-cased, in order (repeats kept). A number is its own stem (the
    stemmer returns digits unchanged, at ~0.1 ms a call: ids and figures in tool results are mostly new numbers)."""
    words = (
        text.lower().encode(errors="replace").translate(_SEPARATORS).decode("ascii").split()
    )  # "?" for a lone surrogate
    term_of = _TERM_OF.get
    out = []
    for word in words:
        term = term_of(word)
        if term is None:
            term = _term(word)
        if term:
            out.append(term)
    return out


def _term_of(word: str) -> str:
    term = _TERM_OF.get(word)
    return _term(word) if term is None else term


def _term(word: str) -> str:
    if len(_TERM_OF) >= _TERMS_HELD:  # bounded: a long-running process meets endless ids and numbers
        _TERM_OF.clear()
    term = _TERM_OF[word] = "" if word in STOPWORDS else word if word.isdigit() else stem(word)
    return term


def words_of(text: str) -> list[bytes]:
    """The words ``terms`` stems: lower-cased ASCII ``[a-z0-9_]`` runs, split in C (as bytes: no decoding)."""
    return text.lower().encode(errors="replace").translate(_SEPARATORS).split()


_BREAK = " \x01 "
"""Put after each text of a batch joined to be split at once: a word of its own (a text holding it is split alone)."""
_BATCH_CHARS = 1 << 20
"""Characters of texts numbered at once (``_WordNumbers.numbers_of``): its copies and arrays are ~20 bytes a character,
and a batch that large costs no more a word than a larger one."""
_SORTED_AT = 4 << 20
"""Bytes of queued numbers (a million words) past which ``BM25Index.add`` sorts them in: its temporary arrays are
~8 times their size, so a 100,000-message import does not hold hundreds of MB at its first query."""
_SEPARATORS_BUT_BREAKS = _SEPARATORS[:1] + b"\x01" + _SEPARATORS[2:]
_LOWERED_BUT_BREAKS = bytes(c + 32 if 65 <= c <= 90 else s for c, s in enumerate(_SEPARATORS_BUT_BREAKS))
"""The same for ASCII text not lower-cased yet: capitals lowered in the one translation (``str.lower`` of ASCII text
does the same, and was a sixth of a long history's translation)."""
_COUNT = np.int32
"""How a posting's count of its term in its text is held (a text holds a word at most 2**31 - 1 times); scoring
reads them as float64 (``_posting_arrays``), the same figures."""
_ROW_BITS = 32
_SCANNED_FROM = 1 << 15
"""Words unsorted from which a query scans them for its terms rather than sort them in (``BM25Index._current``): a
turn's new messages are sorted in at its first query, a long history met cold is scanned."""
_SCANS_PER_SORT = 16
"""Times the unsorted words a ``BM25Index``'s scans read before it sorts them in: a scan of every word for one term
costs ~a 50th of their sort (measured at 10,000 messages: ~0.3 ms against ~16), so a query asking many terms spends
at most about a third of a sort on scans before it."""
TERMS_KEPT = 256
"""Terms whose postings a ``BM25Index`` keeps read out (a turn's queries ask a few dozen, again and again). Every
term ever asked was kept: a session whose questions each name something new (an order number, a date) held two
arrays and a tuple per such term, ~0.6 KB, in every index it searched, for its life."""
_ROW_MASK = (1 << _ROW_BITS) - 1
_BREAK_ID = 2**31 - 1
"""The number that ends a text in a ``BM25Index``'s queue."""
_STOP_ID = 2**31 - 2
"""A stopword's number: it and ``_BREAK_ID`` are above every term's, so their keys sort last."""
_PACK = struct.Struct("=i").pack
_BREAK_BYTES = _PACK(_BREAK_ID)


class GrowingArray:
    """A 1-d array that grows at its end, in a buffer that doubles when full (``view``: its items, read-only). An
    array a session's every turn lengthens by a few items, made again each time (``np.concatenate``), left in the C
    heap a hole its next, longer copy did not fit: in the native memory bench, BM25's postings of the questions'
    words (18 arrays a turn) and text lengths were most of what a turn replaced, and the heaps' free space grew
    ~4 MB per 1,000 turns. A buffer of ``mapped.MAPPED_FROM`` bytes or more is a mapping of its own: its doubled
    half is resident only once written, and the one it replaces is unmapped, not left a hole in the heap."""

    def __init__(self, dtype: Any, items: np.ndarray | Sequence[Any] = ()) -> None:
        self._buffer = mapped.copied(items, dtype)
        self._size = len(self._buffer)

    def __len__(self) -> int:
        return self._size

    @property
    def view(self) -> np.ndarray:
        items = self._buffer[: self._size]
        items.flags.writeable = False
        return items

    def item(self, at: int) -> Any:
        """The item at ``at`` (within ``len``) as a Python object, read without making a view: a read of one item."""
        return self._buffer.item(at)

    def bytes_of(self, start: int, stop: int) -> bytes:
        """The bytes of the items from ``start`` to ``stop`` (within ``len``), copied."""
        return self._buffer[start:stop].tobytes()

    def extend(self, *parts: np.ndarray) -> None:
        """Append ``parts``' items, in order (several at once: one copy, into one buffer)."""
        end = self._size + sum(map(len, parts))
        if end > len(self._buffer):  # a view handed out keeps the old buffer, as it was
            grown = mapped.empty(max(end, 2 * len(self._buffer)), self._buffer.dtype)
            grown[: self._size] = self._buffer[: self._size]
            self._buffer = grown
        for items in parts:  # beyond every view handed out
            self._buffer[self._size : self._size + len(items)] = items
            self._size += len(items)

    def caught_up(self, items: Sequence[Any]) -> np.ndarray:
        """``view``, extended first by what ``items`` holds beyond it: a numpy mirror of a list (or ``array``) that
        only grows, converting only what was added since."""
        if len(items) > self._size:
            self.extend(np.asarray(items[self._size :], dtype=self._buffer.dtype))
        return self.view


class PartRuns:
    """Where each owner's parts begin in a list of part owners that only grows, parts in order (an owner's parts
    together): kept up by the parts added since, not found again over every part each query. A message index and a
    turn index score parts, then reduce them to their owners (``np.maximum.reduceat(scores, starts)``)."""

    def __init__(self) -> None:
        self._starts = GrowingArray(np.intp)
        self._owners = GrowingArray(np.intp)
        self._read = 0

    def caught_up(self, owner: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """Where each run of ``owner`` begins, and whose run it is (read-only)."""
        if len(owner) > self._read:
            last = self._owners.view[-1] if len(self._owners) else -1
            added = np.asarray(owner[self._read :], dtype=np.intp)
            begins = np.flatnonzero(np.r_[added[0] != last, added[1:] != added[:-1]])
            self._starts.extend(begins + self._read)
            self._owners.extend(added[begins])
            self._read = len(owner)
        return self._starts.view, self._owners.view

    def counts(self) -> np.ndarray:
        """How many parts each run holds."""
        return np.diff(np.r_[self._starts.view, self._read])


class DigestTable:
    """Digests (``bytes`` of one size) mapped to integers, for a long-lived index: held in two sorted arrays (the
    digest's bytes and an 8-byte integer) and a dict of the newest, merged into the arrays when it holds an eighth
    as many (at least ``NEWEST``). A dict held ~110 bytes a 16-byte digest (its ``bytes`` object, a boxed integer,
    its slot), a set of their hex names ~133: a native session's parts kept both, ~0.5 KB a turn for its life."""

    NEWEST = 256

    def __init__(self, size: int = 16) -> None:
        self._digests = np.zeros(0, dtype=f"V{size}")
        self._values = np.zeros(0, dtype=np.int64)
        self._newest: dict[bytes, int] = {}

    def __len__(self) -> int:
        return len(self._digests) + len(self._newest)

    def __contains__(self, digest: object) -> bool:
        return isinstance(digest, bytes) and self.get(digest) is not None

    def get(self, digest: bytes) -> int | None:
        value = self._newest.get(digest)
        if value is not None or not len(self._digests):
            return value
        probe = np.void(digest)
        at = int(np.searchsorted(self._digests, probe))
        return int(self._values[at]) if at < len(self._digests) and self._digests[at] == probe else None

    def put(self, digest: bytes, value: int) -> None:
        """Map ``digest`` to ``value`` unless it is held already (a digest's value never changes)."""
        if len(digest) != self._digests.itemsize:
            raise ValueError(f"a digest of {len(digest)} bytes in a table of {self._digests.itemsize}")
        if digest not in self:
            self._newest[digest] = value
            if len(self._newest) >= max(self.NEWEST, len(self._digests) // 8):
                self._merge()

    def _merge(self) -> None:
        digests = np.concatenate([self._digests, np.array(list(self._newest), dtype=self._digests.dtype)])
        values = np.concatenate([self._values, np.fromiter(self._newest.values(), np.int64, len(self._newest))])
        order = np.argsort(digests, kind="stable")  # the kept arrays made again whole: mapped apart when large
        self._digests = np.take(digests, order, out=mapped.empty(len(order), digests.dtype))
        self._values = np.take(values, order, out=mapped.empty(len(order), np.int64))
        self._newest = {}


class BM25Index:
    """Okapi BM25 over a growing list of texts: ``idf = ln(1 + (N - n + 0.5) / (n + 0.5))`` and
    ``tf * (k1 + 1) / (tf + k1 * (1 - b + b * len / avglen))`` per query term (each distinct term once).

    ``add`` appends texts (positions continue from ``len(index)``); scores always reflect every text added.

    Built in C and numpy, not a Python object per word or per (term, text): ``add`` maps each word to its term's
    number through a dict of the words this index has met, joined as 4-byte integers; the next query sorts what was
    queued into ``term << 32 | row`` keys with their counts, once for the whole batch (a 10,000-message history met
    cold: one sort, not 300,000 appends). They go to a sorted tail, merged into the main arrays when it outgrows an
    eighth of them: a turn that adds a message costs what it adds, not the history. A long history's first queries
    scan its numbers for the few terms they ask instead, and the next turn's first query sorts them (``_current``).
    """

    def __init__(self, texts: Sequence[str] = (), *, k1: float = 1.2, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self._count = 0
        self._lengths = GrowingArray(np.float64)
        """Each text's words but stopwords (as scoring reads them)."""
        self._total_length = 0
        self._word_ids = _WordNumbers()
        """Word (as ``words_of`` splits it) -> its term's number as 4 bytes (``_STOP_ID`` for a stopword)."""
        self._ids = self._word_ids.ids
        """Term -> its number in this index (assigned when a text first holds it)."""
        self._queued: list[np.ndarray] = []
        self._queued_bytes = 0
        """The numbers of the words of the texts added since the last query (``np.intc``), in order, each text's
        followed by ``_BREAK_ID``."""
        self._unsorted = GrowingArray(np.intc)
        self._ends = GrowingArray(np.intp)
        """The queued numbers read (``_read_queue``) but not sorted in yet, and where each of their texts' break is."""
        self._sorted = 0
        """How many texts were sorted in (the first ``_unsorted`` text's row)."""
        self._scanned = 0
        """Words of ``_unsorted`` read by scans since it was last sorted in (``_current``)."""
        empty = (np.zeros(0, np.int64), np.zeros(0, _COUNT))
        self._main: tuple[np.ndarray, np.ndarray] = empty
        """Sorted ``term << 32 | row`` keys and each one's count of the term in that text (``_COUNT``: 12 bytes a
        posting held for the session's life, not 16; widened to float64, exactly, as they are read out)."""
        self._tail: tuple[np.ndarray, np.ndarray] = empty
        """The same for rows added since ``_main`` was last merged (all after its rows)."""
        self._arrays: dict[str, tuple[GrowingArray, GrowingArray, int]] = {}
        """Per term asked lately (at most ``TERMS_KEPT``, the least recently read out first), its rows, its counts
        and how many texts the index held when they were read."""
        self.add(texts)

    def __len__(self) -> int:
        return self._count

    def __contains__(self, term: object) -> bool:
        """Whether some text holds ``term`` (a stem, as ``terms`` gives it)."""
        return term in self._ids

    def add(self, texts: Sequence[str]) -> None:
        """Index ``texts`` after those already held."""
        for some in _batches(texts):
            if not any(map(contains, some, repeat("\x01"))):  # translated at once, each text's words then its break
                joined = _BREAK.join([*some, ""])  # (a search per text: a quarter of counting the joined text's)
                if joined.isascii():
                    data = joined.encode().translate(_LOWERED_BUT_BREAKS)
                else:
                    data = joined.lower().encode(errors="replace").translate(_SEPARATORS_BUT_BREAKS)
            else:  # a text holds the break's byte: each translated alone (its own is a separator)
                data = b" \x01 ".join(t.lower().encode(errors="replace").translate(_SEPARATORS) for t in some)
                data += b" \x01 "
            self._queue(self._word_ids.numbers_of(data), len(some))

    def add_terms(self, text_terms: Sequence[str]) -> None:
        """Index one text given as its ``terms`` (callers that stored them need not re-stem)."""
        self._queue(np.array([*map(self._word_ids.number, text_terms), _BREAK_ID], dtype=np.intc), 1)

    def _queue(self, numbers: np.ndarray, texts: int) -> None:
        self._queued.append(numbers)
        self._queued_bytes += numbers.nbytes
        self._count += texts
        if self._queued_bytes + 4 * len(self._unsorted) > _SORTED_AT:  # a huge history is sorted in parts: bounded
            self._settled()  # temporary arrays

    def _read_queue(self) -> None:
        """Move what was queued to ``_unsorted`` (and ``_ends``), counting each text's length."""
        if not self._queued:
            return
        held = len(self._unsorted)
        self._unsorted.extend(*self._queued)  # one copy of the batches' numbers (MBs for a long history)
        self._queued, self._queued_bytes = [], 0
        ids = self._unsorted.view[held:]
        ends = np.flatnonzero(ids == _BREAK_ID)
        starts = np.empty_like(ends)  # each text's first word (a text holds at least its break: never empty)
        starts[:1], starts[1:] = 0, ends[:-1] + 1
        lengths = np.add.reduceat(ids < _STOP_ID, starts, dtype=np.intp)  # stopwords and breaks not counted
        self._lengths.extend(lengths)  # (a sum per text: ~15x a cumulative sum's speed over 700,000 words)
        self._total_length += int(lengths.sum())
        ends += held
        self._ends.extend(ends)

    def _current(self) -> None:
        """Read what was queued, and sort it in unless scanning it for each term asked is cheaper: a long history met
        cold is asked a few terms (a turn's query, a name or two), and a scan of its ~700,000 numbers for one costs
        ~a 50th of their sort. Sorted at the first query after more texts come (a session's next turn, which would
        scan again for its new terms), once the scans have read ``_SCANS_PER_SORT`` times the words, or at once when
        they are few (a turn's new messages)."""
        more = bool(self._queued)
        self._read_queue()
        words = len(self._unsorted)
        if words and (words < _SCANNED_FROM or self._scanned >= _SCANS_PER_SORT * words or (more and self._scanned)):
            self._settled()

    def _settled(self) -> None:
        """Sort what was queued into the tail (and the tail into the main arrays once it outgrows an eighth)."""
        self._read_queue()
        if not len(self._unsorted):
            return
        first, ids, ends = self._sorted, self._unsorted.view, self._ends.view
        sizes = np.diff(ends, prepend=-1)  # each text's words and its break
        rows = np.repeat(np.arange(first, first + len(sizes), dtype=np.int64), sizes)
        held = ids < _STOP_ID  # stopwords and breaks left out before sorting: a third of prose's words
        keys = _sorted_keys(ids[held], rows[held], len(self._ids))
        self._sorted += len(sizes)
        self._unsorted, self._ends, self._scanned = GrowingArray(np.intc), GrowingArray(np.intp), 0
        runs = np.empty(len(keys), dtype=bool)  # where each (term, row) pair's run begins
        runs[:1] = True
        np.not_equal(keys[1:], keys[:-1], out=runs[1:])
        starts = np.flatnonzero(runs)
        counts = mapped.empty(len(starts), _COUNT)  # the postings held from here on (a long history's, at first)
        counts[:-1] = starts[1:] - starts[:-1]
        counts[-1:] = len(keys) - starts[-1:]
        self._tail = _merged(self._tail, (np.take(keys, starts, out=mapped.empty(len(starts), keys.dtype)), counts))
        if len(self._tail[0]) * 8 > len(self._main[0]):
            self._main, self._tail = _merged(self._main, self._tail), (self._tail[0][:0], self._tail[1][:0])

    def word_counts(self) -> np.ndarray:
        """Each text's words but stopwords, in order (as scoring reads them)."""
        self._read_queue()
        return self._lengths.view

    def holders(self, query_terms: Sequence[str]) -> np.ndarray:
        """How many texts hold each of ``query_terms``, at once (a term's ``rows`` costs a lookup each: a long
        message's hundred words would cost ~2 ms)."""
        self._current()
        numbers = np.asarray([self._ids.get(t, -1) for t in query_terms], np.int64)
        out = np.zeros(len(numbers), np.intp)
        known = numbers >= 0
        low, high = numbers[known] << _ROW_BITS, (numbers[known] + 1) << _ROW_BITS
        for keys, _ in (self._main, self._tail):
            out[known] += np.searchsorted(keys, high) - np.searchsorted(keys, low)
        if len(self._unsorted):  # texts not sorted in yet: each (text, term) pair once
            ids, ends = self._unsorted.view, self._ends.view
            at = np.flatnonzero(np.isin(ids, numbers[known]))
            pairs = np.unique(np.searchsorted(ends, at).astype(np.int64) << _ROW_BITS | ids[at])
            found, counts = np.unique(pairs & _ROW_MASK, return_counts=True)
            out[np.isin(numbers, found)] += counts[np.searchsorted(found, numbers[np.isin(numbers, found)])]
        return out

    def rows(self, term: str) -> np.ndarray:
        """The positions of the texts holding ``term``, in order (empty when none does)."""
        return self._posting_arrays(term)[0] if term in self else np.zeros(0, np.intp)

    def idf(self, term: str, among: np.ndarray | None = None) -> float:
        """``term``'s idf over every text, or over the texts at positions ``among`` only (see ``scores``)."""
        rows = self._posting_arrays(term)[0]
        if among is None:
            n = len(rows)
            return math.log(1 + (len(self) - n + 0.5) / (n + 0.5))
        n = int(np.count_nonzero(self._mask(among)[rows]))
        return math.log(1 + (len(among) - n + 0.5) / (n + 0.5))

    def scores(self, query: str, among: np.ndarray | None = None) -> np.ndarray:
        """BM25 score of every indexed text for ``query`` (0 where no query term occurs). ``among`` (distinct
        positions): score as if the index held only those texts (their count, average length and document
        frequencies), the others 0 — an index that only grows can then serve a list that also loses texts."""
        return self.scores_for_terms(terms(query), among)

    def scores_for_terms(self, query_terms: Sequence[str], among: np.ndarray | None = None) -> np.ndarray:
        self._current()
        n = len(self)
        out = np.zeros(n, dtype=np.float64)
        if not n or (among is not None and not len(among)):
            return out
        lengths = self._lengths.view
        mask = None if among is None else self._mask(among)
        # ``among`` holding every text (a turn recall's usual list) is scored as no ``among``: the same figures (the
        # integer lengths' mean is exact), without picking each term's rows out
        if among is None or (len(among) == n and mask is not None and mask.all()):
            count, average, mask = n, self._total_length / n or 1.0, None
        else:
            count, average = len(among), float(lengths[among].mean()) or 1.0
        norm = self.k1 * (1 - self.b + self.b * lengths / average)
        for term in dict.fromkeys(query_terms):  # in the query's order: float sums the same in every process
            rows, tf = self._posting_arrays(term)
            if not len(rows):
                continue
            if mask is not None:
                kept = mask[rows]
                rows, tf = rows[kept], tf[kept]
            idf = math.log(1 + (count - len(rows) + 0.5) / (len(rows) + 0.5))
            if len(rows) == n:  # every text holds it (rows 0..n-1): the same sums, without picking rows out
                out += idf * tf * (self.k1 + 1) / (tf + norm)
            else:
                out[rows] += idf * tf * (self.k1 + 1) / (tf + norm[rows])
        return out

    def coverage(self, query_terms: Sequence[str], n: int | None = None) -> np.ndarray:
        """The share of the query's idf weight each of the first ``n`` texts holds (0..1): a text holding the query's
        rare words scores near 1, one holding only its common words near 0. A term no text holds weighs the most."""
        n = len(self) if n is None else min(n, len(self))
        out = np.zeros(n, dtype=np.float64)
        total = 0.0
        for term in dict.fromkeys(query_terms):  # in the query's order: float sums the same in every process
            idf = self.idf(term)
            total += idf
            rows = self._posting_arrays(term)[0]
            out[rows[rows < n]] += idf
        return out / total if total else out

    def _mask(self, among: np.ndarray) -> np.ndarray:
        mask = np.zeros(len(self), dtype=bool)
        mask[among] = True
        return mask

    def _posting_arrays(self, term: str) -> tuple[np.ndarray, np.ndarray]:
        """The rows holding ``term`` (ascending) and its count in each (float): kept per term and extended by the
        rows added since (a turn asks for a term several times, and the next turn adds a message or two)."""
        self._current()
        held = self._arrays.get(term)
        if held is None or held[2] != self._count:
            since = int(held[0].view[-1]) + 1 if held is not None and len(held[0]) else 0
            rows, counts = self._postings(term, since)
            if held is not None and since:
                held[0].extend(rows)
                held[1].extend(counts)
            else:
                held = GrowingArray(np.intp, rows), GrowingArray(np.float64, counts), self._count
            self._arrays.pop(term, None)  # to the end: the terms read every turn stay
            self._arrays[term] = held = (held[0], held[1], self._count)
            if len(self._arrays) > TERMS_KEPT:
                del self._arrays[next(iter(self._arrays))]
        return held[0].view, held[1].view

    def _postings(self, term: str, since: int) -> tuple[np.ndarray, np.ndarray]:
        """``term``'s rows from ``since`` on, with its counts (``_COUNT`` or float64): from the sorted keys, then a
        scan of the unsorted."""
        number = self._ids.get(term)
        if number is None:
            return np.zeros(0, np.intp), np.zeros(0, np.float64)
        found = []
        bounds = np.asarray([number << _ROW_BITS | since, (number + 1) << _ROW_BITS], dtype=np.int64)
        for keys, counts in (self._main, self._tail) if since < self._sorted else ():
            start, end = np.searchsorted(keys, bounds)
            if end > start:
                found.append(((keys[start:end] & _ROW_MASK).astype(np.intp), counts[start:end]))
        if len(self._unsorted):
            found.append(self._scan(number, since))
        if not found:
            return np.zeros(0, np.intp), np.zeros(0, np.float64)
        rows, counts = found[0] if len(found) == 1 else (np.concatenate(parts) for parts in zip(*found, strict=True))
        return rows, counts

    def _scan(self, number: int, since: int) -> tuple[np.ndarray, np.ndarray]:
        """The unsorted rows from ``since`` on holding the term numbered ``number``, with its count in each."""
        ids, ends, first = self._unsorted.view, self._ends.view, self._sorted
        start = int(ends[since - first - 1]) + 1 if since > first else 0
        self._scanned += len(ids) - start
        at = np.flatnonzero(ids[start:] == number)
        rows = np.searchsorted(ends, at + start)  # a word's text: the breaks before it
        runs = np.empty(len(rows), dtype=bool)
        runs[:1] = True
        np.not_equal(rows[1:], rows[:-1], out=runs[1:])
        starts = np.flatnonzero(runs)
        counts = np.diff(starts, append=len(rows)).astype(np.float64)
        return (rows[starts] + first).astype(np.intp, copy=False), counts


class _WordNumbers(dict[bytes, bytes]):
    """Word -> its term's number in one index, as 4 bytes; a word not met yet is stemmed and numbered when first
    looked up (``__missing__``: a lookup of a known word stays in C)."""

    def __init__(self) -> None:
        super().__init__({b"\x01": _BREAK_BYTES})
        self.ids: dict[str, int] = {}
        """Term -> its number."""

    def __missing__(self, word: bytes) -> bytes:
        packed = self[word] = struct.pack("=i", self.number(_term_of(word.decode("ascii"))))
        return packed

    def number(self, term: str) -> int:
        """``term``'s number, assigned when first met (``_STOP_ID``: a stopword, "")."""
        return self.ids.setdefault(term, len(self.ids)) if term else _STOP_ID

    def numbers_of(self, data: bytes) -> np.ndarray:
        """The number of each word of ``data`` (``[a-z0-9_]`` runs and breaks, ``\\x01``, between spaces: texts as
        ``add`` translates them), in order (``np.intc``): ``b"".join(map(self.__getitem__, data.split()))``. A long
        batch is numbered in numpy, looking up only its distinct words: no Python object per word (a 10,000-message
        history met cold has ~700,000 of them, a few thousand distinct)."""
        if len(data) < _NUMPY_FROM:
            return np.frombuffer(b"".join(map(self.__getitem__, data.split())), dtype=np.intc)
        padded = b"".join((b" ", data, b" " * 16))  # a space before the first word; 16 bytes readable past the last
        in_word = np.frombuffer(padded, np.uint8) != 32
        edges = np.flatnonzero(in_word[1:] != in_word[:-1])
        edges += 1
        starts, ends = edges[0::2], edges[1::2]
        if not len(starts):
            return np.zeros(0, np.intc)
        keys, slow = _word_keys(padded, starts, ends - starts)
        which, one = _distinct(keys)  # per word where a word with its key is, and where one word of each key is
        distinct_words = [padded[s:e] for s, e in zip(starts[one].tolist(), ends[one].tolist(), strict=True)]
        numbers = np.empty(len(keys), np.intc)
        numbers[one] = np.frombuffer(self._looked_up(distinct_words), dtype=np.intc)
        numbers = numbers[which]  # each word its key's number, read where it was written
        if len(slow):  # words no key tells apart: looked up one by one
            alone = [padded[s:e] for s, e in zip(starts[slow].tolist(), ends[slow].tolist(), strict=True)]
            numbers[slow] = np.frombuffer(self._looked_up(alone), dtype=np.intc)
        return numbers

    def _looked_up(self, words: list[bytes]) -> bytes:
        """``words``' numbers joined; those not met yet stemmed and numbered in one loop (a history met cold brings
        thousands: ids, figures, names)."""
        term_of, ids = _TERM_OF.get, self.ids
        for word in [w for w in words if w not in self]:
            text = word.decode("ascii")
            term = term_of(text)
            if term is None:
                term = _term(text)
            self[word] = _PACK(ids.setdefault(term, len(ids)) if term else _STOP_ID)
        return b"".join(map(self.__getitem__, words))


_NUMPY_FROM = 4096
"""Bytes of words from which ``_WordNumbers.numbers_of`` numbers them in numpy: below, its ~30 numpy calls cost more
than splitting them (measured: even at ~4 KB; a turn's new message or two is split)."""
_LOW_BYTES = np.array([(1 << 8 * n) - 1 for n in range(9)], dtype=np.uint64)
"""The mask keeping a word's first ``n`` bytes of the 8 read at its start (little-endian)."""
_HASHED = np.uint64(1 << 63)
"""Set in the key of a word longer than 8 bytes (a hash); never in a shorter one's (ASCII bytes are below 128)."""
_MIX = np.uint64(0x9E3779B97F4A7C15)


def _word_keys(padded: bytes, starts: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A key per word (equal words, equal keys) and the positions of those whose key may not tell them apart from
    another word (to be looked up alone). A word of up to 8 bytes is its bytes as an integer (exact: no word byte is
    0); up to 16, a hash of its bytes and length, checked against another word with the same key; longer, a key
    that only starts the same."""
    reads = np.ndarray((len(padded) - 7,), dtype="<u8", buffer=padded, strides=(1,))  # 8 bytes at every offset
    keys = reads[starts]
    keys &= _LOW_BYTES[np.minimum(lengths, 8)]
    long = np.flatnonzero(lengths > 8)
    if not len(long):
        return keys, long
    head, size = keys[long], lengths[long]
    tail = reads[starts[long] + 8] & _LOW_BYTES[np.minimum(size - 8, 8)]
    keys[long] = (head * _MIX ^ tail) * _MIX ^ size.astype(np.uint64) | _HASHED
    # The same key for different words (a hash collision) would number them alike: checked against one occurrence.
    hashed = keys[long]
    ordered = np.argsort(hashed, kind="stable")
    same = hashed[ordered[1:]] == hashed[ordered[:-1]]
    a, b = ordered[1:][same], ordered[:-1][same]
    if np.array_equal(head[a], head[b]) and np.array_equal(tail[a], tail[b]) and np.array_equal(size[a], size[b]):
        return keys, long[size > 16]
    return keys, long


_HASH_MULTIPLIERS = (0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9)
"""Odd 64-bit multipliers of the rounds of ``_distinct``'s hash table (a key that collides in one is hashed anew)."""
_TABLE_BITS = (8, 16)
"""The fewest and most bits of a ``_distinct`` table's slots: at most 2**16 four-byte slots, 256 KB, a table that stays
in the cache (a history is numbered 128 messages at a time, ~9,000 words; tables up to 2**20 slots were no faster)."""


def _distinct(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each key the position of one key equal to it (the same for equal keys), and those positions, one per
    distinct key: ``np.unique`` without its sort. A round hashes the keys not placed yet into a table (the last key
    written to a slot owns it); a key equal to its slot's owner's takes the owner's position, and the others (another
    key in the same slot) go to the next round with another multiplier. A long history's ~700,000 words have a few
    thousand distinct keys: nearly all are placed in the first round, in O(n), where the sort and the binary search
    cost O(n log n)."""
    positions = np.arange(len(keys), dtype=np.int32)
    which: np.ndarray | None = None
    found: list[np.ndarray] = []
    pending: np.ndarray | None = None  # None: every key (the first round, which most often places them all)
    for multiplier in _HASH_MULTIPLIERS:
        held = keys if pending is None else keys[pending]
        bits = min(max((2 * len(held)).bit_length(), _TABLE_BITS[0]), _TABLE_BITS[1])
        slots = held * np.uint64(multiplier)
        slots >>= np.uint64(64 - bits)
        table = np.empty(1 << bits, np.int32)
        table[slots.view(np.intp)] = positions[: len(held)]  # below 2**16: the same as signed
        owner = table[slots.view(np.intp)]
        owners = np.flatnonzero(owner == positions[: len(held)])
        same = held[owner] == held
        if pending is None and same.all():
            return owner, owners
        at = positions if pending is None else pending
        if which is None:
            which = np.empty(len(keys), np.intp)
        which[at[same]] = at[owner[same]]
        found.append(at[owners])
        pending = at[~same]
        if not len(pending):
            return which, np.concatenate(found)
    assert pending is not None and which is not None
    _, first, inverse = np.unique(keys[pending], return_index=True, return_inverse=True)  # hardly ever
    which[pending] = pending[first][inverse.reshape(-1)]
    found.append(pending[first])
    return which, np.concatenate(found)


def _batches(texts: Sequence[str]) -> Iterator[Sequence[str]]:
    """``texts`` in consecutive runs of about ``_BATCH_CHARS`` characters (a longer text alone)."""
    if sum(map(len, texts)) <= _BATCH_CHARS:  # most often (a slice of a history): at once, no loop per text
        if texts:
            yield texts
        return
    start = size = 0
    for end, text in enumerate(texts):
        if size and size + len(text) > _BATCH_CHARS:
            yield texts[start:end]
            start, size = end, 0
        size += len(text)
    if start < len(texts):
        yield texts[start:]


_RADIX_TERMS = 1 << 16
"""Terms an index numbers before its keys are sorted whole (64-bit) instead of by a radix sort of 16-bit terms."""


def _sorted_keys(terms: np.ndarray, rows: np.ndarray, numbered: int) -> np.ndarray:
    """``term << 32 | row`` of each word (``terms`` its term's number, below ``numbered``; ``rows`` ascending: its
    text's), sorted. The rows are in order already, so a stable sort by term alone sorts the keys: a radix sort while
    the terms' numbers fit in 16 bits (a history's vocabulary: a few thousand), O(n) where sorting the 64-bit keys was
    O(n log n) (a 10,000-message history's first query: ~20 -> ~5 ms)."""
    if numbered <= _RADIX_TERMS:
        order = np.argsort(terms.astype(np.uint16), kind="stable")
        keys = terms[order].astype(np.int64)
        keys <<= _ROW_BITS
        keys |= rows[order]
        return keys
    keys = terms.astype(np.int64)
    keys <<= _ROW_BITS  # in place: a long history's first query sorts millions of words
    keys |= rows
    keys.sort()
    return keys


def _merged(held: tuple[np.ndarray, np.ndarray], added: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Two sorted key arrays with their counts as one (their keys are distinct: a row is added once)."""
    if not len(held[0]):
        return added
    if not len(added[0]):
        return held
    at = np.searchsorted(held[0], added[0]) + np.arange(len(added[0]))  # where each added key goes
    kept = np.ones(len(held[0]) + len(added[0]), dtype=bool)
    kept[at] = False
    merged = []
    for old, new in zip(held, added, strict=True):  # made again whole: mapped apart, or the old one left a hole
        out = mapped.empty(len(kept), old.dtype)
        out[at], out[kept] = new, old
        merged.append(out)
    return merged[0], merged[1]


# ---------------------------------------------------------------------------------------------
# Dense: cosine through the Embedder protocol
# ---------------------------------------------------------------------------------------------


def unit_rows(vectors: Sequence[Sequence[float]] | Sequence[float] | np.ndarray) -> np.ndarray:
    """``vectors`` as a float32 matrix with unit-length rows (a zero row stays zero)."""
    matrix = np.asarray(vectors, dtype=np.float32)
    if matrix.ndim == 1:
        matrix = matrix.reshape(1, -1)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0, 1.0, norms)


VECTORS_BY_TEXT_BYTES = 16 * 2**20
"""At most about this much memory held by each cache of recent vectors by their text (recall's, of messages and of
turns): ~10,000 MiniLM vectors with their texts, more than a 170K-token agent conversation a stateless client sends
whole again. Bounded by 20,000 entries alone, each grew a long native session's memory turn by turn up to its
~5,000th, holding vectors the session's index already keeps (~30 MB)."""
TAKEN_VECTORS_BYTES = 2 * 2**20
"""At most about this much memory held by such a cache for vectors an index has taken (``VectorsByText``): ~1,000
MiniLM vectors, the newest, for a text said again and a turn's other reader; the index holds them all."""


_HALF_BIAS = np.float32(2.0**112)
"""float16's exponent bias is 15, float32's 127: a float16's bits moved into float32's places read 2**-112 of it."""


def widened(held: np.ndarray, out: np.ndarray) -> np.ndarray:
    """float16 rows as float32 in ``out``, scaled by 2**-112 (exact, and float16's subnormals too): the bits moved
    into place in three passes numpy runs in SIMD (its own float16 cast widens element by element, ~10x slower)."""
    bits = out.view(np.int32)
    np.copyto(bits, held.view(np.int16))  # the sign extended over the high half
    np.left_shift(bits, 13, out=bits)  # exponent and mantissa in float32's places
    np.bitwise_and(bits, np.int32(-0x70000001), out=bits)  # the sign kept, the extended copies of it cleared
    return out


class VectorIndex:
    """Unit vectors in blocks that double in size up to ``MAX_BLOCK`` rows: an append never copies what is held
    (a 100,000-part history is 200 MB; copied as one growing matrix doubled, it held the event loop 0.4-0.6 s).

    Held as float16, half float32's bytes (a session's part vectors are kept for its life: 768 bytes a MiniLM
    vector, not 1,536); a component moves by at most 2**-11 of itself, so a cosine by at most 2**-11 (~5e-5 on
    MiniLM's). Ranking widens them back to float32 ``WIDEN_ROWS`` at a time, exactly (``widened``), and takes the
    product in float32: 25,000 MiniLM rows in ~3.8 ms against ~2.0 held as float32."""

    FIRST_BLOCK = 64
    MAX_BLOCK = 4096
    WIDEN_ROWS = 1024
    """Rows widened at once when ranking: a scratch matrix that stays in the cache (1.5 MB at 384 dimensions)."""

    def __init__(self, dimensions: int | None = None, *, wide: bool = False) -> None:
        self._dimensions = dimensions or 0
        self._held = np.float32 if wide else np.float16
        """``wide``: the float16-rounded vectors held widened, as float32 (the same cosines, bit for bit: the same
        values and the same product; twice the bytes, ranked ~3x faster, no widening per query). For an index
        ranked every turn whose rows are few beside the session's parts (turn recall's gists, one a turn)."""
        self._blocks: list[np.ndarray] = []
        self._size = 0
        self._last_used = 0
        """Rows written in the last block."""

    def __len__(self) -> int:
        return self._size

    @property
    def nbytes(self) -> int:
        """The memory its blocks hold."""
        return sum(block.nbytes for block in self._blocks)

    @property
    def matrix(self) -> np.ndarray:
        """Every held vector, one row each, as float32 (a copy)."""
        held = np.concatenate([*self._filled(), np.zeros((0, self._dimensions), dtype=self._held)])
        return held.astype(np.float32)

    def _filled(self) -> list[np.ndarray]:
        if not self._blocks:
            return []
        return [*self._blocks[:-1], self._blocks[-1][: self._last_used]]

    def add(self, vectors: Sequence[Sequence[float]] | np.ndarray) -> None:
        rows = unit_rows(vectors)
        if not len(rows):
            return
        if self._dimensions != rows.shape[1]:
            if self._size:
                raise ValueError(f"vectors of {rows.shape[1]} dimensions added to an index of {self._dimensions}")
            self._dimensions, self._blocks, self._last_used = rows.shape[1], [], 0
        held = rows.astype(np.float16).astype(self._held)  # rounded to float16 either way: the same cosines
        at = 0
        while at < len(held):
            if not self._blocks or self._last_used == len(self._blocks[-1]):
                size = min(self.MAX_BLOCK, max(self.FIRST_BLOCK, self._size))
                self._blocks.append(mapped.zeros(size * self._dimensions, self._held).reshape(size, self._dimensions))
                self._last_used = 0
            block = self._blocks[-1]
            take = min(len(block) - self._last_used, len(held) - at)
            block[self._last_used : self._last_used + take] = held[at : at + take]
            self._last_used += take
            self._size += take
            at += take

    def scores(self, query_vector: Sequence[float] | np.ndarray) -> np.ndarray:
        """Cosine of every held vector with ``query_vector`` (float64, in -1..1), computed in float32."""
        if not self._size:
            return np.zeros(0, dtype=np.float64)
        # einsum, not ``@``: BLAS splits a matrix-vector product over threads, which on a busy machine (other
        # requests, other processes) wait on each other: measured on 12,300 x 512 under load, 32 ms median against
        # 1 ms for einsum's one thread (the product is memory-bound; a second thread gains little even when idle).
        if self._held is np.float32:
            return self._wide_scores(unit_rows(query_vector)[0])
        query = unit_rows(query_vector)[0] * _HALF_BIAS  # the rows are widened at 2**-112 of their values
        out = np.empty(self._size, dtype=np.float32)
        scratch = np.empty((min(self.WIDEN_ROWS, self._size), self._dimensions), dtype=np.float32)
        at = 0
        for block in self._filled():
            for start in range(0, len(block), self.WIDEN_ROWS):
                rows = block[start : start + self.WIDEN_ROWS]
                wide = widened(rows, scratch[: len(rows)])
                np.einsum("ij,j->i", wide, query, out=out[at : at + len(rows)])
                at += len(rows)
        return out.astype(np.float64)

    def _wide_scores(self, query: np.ndarray) -> np.ndarray:
        """``scores`` of rows held widened: each row's product as ``scores`` takes it of the same values (scaled by
        powers of two there, exactly), without the widening passes."""
        out = np.empty(self._size, dtype=np.float32)
        at = 0
        for block in self._filled():
            np.einsum("ij,j->i", block, query, out=out[at : at + len(block)])
            at += len(block)
        return out.astype(np.float64)

    def rows_at(self, rows: Sequence[int] | np.ndarray) -> np.ndarray:
        """The held vectors at ``rows``, one row each, as float32 (reading only those rows)."""
        wanted = np.asarray(rows, dtype=np.intp)
        if not len(wanted):
            return np.zeros((0, self._dimensions), dtype=np.float32)
        starts = np.cumsum([0, *(len(block) for block in self._blocks)])
        block_of = np.searchsorted(starts, wanted, side="right") - 1
        out = np.empty((len(wanted), self._dimensions), dtype=np.float32)
        for b in np.unique(block_of).tolist():
            at = np.flatnonzero(block_of == b)
            out[at] = self._blocks[b][wanted[at] - starts[b]]
        return out

    def scores_at(self, query_vector: Sequence[float] | np.ndarray, rows: Sequence[int] | np.ndarray) -> np.ndarray:
        """``scores(query_vector)[rows]``, bit for bit, reading only those rows: a few of a long session's messages
        asked about (a turn's lead compares the query with the newest questions before it knows whether it needs
        every message's cosine)."""
        wanted = np.asarray(rows, dtype=np.intp)
        if not len(wanted):
            return np.zeros(0, dtype=np.float64)
        starts = np.cumsum([0, *(len(block) for block in self._blocks)])
        block_of = np.searchsorted(starts, wanted, side="right") - 1
        held = np.stack(
            [self._blocks[b][r - starts[b]] for b, r in zip(block_of.tolist(), wanted.tolist(), strict=True)]
        )
        if self._held is np.float32:
            return np.einsum("ij,j->i", held, unit_rows(query_vector)[0]).astype(np.float64)
        query = unit_rows(query_vector)[0] * _HALF_BIAS
        out = np.empty(len(wanted), dtype=np.float32)
        for start in range(0, len(held), self.WIDEN_ROWS):  # the same widening and product as ``scores``
            some = held[start : start + self.WIDEN_ROWS]
            wide = widened(some, np.empty(some.shape, dtype=np.float32))
            np.einsum("ij,j->i", wide, query, out=out[start : start + len(some)])
        return out.astype(np.float64)


async def dense_scores(
    embedder: Embedder, query: str, *, texts: Sequence[str] = (), index: VectorIndex | None = None
) -> np.ndarray:
    """Cosine of ``query`` with each candidate: with ``index`` its held vectors (texts embedded earlier), else
    ``texts`` embedded now in one call with the query."""
    if index is not None:
        (query_vector,) = await embedder.embed([query])
        return index.scores(query_vector)
    if not texts:
        return np.zeros(0, dtype=np.float64)
    vectors = unit_rows(await embedder.embed([query, *texts]))
    return (vectors[1:] @ vectors[0]).astype(np.float64)


# ---------------------------------------------------------------------------------------------
# Fusion and the relevance floor
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Floor:
    """What a candidate needs to count as relevant at all. It enters a signal's ranking when its lexical score
    is above ``min_lexical`` (default: it shares a query term) or its cosine is at least ``min_dense`` (``None``:
    every candidate enters the dense ranking); a candidate in neither ranking is left out. When every candidate is
    left out the ranking is empty and ``Ranking.reason`` says why: the engine may return nothing."""

    min_lexical: float = 0.0
    min_dense: float | None = None


RRF_K = 60
"""Reciprocal-rank fusion's constant (Cormack et al. 2009): score = sum of weight / (RRF_K + rank), ranks from 1."""


@dataclass(frozen=True)
class Ranking:
    """Candidates best first: ``positions[i]`` is a candidate's position, ``scores[i]`` its fused score."""

    positions: np.ndarray
    scores: np.ndarray
    lexical: np.ndarray | None = None
    """Each candidate's BM25 score (by position), when the lexical signal was used."""
    dense: np.ndarray | None = None
    """Each candidate's cosine (by position), when the dense signal was used."""
    reason: str | None = None
    """Why the ranking is empty (the floor left nothing, or there was nothing to rank); ``None`` otherwise."""

    def __len__(self) -> int:
        return len(self.positions)

    @property
    def method(self) -> str:
        used = [name for name, scores in (("lexical", self.lexical), ("dense", self.dense)) if scores is not None]
        return "+".join(used) or "none"


def rank_positions(scores: np.ndarray, order: np.ndarray, eligible: np.ndarray) -> np.ndarray:
    """Positions of the ``eligible`` candidates by ``scores`` descending, ties by ``order`` ascending."""
    candidates = np.flatnonzero(eligible)
    keys = np.lexsort((order[candidates], -scores[candidates]))
    return candidates[keys]


def fuse(
    *,
    lexical: np.ndarray | None = None,
    dense: np.ndarray | None = None,
    order: Sequence[int] | np.ndarray | None = None,
    floor: Floor = Floor(),
    weights: tuple[float, float] = (1.0, 1.0),
    rrf_k: int = RRF_K,
) -> Ranking:
    """Rank candidates by reciprocal-rank fusion of the given signals (per-candidate score arrays of one length).

    Each signal ranks the candidates that pass its floor (see ``Floor``); a candidate's fused score is
    ``weights[0] / (rrf_k + lexical rank) + weights[1] / (rrf_k + dense rank)``, a signal it is not ranked by adding
    nothing. With one signal this is that signal's order. ``order`` breaks ties (default: position).
    """
    signals = [s for s in (lexical, dense) if s is not None]
    if not signals:
        return _empty(lexical, dense, "no relevance signal (neither lexical nor dense scores)")
    n = len(signals[0])
    if any(len(s) != n for s in signals):
        raise ValueError("lexical and dense scores must cover the same candidates")
    if n == 0:
        return _empty(lexical, dense, "nothing to rank")
    ordering = np.arange(n) if order is None else np.asarray(order)
    fused = np.zeros(n, dtype=np.float64)
    ranked = np.zeros(n, dtype=bool)
    for scores, weight, eligible in _eligible(lexical, dense, floor, weights):
        positions = rank_positions(scores, ordering, eligible)
        fused[positions] += weight / (rrf_k + np.arange(1, len(positions) + 1))
        ranked[positions] = True
    if not ranked.any():
        return _empty(lexical, dense, floor_reason(lexical, dense, floor))
    positions = rank_positions(fused, ordering, ranked)
    return Ranking(positions, fused[positions], lexical, dense)


def _eligible(
    lexical: np.ndarray | None, dense: np.ndarray | None, floor: Floor, weights: tuple[float, float]
) -> list[tuple[np.ndarray, float, np.ndarray]]:
    out = []
    if lexical is not None:
        out.append((lexical, weights[0], lexical > floor.min_lexical))
    if dense is not None:
        eligible = np.ones(len(dense), dtype=bool) if floor.min_dense is None else dense >= floor.min_dense
        out.append((dense, weights[1], eligible))
    return out


def floor_reason(lexical: np.ndarray | None, dense: np.ndarray | None, floor: Floor) -> str:
    """Why nothing passed ``floor``, in words a snapshot reader can act on."""
    parts = []
    if lexical is not None:
        parts.append("no candidate shares a word with the query")
    if dense is not None and floor.min_dense is not None:
        parts.append(f"the closest in meaning scores {float(dense.max()):.2f}, below the floor {floor.min_dense:.2f}")
    return "nothing relevant: " + " and ".join(parts)


def _empty(lexical: np.ndarray | None, dense: np.ndarray | None, reason: str) -> Ranking:
    return Ranking(np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.float64), lexical, dense, reason)


# ---------------------------------------------------------------------------------------------
# Abstention: is there evidence at all?
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Evidence:
    """When a query has evidence among the candidates, and which candidates count, for one embedder.

    Absolute cosine is not the signal: an unanswerable question's best cosine (0.22-0.48 with MiniLM on
    bench/conversation_data.py) overlaps an answerable one's (0.32-0.86). What separates them better is how far the
    best candidate stands out from the rest *for this query*: its z-score over every candidate's cosine. A query has
    evidence when its best candidate is an outlier in meaning (``min_outlier_z``) or holds at least ``min_coverage``
    of the query's idf weight (its rare words; at 0, any word of the query). Among the candidates of a query that has
    evidence, one enters the dense ranking only when its z-score is at least ``keep_z`` (None: every candidate), so
    packing stops where the ranking turns to noise instead of filling the room with it; and the lexical ranking only
    when it holds at least ``keep_coverage`` of the query's idf weight. Rank fusion reads ranks, not scores: a message
    sharing only the query's common words ("make", "week") would otherwise rank high by words and push the message
    that says the same thing in other words (found by meaning alone) down the fused ranking."""

    min_outlier_z: float
    min_coverage: float
    keep_z: float | None
    keep_coverage: float = 0.0
    faint_coverage: float = 0.0
    """Below this share of the query's idf weight (and no outlier in meaning) a query that has evidence has faint
    evidence (``faint``): past its best hits, its ranking is no better than chance."""
    thing_z: float | None = None
    """A question about a thing no earlier message names ("What is the name of Dan's dog?" where no message says
    "dog": ``asked_thing``) has no evidence unless its best candidate stands out in meaning by at least this many
    standard deviations (it may call the thing another way: "What is Kat's new animal called?" for her hamster).
    None: the rule is off (words alone cannot tell a thing called another way)."""
    near_cosine: float | None = None
    """A query has evidence too when its best candidate is this near in meaning (its cosine, not its z-score): news
    told and then talked over, or a list told over a few sessions, puts several messages near the question, so none
    stands out from the rest by ``min_outlier_z`` (docs/knowledge.md, "Session 57 (gate57)"). Read by what a
    message says itself: a stock line many messages share ("So what's your favourite drink these days?") is near
    many questions and tells nothing. An embedder's own scale: None for one not calibrated (the rule is off)."""


EVIDENCE = {
    "hashing": Evidence(min_outlier_z=3.0, min_coverage=0.10, keep_z=None),
    "": Evidence(
        min_outlier_z=3.5,
        min_coverage=0.0,
        keep_z=0.5,
        keep_coverage=0.25,
        faint_coverage=0.10,
        thing_z=3.0,
        near_cosine=0.35,
    ),
}
"""Calibrated on bench/conversation_data.py's four chats and bench/dense_chats.py's four (539 answerable questions;
docs/history/knowledge-log.md, "Abstention, round 3"): values that cost no answerable question its abstention (a
paraphrase shares few rare words with its evidence: 0.15 of their weight abstained on 14), and 2 of 138 one evidence
message through ``keep_z``. Since round 4 a neural embedder's word condition is any shared word (``min_coverage``
0): every question nothing answers that 0.10 caught shared no word at all with the chat, while three answerable ones
on bench/varied_chats.py's chats shared 9-10% ("Where did Anastasia go on a bike ride?"). The hashing embedder's
cosines are words in disguise: its dense signal is weak and not floored, nor can it tell a thing called another way
(``thing_z``: session 47 chose 2.5, under every answerable question about a thing no message names, 3.1 and up;
session 57 raised it to 3.0, where that still holds over every dev set's 1,813 answerable questions, 3.11 the lowest,
and three more questions nothing answers are caught, 2.58-2.96: "What breed is my neighbour's parrot?"). Below
the old word condition (``faint_coverage`` 0.10), with no outlier in meaning, the evidence is faint (``faint``):
history recall then trusts only its best hit. ``near_cosine`` (session 57) 0.35: of the questions the other rules
left abstaining over every dev set, the topics never raised reach at most 0.344 by a message's own lines (a cocktail
asked of a chat that talks of drinks), the answerable ones 0.315-0.390 (news talked over: "When is Dario travelling
to East Asia?" <- "I'm flying out to Japan next month"; 9 of 13 from 0.35). Keyed by a word of the embedder's
``vector_space``; "" is every other (neural) embedder, calibrated on MiniLM."""


def evidence_for(embedder: Any) -> Evidence:
    """The ``Evidence`` calibrated for ``embedder`` (None: words only, the default's thresholds for them)."""
    space = "" if embedder is None else str(getattr(embedder, "vector_space", "") or type(embedder).__name__).lower()
    return next((e for key, e in EVIDENCE.items() if key and key in space), EVIDENCE[""])


MIN_SPREAD = 1e-6
"""Cosines spread less than this (standard deviation) are all alike: none stands out."""


def z_scores(dense: np.ndarray) -> np.ndarray:
    """Each cosine's distance from the mean of the candidates' cosines, in standard deviations (0 when all agree).
    Candidates without a vector (scored -1) are left out of the mean and scored -inf."""
    held = dense > -1
    out = np.full(len(dense), -np.inf)
    if held.sum() < 2:
        return np.where(held, 0.0, out)
    mean, std = float(dense[held].mean()), float(dense[held].std())
    out[held] = (dense[held] - mean) / std if std >= MIN_SPREAD else 0.0
    return out


_CAPITALISED = re.compile(r"\b[A-Z][a-z]{2,}\b")
CALENDAR = frozenset(
    "monday tuesday wednesday thursday friday saturday sunday mon tue tues wed thu thur thurs fri sat sun "
    "january february march april may june july august september october november december "
    "jan feb mar apr jun jul aug sep sept oct nov dec".split()
)
"""Capitalised words that name a day or a month, not someone or somewhere: a history gives its dates in any form
("2023-05-08", "8/5", "last week"), so a question's "Saturday" or "May" that no message spells out is no sign that
nothing earlier is about it."""
_OPENS_SENTENCE = frozenset(".!?:;\n\r…")
_BEFORE_A_WORD = " \t\"'“”‘’([{*•–—-"
"""What may stand between a sentence's end and its first word: spaces, quotes, brackets, a list's bullet."""
_OPENS_A_QUOTE = frozenset("\"'“‘([{")
"""A quotation or an aside opens like a sentence: its first word's capital says nothing ('did she say "Thanks"?')."""


def names_asked(query: str) -> list[str]:
    """The names a question asks about, in order, once each: its capitalised words that do not open a sentence, a
    line, a quotation, an aside in brackets or a clause after a colon ("Maya: Where is it?"), and are not days or
    months. None in a question written in title case ("Where Did Maya Go?"): there the capitals say nothing. A name
    has no synonym, so one nothing earlier mentions makes a question nothing earlier answers; a word wrongly taken for
    a name would make recall abstain on an answerable question, so only the clear cases count."""
    found = list(_CAPITALISED.finditer(query))
    if not found or _title_case(query):
        return []
    names: dict[str, None] = {}
    for match in found:
        before = query[: match.start()].rstrip(_BEFORE_A_WORD)
        gap = query[len(before) : match.start()]
        opens = not before or before[-1] in _OPENS_SENTENCE or not _OPENS_A_QUOTE.isdisjoint(gap)
        if not opens and match.group().lower() not in CALENDAR:
            names[match.group()] = None
    return list(names)


def names_a_kind(query: str, name: str) -> bool:
    """Whether ``name`` qualifies a kind of thing after an indefinite article in ``query`` ("a gentle cover of an old
    Oasis hit", "a Beatles song", "an Ikea desk"): it says which kind, and a chat may name the thing itself
    ("Wonderwall") and never the name, so its absence says nothing earlier is about it no more than a common word's
    would (docs/history/knowledge-log.md, "Abstention, session 50"); so does one right after "which" or "what" ("Which
    American city are my visitors from?"; not "What did Dmitri say?"). Someone is not asked about that way ("my
    colleague Ingrid")."""
    kind = rf"{re.escape(name)}\s+[a-z]"
    return re.search(rf"\b(?i:an?)\s+(?:[a-z]+\s+){{0,2}}{kind}|\b(?i:which|what)\s+{kind}", query) is not None


KIN = frozenset(
    "mum mom mam mummy mommy mother dad daddy father grandma grandpa gran granny grandad granddad nan nana nanna "
    "auntie aunty papa mama".split()
)
"""Kinship words people capitalise as they write them ("Mum's move", "Dad"): a closed list of function words, not
names. The chat may say "my mother" (bench/fresh8_chats.py's "On what day did my Mum go to Kinsale?")."""


def names_kin(name: str) -> bool:
    """Whether ``name`` is a kinship word written capitalised (``KIN``): someone the chat may call another way."""
    return name.lower() in KIN


_COMPASS = "North|South|East|West|Central|Northern|Southern|Eastern|Western|Middle|Far|Upper|Lower"
REGIONS = frozenset(
    "africa america americas antarctica arctic asia australasia europe oceania scandinavia nordics balkans baltics "
    "caribbean mediterranean midlands highlands alps andes himalayas".split()
)
"""Regions many places lie in: continents and the few multi-country regions a chat's plans and trips are asked by."""


def names_a_region(query: str, name: str) -> bool:
    """Whether ``name`` names a region in ``query``: a continent or region (``REGIONS``), or a compass word and the
    name it qualifies ("East Asia", "South America", "the West Country"). A region is a kind of place: a chat names
    the place in it ("I'm flying out to Japan next month" for "When is Dario travelling to East Asia?") and may never
    say the region, so its absence says nothing earlier is about it (docs/knowledge.md, "Session 57 (gate57)")."""
    if name.lower() in REGIONS:
        return True
    word = re.escape(name)
    qualified = re.search(rf"\b(?:{_COMPASS})\s+{word}\b", query)  # "Asia" in "East Asia"
    qualifies = re.fullmatch(_COMPASS, name) and re.search(rf"\b{word}\s+[A-Z][a-z]", query)  # "East" in "East Asia"
    return bool(qualified or qualifies)


_TITLE_SMALL_WORDS = frozenset("a an and as at but by for from in nor of on or the to with".split())


def _title_case(text: str) -> bool:
    """Whether every word after the first starts with a capital, but the small ones title case leaves alone."""
    rest = [w for w in re.findall(r"[^\W\d_][\w'’-]*", text)[1:] if w.lower() not in _TITLE_SMALL_WORDS]
    return len(rest) >= 2 and all(w[0].isupper() for w in rest)


def abstention(
    evidence: Evidence,
    coverage: np.ndarray,
    dense: np.ndarray | None,
    near: Callable[[], np.ndarray | None] | None = None,
) -> str | None:
    """Why the candidates hold no evidence for the query (None: they may). With dense scores: neither a clear outlier
    in meaning, nor a candidate near it in meaning (``near_cosine``, read from ``near()`` when the other rules found
    nothing, else ``dense``: a history reads it by what each message says itself, not the stock lines many share),
    nor one holding the query's rare words. Without: no candidate holding any of its words."""
    best_coverage = float(coverage.max(initial=0.0))
    if dense is None or not len(dense):
        return None if best_coverage > 0 else "nothing relevant found: no earlier message shares a word with the query"
    best_z = float(z_scores(dense).max(initial=0.0))
    if best_z >= evidence.min_outlier_z or (best_coverage > 0 and best_coverage >= evidence.min_coverage):
        return None
    nearest = ""
    if evidence.near_cosine is not None:  # read only for an embedder calibrated for it (``near()`` costs a pass)
        cosines = None if near is None else near()
        best = float((dense if cosines is None else cosines).max(initial=-1.0))
        if best >= evidence.near_cosine:
            return None
        nearest = f", nor near it: {best:.2f}, from {evidence.near_cosine:.2f}"
    words = (
        f"holds the query's rare words (at most {best_coverage:.0%} of their weight, evidence from "
        f"{evidence.min_coverage:.0%})"
        if evidence.min_coverage
        else "shares a word with it"
    )
    return (
        f"nothing relevant found: no earlier message stands out in meaning (the best is {best_z:.1f} standard "
        f"deviations above the rest, evidence from {evidence.min_outlier_z:.1f}{nearest}) or {words}"
    )


def faint(evidence: Evidence, coverage: np.ndarray, dense: np.ndarray | None) -> bool:
    """Whether a query that has evidence has only faint evidence: no candidate stands out in meaning, nor holds
    ``faint_coverage`` of its idf weight (it passed the gate by a common word shared)."""
    if dense is None or not len(dense) or float(coverage.max(initial=0.0)) >= evidence.faint_coverage:
        return False  # the words tell first: the cosines' z-scores are read only for a query that shares few
    return float(z_scores(dense).max(initial=0.0)) < evidence.min_outlier_z


def lexical_floor(evidence: Evidence, lexical: np.ndarray, coverage: np.ndarray) -> np.ndarray:
    """``lexical`` with the scores of the candidates holding less than ``keep_coverage`` of the query's idf weight set
    to 0 (out of the lexical ranking)."""
    return np.where(coverage >= evidence.keep_coverage, lexical, 0.0) if evidence.keep_coverage else lexical


def dense_floor(evidence: Evidence, dense: np.ndarray | None) -> Floor:
    """The ``Floor`` for a query that has evidence: the cosine at ``keep_z`` standard deviations above the mean."""
    if dense is None or evidence.keep_z is None or not len(dense):
        return Floor()
    held = dense[dense > -1]
    if len(held) < 2 or held.std() < MIN_SPREAD:  # no spread, no outlier: every candidate enters
        return Floor()
    return Floor(min_dense=float(held.mean() + evidence.keep_z * held.std()))


# ---------------------------------------------------------------------------------------------
# Packing under a budget
# ---------------------------------------------------------------------------------------------


Redundant = Callable[[int, Sequence[int]], bool]
"""``redundant(position, chosen_positions)``: whether a candidate only repeats what is already chosen."""


@dataclass(frozen=True)
class Packing:
    """What ``pack`` chose: ``chosen`` positions in the order they were taken (best first)."""

    chosen: tuple[int, ...]
    used: int
    budget: int
    considered: int
    """How far down the ranking packing went (every candidate when the budget outlasts the ranking)."""
    too_large: int = 0
    """Candidates passed over because they did not fit in what was left."""
    redundant: int = 0
    """Candidates passed over as near-duplicates of chosen ones."""

    def in_order(self, order: Sequence[int] | np.ndarray) -> list[int]:
        """The chosen positions sorted by ``order`` (conversation or document order)."""
        return sorted(self.chosen, key=lambda p: (order[p], p))


def pack(
    positions: Sequence[int] | np.ndarray,
    costs: Sequence[int] | np.ndarray,
    budget: int,
    *,
    redundant: Redundant | None = None,
    smallest_cost: int | None = None,
) -> Packing:
    """Take candidates down ``positions`` (best first) while they fit in ``budget`` tokens.

    The contract: ``used = sum(costs of chosen) <= budget``; a candidate is skipped only when it does not fit in
    what is left after every better one taken, or ``redundant`` says it repeats chosen ones; packing never stops
    while budget is left and candidates remain (no fixed k), except that it stops once what is left is below
    ``smallest_cost`` (default: the cheapest candidate's cost), since nothing further could fit. So a better
    candidate that fits is never dropped in favour of a worse one.
    """
    cost = np.asarray(costs)
    if budget <= 0 or not len(positions):
        return Packing((), 0, max(budget, 0), 0)
    floor_cost = int(cost.min()) if smallest_cost is None else smallest_cost
    chosen: list[int] = []
    left, considered, too_large, repeats = budget, 0, 0, 0
    for position in positions:
        if left < floor_cost:
            break
        considered += 1
        c = int(cost[position])
        if c > left:
            too_large += 1
        elif redundant is not None and redundant(int(position), chosen):
            repeats += 1
        else:
            chosen.append(int(position))
            left -= c
    return Packing(tuple(chosen), budget - left, budget, considered, too_large, repeats)


def near_duplicates(vectors: np.ndarray, threshold: float) -> Redundant:
    """A ``redundant`` test: a candidate whose unit vector's cosine with a chosen one's is at least ``threshold``."""
    matrix = unit_rows(vectors)

    def redundant(position: int, chosen: Sequence[int]) -> bool:
        return bool(chosen) and float(np.max(matrix[list(chosen)] @ matrix[position])) >= threshold

    return redundant


# ---------------------------------------------------------------------------------------------
# All together, for a list of candidates
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Candidate:
    """Something that may enter the window: ``tokens`` is what it costs as sent, ``order`` its place in the
    conversation or document (chosen candidates come back sorted by it)."""

    id: Hashable
    text: str
    tokens: int
    order: int


@dataclass(frozen=True)
class Selection:
    """The chosen candidates in ``order``, what they cost, and what the snapshot shows about the choice."""

    chosen: tuple[Candidate, ...]
    used: int
    budget: int
    ranked: int
    """How many candidates passed the floor."""
    considered: int
    method: str
    reason: str | None = None
    """Why nothing was chosen (``None`` when something was)."""
    scores: dict[Hashable, float] = field(default_factory=dict)
    """Fused score of each chosen candidate, by id."""

    def snapshot(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "method": self.method,
            "chosen": len(self.chosen),
            "ranked": self.ranked,
            "considered": self.considered,
            "used_tokens": self.used,
            "budget": self.budget,
        }
        if self.reason:
            out["reason"] = self.reason
        return out


async def select(
    query: str,
    candidates: Sequence[Candidate],
    budget: int,
    *,
    embedder: Embedder | None = None,
    lexical: bool = True,
    floor: Floor = Floor(),
    weights: tuple[float, float] = (1.0, 1.0),
    redundancy: float | None = None,
) -> Selection:
    """Rank ``candidates`` for ``query`` (BM25 over their texts, cosine through ``embedder`` when given, fused by
    RRF above ``floor``) and pack the best into ``budget`` (see ``pack``). ``redundancy``: skip a candidate whose
    cosine with a chosen one is at least this (needs ``embedder``). Returns them in ``order``."""
    texts = [c.text for c in candidates]
    lexical_scores = BM25Index(texts).scores(query) if lexical else None
    dense = None
    vectors = None
    if embedder is not None and candidates:
        vectors = unit_rows(await embedder.embed([query, *texts]))
        dense = (vectors[1:] @ vectors[0]).astype(np.float64)
    order = np.asarray([c.order for c in candidates], dtype=np.int64)
    ranking = fuse(lexical=lexical_scores, dense=dense, order=order, floor=floor, weights=weights)
    redundant = near_duplicates(vectors[1:], redundancy) if redundancy is not None and vectors is not None else None
    packing = pack(ranking.positions, [c.tokens for c in candidates], budget, redundant=redundant)
    fused = dict(zip(ranking.positions.tolist(), ranking.scores.tolist(), strict=True))
    chosen = tuple(candidates[p] for p in packing.in_order(order))
    reason = ranking.reason or (None if chosen else "nothing ranked fits the budget")
    return Selection(
        chosen,
        packing.used,
        packing.budget,
        len(ranking),
        packing.considered,
        ranking.method,
        reason,
        {candidates[p].id: fused[p] for p in packing.chosen},
    )
