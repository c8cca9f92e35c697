"""A small in-memory BM25 index over a collection's chunks (Okapi BM25, k1=1.2, b=0.75)."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
import snowballstemmer

_TOKEN = re.compile(r"[a-z0-9_]+")
# Function words carry no topic; dropping them keeps BM25 from rewarding "the" and "of".
STOPWORDS = frozenset(
    "a an and are as at be by can do does for from has have how i if in is it its of on or that the "
    "their there these this to was what when where which who why will with you your".split()
)


_STEMMER = snowballstemmer.stemmer("english")


@lru_cache(maxsize=100_000)
def stem(word: str) -> str:
    """English Snowball stem, so "grows", "growing" and "grow" match (cached: vocabularies are small)."""
    return _STEMMER.stemWord(word)


def terms(text: str) -> list[str]:
    return [stem(t) for t in _TOKEN.findall(text.lower()) if t not in STOPWORDS]


class BM25Index:
    def __init__(self, texts: Sequence[str], *, k1: float = 1.2, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        docs = [Counter(terms(t)) for t in texts]
        self._n = len(docs)
        self._lengths = np.array([sum(d.values()) for d in docs], dtype=np.float64)
        self._avg = float(self._lengths.mean()) if docs else 0.0
        postings: dict[str, tuple[list[int], list[int]]] = {}
        for i, doc in enumerate(docs):
            for term, tf in doc.items():
                rows, tfs = postings.setdefault(term, ([], []))
                rows.append(i)
                tfs.append(tf)
        # Inverted index: term -> (rows, term frequencies), so a query touches only matching texts.
        self._postings = {t: (np.array(r), np.array(f, dtype=np.float64)) for t, (r, f) in postings.items()}
        self._idf = {t: math.log(1 + (self._n - len(r) + 0.5) / (len(r) + 0.5)) for t, (r, _) in postings.items()}

    def __len__(self) -> int:
        return self._n

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every indexed text for ``query`` (0 where no query term occurs)."""
        out = np.zeros(self._n, dtype=np.float64)
        if not self._n:
            return out
        norm = self.k1 * (1 - self.b + self.b * self._lengths / (self._avg or 1.0))
        for term in set(terms(query)):
            if term not in self._postings:
                continue
            rows, tf = self._postings[term]
            out[rows] += self._idf[term] * tf * (self.k1 + 1) / (tf + norm[rows])
        return out
