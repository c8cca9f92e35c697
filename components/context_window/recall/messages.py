"""Recall of a session's older messages: an index of its history that the relevance engine searches.

``HistoryIndex`` holds one session's messages in history order with their BM25 terms and (when an embedder is
given) their vectors; ``recall`` ranks the messages older than a position for a query (lexical + dense, fused by
RRF, see ``relevance.py``) and hands back whole units: an assistant message that called tools together with the
``tool`` results answering it, as the window must send them. ``SessionRecall`` implements the component's
``HistoryRecall`` protocol over one ``HistoryIndex`` per session, kept in a bounded cache and brought up to date
from the session's ``MessageSource`` at first use: only messages added since the last call are read and indexed.

A pure module: the application may feed an index as it records messages (``HistoryIndex.add``) and keep the
vectors where replicas and restarts find them again (``PartVectors``, keyed by ``part_key``); nothing here knows
about storage.
"""

from __future__ import annotations

import asyncio
import bisect
import dataclasses
import functools
import hashlib
import logging
import math
import re
import time
from array import array
from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from itertools import islice, repeat
from operator import contains
from typing import Any, Protocol, TypeVar

import numpy as np

from ..answer_types import asked_type, asks_back, gives_type_about, holder, holds_type
from ..asked_thing import thing_asked
from ..background import Background
from ..base import (
    ChatMessages,
    Embedder,
    InMemoryMessages,
    Message,
    MessageSource,
    RecalledUnit,
    RecallLead,
    RecallRanking,
    Session,
    column,
    followed_by,
    pages_newest_first,
)
from ..fitting import LIKELY_CHARS_PER_TOKEN
from ..isolation import describe_error
from ..offload import Runner, guarded, retrieved, run_sized
from ..phases import visible
from ..relevance import (
    CALENDAR,
    RRF_K,
    TAKEN_VECTORS_BYTES,
    VECTORS_BY_TEXT_BYTES,
    BM25Index,
    DigestTable,
    Evidence,
    Floor,
    GrowingArray,
    PartRuns,
    VectorIndex,
    abstention,
    dense_floor,
    evidence_for,
    faint,
    fuse,
    lexical_floor,
    names_a_kind,
    names_a_region,
    names_asked,
    names_kin,
    terms,
    unit_rows,
    z_scores,
)
from ..session_cache import BoundedCache, VectorsByText
from . import named
from .dates import after_date, dated_among
from .packed import PackedMessages

EMBED_CHARS = 2_000
"""Characters of a part embedded (small embedders read ~256-512 tokens anyway; the rest costs time for nothing)."""
DATA_CHARS = 600
"""A "sentence" longer than this is data (a one-line JSON table, a log line, minified code): a sentence of prose is
shorter (the recall and conversation benches' longest is 162 characters), and is embedded whole."""
DATA_HEAD_CHARS = 50
"""Characters embedded of data: a tool result, and any "sentence" longer than ``DATA_CHARS``. Its head says what the
data is (its first keys, or a report's opening words); what it holds further on (ids, figures) is found by its words.
Data is an agent turn's longest text, and the embedder's cost follows the word pieces it reads (~0.3-1 ms of CPU each
with the default embedder; 600 characters of JSON are ~280-300 pieces, 150 ~70, 50 ~22): in bench/data_head_bench.py
a 50-character head recalls old tool results as a 150- or 600-character one does (docs/knowledge.md,
"What is indexed, and where the vectors live"), and an agent session's tool result and the answer quoting it were two
thirds of what its turn embedded."""
EMBED_BATCH = 64
INDEX_SLICE = 128
"""Messages indexed (or split into parts, or given their vectors) between two yields to the event loop: a
100,000-message history is seconds of work, which must not stall every other request meanwhile. A slice is ~8 ms
on a loaded machine: a request such as /healthz takes several turns of the loop, and waits behind a slice at each."""
T = TypeVar("T")
R = TypeVar("R")
MAX_PARTS = 8
"""A message is embedded as its sentences (consecutive ones grouped when there are more than this many parts), and
matches a query by its best part: one fact in a long message is not diluted by the rest. Measured on the recall
bench: 85-90% at 4,000 tokens against 63% for whole-message vectors (docs/knowledge.md, "History recall")."""
WEIGHTS = (0.5, 1.0)
"""RRF weights of the lexical and dense rankings when both are there (measured: 0.5/1 beat 1/1 and 1/0.5)."""
NEIGHBOURS = 2
"""How many messages on each side of one of the best hits are ranked with it (its exchange)."""
NEIGHBOURS_OF = 5
"""The best this many hits bring their exchanges."""
NEIGHBOUR_MAX_CHARS = 300
"""Only a short neighbour comes with its hit (a reply, a follow-up line): a long assistant answer beside a user's
fact would spend the room of several hits (recall_bench.py's chats: 63 / 76% at 4K / 8K with every neighbour)."""
NEIGHBOUR_SHARE = 0.9
"""A neighbour's score is this share of its hit's: with RRF scores, the best hit's neighbours rank about 8th."""
FAINT_HITS = 1
"""A question about no one in particular whose evidence is faint (``relevance.faint``: nothing stands out in meaning,
and it shares only common words with the history) recalls its best hit alone, with its exchange, and its few best
short messages by whole meaning (``FAINT_GUESSES``); the room left goes to the newest older turns, as when recall
abstained: past its best hit such a ranking is chance, and the newest turns are the likelier place for what it asks
(recall_bench.py's "What should I leave out when I cook for my sibling?" ranked its evidence 179th, 26 messages
back: the ranking filled 5.7K / 12K tokens and left it out at 8K and 16K). A question about someone keeps its whole
ranking: their own messages count double (``ABOUT_FACTOR``), a prior that held "How many concerts did Marisol go
to?"'s three messages at 8K / 16K (docs/history/knowledge-log.md, "Faint evidence")."""
FAINT_GUESSES = 5
"""A faint question (``FAINT_HITS``) also recalls this many short messages (``NEIGHBOUR_MAX_CHARS``), the best by
whole meaning (``WHOLE_WEIGHT``): a line that says all of what is asked in other words ("he has me squeezing putty"
for "Which physical therapy exercise involves a soft modelling substance?") ranks there 2nd-4th while long messages
holding one alike sentence lead by best part (27th-53rd). Short, so the guesses cost the newest older turns little:
~40 tokens each (docs/history/knowledge-log.md, "Ranking, session 43")."""
FAINT_POOL = 200
"""How many of the best short messages by whole meaning a faint question's guesses are chosen from, read again by
their parts' lengths: the message a tacked-on "Ideas?" halved ranked 52nd-57th among them
(docs/history/knowledge-log.md, "Ranking, session 49"). Bounded, as its parts are split again per question (~8 us a
message: a long history's every short message, 65 ms at 10,142, on the first faint question of an index)."""
WHOLE_WEIGHT = 0.5
"""RRF weight of the ranking of every message by its mean part cosine with the question (how much of the whole
message is about it, beside its best part's), under no floor: a long message whose every sentence bears on the
question rises above one that shares a sentence of chatter with it, and news told in other words, below the dense
floor, comes before what the newest older turns would fill (a question about someone: their own messages count double,
``ABOUT_FACTOR``, so "Named her Pretzel in the end" comes for "What is Kat's new animal called?" before the others'
alike lines). Only the lexical ranking's weight: the best part (``WEIGHTS``' 1.0) still leads. Not for a faint
question (``FAINT_HITS``). The plain hybrid's whole-message vectors held what tda's best parts passed over on
bench/fresh2_chats.py (docs/history/knowledge-log.md, "A second held-out set")."""
WHOLE_TEXT_WEIGHT = 0.5
"""RRF weight of the ranking of the messages of ``WHOLE_TEXT_PARTS`` parts by their whole text's vector, the mean of
their parts' (a fourth ranking, over the fused one), only when the room is ample (``WHOLE_TEXT_ROOM``). News said in
passing after a sentence of chatter ("I've been binge-watching a baking show ... Other news: we got the keys to a place
in Ludlow") is at noise level by each part; ranked among the few messages of its kind it comes inside a 16K window's
room (docs/history/knowledge-log.md, "Ranking, session 52 (miss16)", "Session 53 (whole16b)")."""
WHOLE_TEXT_PARTS = (2, 3)
"""A message is ranked by its whole text when it has this many parts (``parts_of``): a sentence of chatter and the news.
One part is its own whole; longer messages (answers, code) read worse as one vector than as parts."""
WHOLE_TEXT_ROOM = 16_000
"""The whole-text ranking applies when recall gathers at least this many tokens (``enough_tokens``, twice the recall
room: a 16K window's): below it the room's edge is a handful of units, and the ranking swaps as many as it adds."""
PLAIN_FROM = 40
"""At ample room (``is_ample``: a 16K window's), how many of tda's best units lead before the plain hybrid's
(``plain_ranking``) take every other place (``interleaved``). tda's fusion is sharper at the top than any plain ranker,
but in a room of ~300 units its 150th-470th (the second, shorter statement of an inference, lists asked in general
words) are worth less than a different ranker's 50th-200th: the plain hybrid reads the asked-about person's name in
the speaker tags, and held at 16K what tda ranked 375th-470th (fresh6 16K +4.2 / +2.8 points, session 58, dense58).
Only for a question naming a speaker (``names_a_speaker``): a user-and-assistant chat has no tag for a name to match,
and there the plain order only pushed tda's own deep units out (assistant 16K 100 -> 96.4, fresh 99.4 -> 98.8 when
ungated). Past 40 at 8K (~40-150 units) it swapped as many as it added (fresh2 -1 / -2, fresh6 +0 / +1), and at 4K
the plain hybrid held 64-68% against tda's 76-85%: below an ample room it comes only past the packed head
(``PLAIN_ROOM``)."""
PLAIN_ROOM = 10_000
"""Below an ample room, the plain hybrid's order is interleaved (for a question naming a speaker) when recall gathers
at least this many tokens (an 8K window's ~12K), past tda's units that fill the head the history packs in rank order
(``PLAIN_HEAD_SHARE``), not past ``PLAIN_FROM``: at 8K the room holds ~190 units, and the second statement of an
inference the plain hybrid ranks 30th-42nd ("Dario: The hotter the better, my mouth is numb.", tda's 160th-195th) came
in for tda's deep units: fresh6 8K +3 -0, fresh4 -1 (a counting item at the room's edge), fresh5, fresh2, fresh,
varied, classic +0 -0 (session 59, name59). At 4K (~5.7K gathered, ~90 units) it lost a list and gained nothing; past
half the packed head there (0.125 of the gather) it swapped units at the room's edge: fresh6 +3 / +2 -2 (the hotpot
second statements in, two lists out), fresh5 -1 / +1 -2, fresh2 -1 / -4, fresh4 +0 / +0 (single hops, a count and
latest facts out; session 59, half4k59)."""
PLAIN_HEAD_SHARE = 0.25
"""Below an ample room, tda's best units whose rough tokens fill this share of what recall gathers (twice the room:
the history's packed head, ``RECALL_RANKED_SHARE`` of the room) lead before the plain order takes every other place.
From half the head (0.125) fresh6 took +3 -2 at 8K (lists pushed out) and +5 -2 at 4K (session 59, name59)."""
THEIRS_FIRST_FROM = 100
"""At ample room, for a question naming a speaker (the ``PLAIN_FROM`` gate), how many of the final ranking's best
units lead before every other message of theirs comes ahead of the others' (``theirs_first``). A 16K room holds ~350
of ~600 messages, and the person asked about said ~300 of them: their line answering a question asked in general
words ("What helps Odile de-stress?" <- "I've gotten really into crochet") is last of theirs by every signal (the
whole-meaning list of theirs: 175th-234th of ~240) and 380th-420th overall, under the other speaker's chatter. With
theirs first it ranks 260th-330th and the room holds it: fresh6 seed 1 16K 95.8 -> 100, the other dev sets the same
(session 59, miss16k59). The ranking's 100 best lead whoever said them: the other speaker's evidence for such a
question (fresh2's questions asked of the wrong person, varied's session date lines) ranks 4th-95th there; from 40 a
date line went from 43rd to 209th. A chat between a user and an assistant has no tag to name: a question there in the
first person is the user's (``asked_of_user``), and past the same 100 their lines come first. The assistant's long
answers fill a 16K room (~11.4K tokens) that the user's ~250 lines (~10K tokens) nearly fill alone: "What kind of
holiday would I enjoy?" <- "We had the best week last year in a cottage with no wifi" went from 252nd to 174th and is
held (assistant seed 1 16K 96.4 -> 98.2; assistant seed 0, fresh2, classic the same; the recall bench's changed 16K
windows, by the hashing embedder, +2 -1 questions under each type; session 60, user60)."""
SAID_ELSEWHERE = 3
"""A sentence said word for word in at least this many messages (the same part vector: "Thinking of getting a
takeaway later, I can't face cooking.", "So happy for you! anything new your end?") says nothing of any one of them,
as a word every message holds says nothing in BM25. A message made only of such sentences has no meaning of its own:
it leaves the rankings by meaning (``HistoryIndex.said_elsewhere``), where a question that shares no word with its
evidence is decided. Ranked by best part, the chat's stock lines that happen to sit near the question in meaning
("getaway" near "takeaway") outranked the one message that told the news in other words (docs/knowledge.md,
"Session 56 (para56)")."""
TYPE_HOLDER_HITS = 3
"""A question asking for a type of answer (``answer_types``) is read as naming its holder in the chat's words when one
of this many best hits holds a word of it; then a message answers only by giving the type about the holder
(``gives_type_about``), else anywhere (a paraphrase: "the animal doctor" for the vet). On the dev sets, 3 caught the
most details never given and lost no answerable question (docs/history/knowledge-log.md, "Abstention, session 50")."""
HOP_FROM = 3
"""The second hop starts from the names in this many best messages, and, for a question describing someone by what
they did (``describes_someone``), in this many best by whole meaning: that first hop is often a short message all
about the description ("Colm let me borrow his van to shift everything into the new flat" for "the man who lent him a
vehicle for the house move"), which a ramble's one sentence outranks by best part, never by whole meaning. Other
questions' best by whole meaning bring names that lead nowhere (fresh5 at 4K: two facts lost to them)."""
DESCRIBED_HOP_FROM = 20
"""...and for a question describing someone, this many best of the final ranking each bring the one other message
holding a rare name they say, when only one does (``HistoryIndex._with_pairs``): the message fitting the description
is told in its own words ("My old mentor Hollis wrote me the loveliest reference" for "the person who vouched for
Rafferty"), ranks 20th-45th under chatter sharing the answer's words, and its pair (Hollis and the alpacas) 90th-270th.
So does the best shown message's name (the answer in the newest turns: the description is then the older one).
fresh6 +3 -0 and fresh5 +1 -0 (of 4K / 8K / 16K), fresh, fresh2, fresh4 +0 -0 (session 58, infer58)."""
_DESCRIBED = re.compile(r"(?<=\w )(?:who|whom|whose)\b", re.IGNORECASE)
"""A relative clause describing someone ("the man who lent...", "the relative who gave..."), not a question's "Who"."""
HOP_WEIGHT = 0.5
"""RRF weight of the second hop's ranking (beside the lexical and dense ones)."""
HOP_MIN_IDF = 2.0
"""A name leads a second hop only when it is rare in the history (idf at least this: in under ~1 message in 7)."""
ABOUT_FACTOR = 2.0
"""A question about someone (``HistoryIndex.asked_about``): their own messages' scores count this many times. What
someone did or has is told mostly by them, in a chat where half the messages are the other person's; a factor keeps
the order within each speaker's messages. Measured on the varied chats (bench/conversation_bench.py, Conversation
First, 4K / 8K / 16K): 85 / 91 / 100% -> 89 / 94 / 100% (x1.5: 88 / 93 / 100%); the classic chats 98 / 99 / 100%
either way (docs/history/knowledge-log.md, "A question about someone")."""
OWN_MEANING_WEIGHT = 1.0
"""RRF weight of a question about someone's own list (``told_by_them``): what they said that no other signal ranks,
by whole meaning among their messages. News told in other words ("I've gone over to oils for good" for "Which medium
has Maya switched to permanently?") shares no word and falls under the dense floor; the whole-meaning ranking over
every message puts it 29th-37th, where RRF's flat tail fuses it 134th-153rd, below what the floors rank. Among the
speaker's own messages no floor ranks it stands out (z over 1), and a list of those alone ranks it 2nd-9th
(docs/history/knowledge-log.md, "Ranking, session 44")."""
OWN_MEANING_TOP = 10
"""At most this many of the speaker's messages enter that list."""
OWN_MEANING_MIN_Z = 1.0
"""A message enters that list when its whole meaning stands out among the speaker's messages by this many standard
deviations: a question whose words are mostly its frame ("How many concerts did Nadia go to?" -> "concerts") finds
the speaker's chatter nearly alike, and would lift it over the evidence the floors rank at the room's edge."""
OWN_MEANING_MIN_WORDS = 8
"""...and holds at least this many words but stopwords (``BM25Index.word_counts``): a short line ("night x", "not
yet, any good?") is near any short question by whole meaning and tells nothing."""
THEIRS_AMPLE_WEIGHT = 0.5
"""At an ample room (``WHOLE_TEXT_ROOM``), RRF weight of a question about someone's list of every message of theirs by
whole meaning (``HistoryIndex.theirs_by_meaning``; counted ``ABOUT_FACTOR`` times, as their other scores). "What does
Dario do to unwind?" is answered by "I've gotten really into crochet" and "My new thing is thousand-piece jigsaws":
each its own message, sharing no word with the question and no nearer to it in meaning than their chatter (20th-300th
of ~300 of theirs), so every list leaves them 200th-500th of ~550, under the other speaker's chatter a 16K room holds
(~350 messages). Among their own they come inside the room; at 4K / 8K (80-160 messages) the list would only bring
their chatter (fresh6: 8K +3 -3). 16K: fresh6 +4 -0 on two seeds, every dev set +6 -1 (a 4-word line of a
counting question pushed out; docs/knowledge.md, "Session 58 (list58)")."""
DISTINCT_WEIGHT = 1.0
"""Below an ample room, for a question naming a speaker (``names_a_speaker``), RRF weight of a list of their own lines
near the question and unlike the rest of what they said (``HistoryIndex.distinct_of_theirs``; counted ``ABOUT_FACTOR``
times, as their other scores). "What helps Kwame de-stress?" <- "My new thing is thousand-piece jigsaws": no nearer the
question than their chatter (54th-78th of their ~250 lines by meaning, 130th-500th fused), but chatter says what other
chatter says and a hobby is told once: by whole meaning's z plus unlikeness's among theirs the items rank 1st-71st. 8K:
fresh6 91.7 -> 97.2 and 86.1 -> 93.1 (+9 -0), fresh5 +3 -2, fresh4 +1 -0 (session 60, topic60); beside infer60's
one-liners, fresh6 95.8 -> 100 and 90.3 -> 95.8, fresh7 (written apart from recall) 97.5 -> 98.8 and 95.1 -> 98.8
(topic60b). At 4K (~90 units) the whole list gained on fresh6 (+6 / +5) and lost more on fresh5 (83.3 -> 74.4: their
distinct rambles pushed evidence near the question out): there only its short best lines (``DISTINCT_SMALL_TOP``). A 16K
window's history is first asked at its allocation (Conversation First: a 12K gather; Balanced: 5.5K, the small list),
then in the fill at ample room, whose window is sent: 16K windows are main's (fresh6, session 60, topic60b). Topic60's
Balanced 16K -1 / -1 was that fill timing out (a module's 2 s, at load ~36), leaving the allocation's 3.4K history."""
DISTINCT_TOP = 60
"""At most this many of their lines enter that list."""
DISTINCT_SMALL_TOP = 30
"""Below ``PLAIN_ROOM`` (a 4K window's room: ~2,850 tokens, ~90 units), at most this many of their lines enter that
list, and only lines of at most ``DISTINCT_SMALL_CHARS``: RRF lifts a list's first lines alike however long it is, and
in fresh5's ~45-unit rooms (day rambles) each line lifted pushed evidence near the question out. 4K, Conversation
First: fresh7 93.8 -> 96.3 and 88.9 -> 95.1 (+7 -0: a list's later item, a changed plan's terse last state, a habit;
dense alone 93.8 / 87.7), fresh6 93.1 -> 98.6 and 83.3 -> 87.5 (+8 -1), fresh4 +2 -0, fresh2 +1 -0, varied +5 -1,
fresh +2 -2, classic +0 -0, fresh5 -3 +1 (session 61, dense61). Top 60 lost 6-7 a seed on fresh5, top 20 gained less."""
DISTINCT_SMALL_CHARS = 240
"""...that many characters (~50-60 tokens). The bound is a plateau: 160-400 alike on the rank proxy (session 61)."""
DISTINCT_NEAREST = 5
"""A line's unlikeness is minus its mean cosine with this many of their other lines nearest it in meaning: chatter
says what other chatter says, a hobby or a trip is told once."""
DISTINCT_LINES = 500
"""Only their newest this many lines are compared with each other (the comparison costs their square)."""
NAMED_WEIGHT = 1.0
"""RRF weight of the ranking of the messages holding a name the chat gave a thing the question asks about
(``named.bindings``, ``named.names_for``: "the boat" -> "Marigold" -> "Took Marigold up to Skipton and back"), best
first by the question's words and the names."""
LINK_FROM = 5
"""A question that asks two things (``asks_two_things``): each of this many best hits leads to what it shares a rare
word with (``HistoryIndex._linked``)."""
LINK_FROM_WIDE = 20
"""...and this many once every message has its vectors (and the query its vector): the first thing's answer may rank
past the fifth by words and best part, lifted into the best few only by the later signals (whole meaning, the
asked-about's own messages), and the message its link would bring (where the second thing's answer is said in
passing) then never comes ("The Mercer open exhibition turned down the heron" ranked 16th for "Which painting of
Maya's was turned down by an exhibition and where had she seen its subject?"). At most ``LINK_TOP`` links a hit: up
to ~40 messages of the ~45-150 a 4K-16K window recalls (the dev sets +1 -0 at each of 4K, 8K and 16K;
docs/history/knowledge-log.md, "Session 54 (inpass16)" and "Session 55: links from 20 hits at every room")."""
LINK_MAX_OTHERS = 2
"""A word links a hit to another message when at most this many other messages hold it: a painting's subject named in
two messages links them; a topic's word, said in dozens, does not (docs/history/knowledge-log.md,
"Ranking, session 45")."""
LINK_TOP = 2
"""At most this many linked messages per hit, the most linked first (each shared word counts 1 / the other messages
holding it: a word only the two hold links them more than one three hold)."""
_TWO_THINGS = re.compile(
    r",? and (?:then )?(?:(?:for|with|to|from|in|at|on|by|about|since|until) )?"  # "..., and for how much?"
    r"(?:what|where|when|who|whom|which|why|how|does|did|do|is|was|were|has|have|can|could)\b",
    re.I,
)
_NAME = re.compile(
    r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z]{2,}\b"  # not opening a sentence
    r"|\b[A-Z][a-z]{2,}\b(?= (?:is|was|has|had|said|taught|called)\b)"
)
"""Capitalised words in a message that lead a second hop: not the first word of a sentence, unless a verb follows that a
name takes. A word taken for a name here costs a hop's weight; the abstention rule, where it would cost the answer,
reads names with ``names_asked`` (no days or months, nothing opening a sentence, line or clause)."""
STATED_WEIGHT = 1.0
"""RRF weight of a hypothetical question's list of what the person it asks about said of their own likes and habits
(``HistoryIndex.stated_by``): "Would Joss enjoy a night at Les Mis?" is answered by "I would rather be stuck in a lift
for a day than sit through a musical", which shares no word with it and is one sentence of chatter by meaning, while
the other speaker's "I'm a total musicals person, I've seen Les Mis five times" names the thing. Among the person's
own messages that hold a word of liking or disliking (``STATED_WORDS``), the best by best part ranks the stated
disposition 1st-3rd (docs/history/knowledge-log.md, "Session 55 (infer55)")."""
STATED_TOP = 10
"""At most this many of their messages enter that list."""
ONE_LINE_WEIGHT = 1.0
"""RRF weight of a hypothetical question's list of every message the person it asks about said in one sentence, stock
lines out, best first by whole meaning (``HistoryIndex.one_liners``). A disposition is often a line of its own in
words the question never uses ("The hotter the better, my mouth is numb." for "Would X like a Sichuan hotpot
dinner?", "I keep a folder of aurora photos" for a winter trip to Iceland): under the dense floor, no word shared,
no word of liking, 42nd-426th by whole meaning among every message and 88th-375th fused, where a 4K room holds ~90
units. The baselines hold it by the name in its speaker tag on a short line; among the person's one-sentence lines
(56-81 of ~300 in fresh6) it ranks 6th-53rd. Session 60 (infer60), the class named in docs/knowledge.md, "What is left
(recall)": fresh6 inference 67 / 80% at 4K / 8K -> 100 / 100% (seed 0), 60 / 80% -> 87 / 100% (seed 1), the other
sets' hypotheticals held as before; lines of up to two sentences held half the gain (the list holds these lines
because it holds most of the person's one-liners: fresh6 seed 0, median 15 -> 40 of them in a 4K room, ~950 of its
~2,850 tokens, and 18 -> 67, ~1,500 of ~6,080, at 8K)."""
STATED_WORDS = tuple(
    dict.fromkeys(
        terms(
            "love like hate stand rather never always useless allergic afraid scared terrified fan bores prefer enjoy "
            "adore loathe detest favourite favorite bear dread avoid hopeless happiest"
        )
    )
)
"""Words a person states a like, a dislike or a habit with ("I can't stand crowds", "theatre bores me rigid", "I'm
useless before ten"), as the lexical index holds them (stems)."""
RECENT_QUESTIONS = 3
"""How many of the newest user messages a query is compared with to tell a conversation going on from a return to
something said long ago (``RecallLead.continuity``)."""
READ_AT_ONCE = 1_500
"""At most this many parts not held in memory are read from the ``PartVectors`` store inside a sync (~0.1-0.15 ms a
part: 12,059 took 1.1-1.8 s over HTTP), and at most ``EMBED_AT_ONCE`` embedded (minilm-int8: ~5.6 ms of CPU a part):
~0.2 s. A longer history (one a replica meets for the first time) is indexed by words at once and gets its vectors
in a background job, so a turn never waits on them; recall ranks by words meanwhile."""
EMBED_AT_ONCE = EMBED_BATCH
VECTORS_WAIT_S = 1.0
"""How long a turn waits for a running vectors job before it ranks by words (below the module's 2 s timeout): a
conversation imported a moment ago gets its vectors in that time unless it is long (minilm-int8: ~5.6 ms of CPU a
part, so ~180 parts a second)."""
STORE_RETRY_S = 30.0
"""After a ``PartVectors`` call fails, the store is left alone this long: a stalled server is not waited for by
every turn (each would spend its wait before embedding anyway)."""
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_SPEAKER = re.compile(
    r"^((?:\[[^\]\n]{1,40}\]|\((?=[^)\n]{1,40}\))[^)\d\n]*\d[^)\n]*\))\s*)?"  # a stamp: "[8 May, 10:58] ", "(10:58) "
    r"([A-Z][\w.'-]*(?: [A-Z][\w.'-]*){0,2}): "
)
"""A chat line's speaker tag, after an optional bracketed header such as a date ("[8 May 2023] Maya: ") or a stamp in
parentheses holding a digit ("(10:58) Joss: ", an export stamping each line with its time; "(laughs) Joss:" is no
stamp): a stamp hiding the tag hid whose every line was (bench/fresh4_chats.py's third chat)."""
UNNAMED = {"user": -2, "assistant": -3}
"""``HistoryIndex.said_by`` of a user's or an assistant's message no tag or name gives a speaker: the party of its
role, whom the other party may call by name ("Thanks, Kat!": ``HistoryIndex.parties_called``)."""
CALLED_OUT = 2
"""A word names a party when that party answers a message calling it out at least this many times, and this many
times as often as any other party does (a third person both may mention is no one's name)."""
NOT_RECALLABLE = -1
"""``HistoryIndex._closed``'s mark of a closed unit that is not recallable."""
CALLS_READ = 256
"""At most this many messages holding a name (the newest) are read for it being called out."""
ANSWER_WITHIN = 4
"""A message calling a name out is answered by the first other party to speak within this many messages after it."""
_GREETING = (
    r"(?:hey|hi+|hello|hiya|morning|evening|night|thanks|thank you|cheers|yo|sure|aw+|oh|ah|ok|okay|congrats|sorry"
    r"|bye|dear)"
)
"""Words a name follows when it is called out ("Thanks, Kat!", "Morning Kat")."""
_CALLED = re.compile(r"\b[A-Z][a-z]{2,}\b")
"""A capitalised word of a question that may be a speaker's short name (``HistoryIndex.focus``)."""
log = logging.getLogger(__name__)


class PartVectors(Protocol):
    """Where the application keeps each session's part vectors beyond this process (a store that replicas share,
    or that outlives a restart). Parts are named by ``part_key`` of their text: the same part of a session is kept
    once, and a rewritten history finds what it did not change. Reads and writes name the session: a session never
    gets another's vectors. A failing call costs only the embedding it would have saved (``SessionRecall`` embeds)."""

    async def get(self, session_id: str, keys: Collection[str]) -> Mapping[str, Sequence[float]]:
        """The vectors ``session_id`` has stored under ``keys`` (those it has; the rest are missing)."""
        ...

    async def put(self, session_id: str, vectors: Mapping[str, np.ndarray]) -> None:
        """Keep ``vectors`` (by key) for ``session_id``; the application may write them later, off the turn."""
        ...


async def _sliced(items: Sequence[T], work: Callable[[Sequence[T]], list[R]]) -> list[R]:
    """``work(items)``, ``INDEX_SLICE`` items at a time with a yield to the event loop between: over a long history
    it is seconds of work, which must not stall every other request meanwhile."""
    out: list[R] = []
    for start in range(0, len(items), INDEX_SLICE):
        if start:
            await asyncio.sleep(0)
        out += work(items[start : start + INDEX_SLICE])
    return out


def _keyed(texts: Sequence[str]) -> list[tuple[str, str]]:
    return [(t, part_key(t)) for t in texts]


def part_key(text: str) -> str:
    """The name of a part's vector in a ``PartVectors`` store: a hash of its text."""
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


def parts_of(text: str) -> list[str]:
    """``text`` as at most ``MAX_PARTS`` runs of whole sentences, in order, without a leading speaker tag ("Maya: "):
    a name said in every message of a chat between people would otherwise outweigh what each message says. A
    sentence longer than ``DATA_CHARS`` is data: its head (``DATA_HEAD_CHARS``) stands for it."""
    text = _SPEAKER.sub(r"\1", text, count=1)
    sentences = [_head(s) for s in _SENTENCE_END.split(text) if s.strip()] or [_head(text) or " "]
    if len(sentences) <= MAX_PARTS:
        return sentences
    step = -(-len(sentences) // MAX_PARTS)
    return [" ".join(sentences[i : i + step])[:EMBED_CHARS] for i in range(0, len(sentences), step)]


def _head(sentence: str) -> str:
    return sentence if len(sentence) <= DATA_CHARS else sentence[:DATA_HEAD_CHARS]


def searchable_text(message: Message) -> str:
    """What a message is searched by: its text, and for a tool call the calls' names and arguments."""
    if not message.tool_calls:
        return message.content
    calls = " ".join(
        f"{(c.get('function') or {}).get('name', '')} {(c.get('function') or {}).get('arguments', '')}"
        for c in message.tool_calls
    )
    return f"{message.content} {calls}".strip()


def embedded_text(message: Message) -> str:
    """What a message's vectors are made of: its searchable text, of a tool result only the head
    (``DATA_HEAD_CHARS``)."""
    text = searchable_text(message)
    return text[:DATA_HEAD_CHARS] if message.role == "tool" else text


_Ranked = tuple[np.ndarray, np.ndarray, str, str | None]
"""A ranking: positions best first, their fused scores, the method and (when nothing ranks) the reason."""


@dataclass(eq=False)
class HistoryIndex:
    """One session's messages, oldest first, as they were added (position = index in the history)."""

    version: Any = None
    """What the history was read as (a store's history version), so a changed history is read afresh."""
    session_id: str | None = None
    """Whose history this is: names the session to a ``PartVectors`` store (None: nothing is stored)."""
    stored: DigestTable = field(default_factory=DigestTable)
    """``part_key``s the ``PartVectors`` store is known to hold for the session, as digests (no need to read or write
    them): ``is_stored``, ``mark_stored``."""
    messages: Sequence[Message] = field(default_factory=list)
    """Oldest first: a list, or a view of a ``ChatMessages`` (a library user's conversation, made as they are read), or
    a stored history's ``PackedMessages`` (their texts packed, a message made when read: ``content_at``, ``role_at``
    read one field)."""
    lexical: BM25Index = field(default_factory=BM25Index)
    dense: VectorIndex | None = None
    """The distinct vectors of the messages' parts (``parts_of``); ``row_of`` says which is each part's."""
    owner: array[int] = field(default_factory=lambda: array("q"))
    """Per part, in order, the position of its message (machine integers: a boxed integer and its pointer were 36
    bytes a part, held for the session's life)."""
    _row_of: GrowingArray = field(default_factory=lambda: GrowingArray(np.intp))
    _row_by_digest: DigestTable = field(default_factory=DigestTable)
    _runs: PartRuns = field(default_factory=PartRuns)
    speakers: set[str] = field(default_factory=set)
    """The names chat lines open with ("Maya: ...") or carry as their ``name``: a question naming a speaker is about
    what they said, so the name is not what it is searched by (see ``focus``)."""
    _said_by: GrowingArray = field(default_factory=lambda: GrowingArray(np.intp))
    _speaker_numbers: dict[str, int] = field(default_factory=dict)
    _called_out: dict[tuple[str, int], int | None] = field(default_factory=dict)
    """Per name a question asked and the messages held then, the party it names (``parties_called``)."""
    _vectored: int = 0
    """How many of the first messages were added with vectors (a message never shown may have none)."""
    _whole_owner: GrowingArray = field(default_factory=lambda: GrowingArray(np.intp))
    _whole_scale: GrowingArray = field(default_factory=lambda: GrowingArray(np.float64))
    """Per message of ``WHOLE_TEXT_PARTS`` parts, in order, its position and one over the length of its parts' mean
    vector: its whole text's cosine is its mean part cosine times that (``whole_text_ranking``)."""
    _unit_of: GrowingArray = field(default_factory=lambda: GrowingArray(np.intp))
    _one_message_units: bool = True
    """Whether every unit is one message (no tool call nor result yet): ``unit_of`` is then each position itself."""
    dated: list[int] = field(default_factory=list)
    """The positions of the messages opening with a date (``dates.opens_with_date``), in order: each dates the
    session it opens."""
    _shows: GrowingArray = field(default_factory=lambda: GrowingArray(bool))
    """Per message, False when it only asks (``_only_asks``): it shows nothing a question needs. A flag per
    position, read as a view each turn (``shows``): a list of the asking positions, made into a mask again each
    turn, cost a native session's lead ~0.6 ms at 10,000 turns, every question an asking message."""
    _calls: dict[str, int] = field(default_factory=dict)
    """Open tool call id -> position of the assistant message that made it."""
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    """Held while the index is brought up to the session's history (one sync at a time)."""
    guard: asyncio.Lock = field(default_factory=asyncio.Lock)
    """Held by each step that reads or changes the index (``SessionRecall._step``): one in a worker thread runs to
    its end before another starts, so none sees the index half changed."""
    vectoring: asyncio.Task[None] | None = None
    """The background job giving the messages indexed by words only their vectors (one at a time per index)."""
    vectors_due: float = 0.0
    """Until when (``time.monotonic``) recall waits for that job before ranking by words."""
    words_only: bool = False
    """Vectors held back (``SessionRecall.sync``'s ``vectors``): a young history no window recalls from yet is
    indexed by words, and given its vectors at the sync that turns them on, or at the first ``ask``."""
    chars: array[int] = field(default_factory=lambda: array("q"))
    """Per message, the characters of its text (counted as it is added, in C)."""
    _short: GrowingArray = field(default_factory=lambda: GrowingArray(bool))
    _closed: dict[str | None, array[int]] = field(default_factory=dict)
    """Per phase, per first position, what ``recallable`` found of a unit no later message can change: its rough
    tokens plus one (``NOT_RECALLABLE``: none; 0: not known yet). A long session's recall ranks thousands of units each
    turn, all but the newest as they were the turn before; the unit itself is made again from its messages when
    gathered (a tuple of messages kept per unit held them all, for the session's life)."""
    _made: dict[tuple[int, str | None], tuple[Message, ...] | None] = field(default_factory=dict)
    _made_before: dict[tuple[int, str | None], tuple[Message, ...] | None] = field(default_factory=dict)
    """The closed units made for this ranking and the one before (``ranked_anew``): a turn's ranking gathers mostly the
    units the last one did, made again from packed messages otherwise (bounded: two rankings' gathered units)."""
    checked: Sequence[Message] | None = None
    """The in-memory history last found to start with the messages held (and its length then): not compared again."""
    checked_length: int = -1
    _lexical_cache: tuple[Any, np.ndarray] | None = None
    _rank_cache: tuple[Any, _Ranked, _Ranked | None] | None = None
    """The last ranking's key, the ranking, and the ranking with the whole texts fused in once asked (``rank``)."""
    _plain_cache: tuple[Any, _Ranked] | None = None
    """The last ranking's key with the question as asked, and that ranking with the plain hybrid's interleaved."""
    _distinct_cache: tuple[Any, _Ranked] | None = None
    """The last ranking's key, and below an ample room that ranking with the distinct lines fused in
    (``_with_distinct``)."""
    _unlike_cache: tuple[Any, np.ndarray] | None = None
    """Whose lines, how many messages and parts, and those lines' unlikeness (``unlike_each_other``): it does not
    depend on the question, so a turn's second ranking reuses it."""
    collected: Collected | None = None
    """The last ranking's units as far as gathered (``collect_units``)."""
    _dense_cache: tuple[Any, np.ndarray, np.ndarray, np.ndarray] | None = None
    _said_elsewhere: tuple[int, np.ndarray] | None = None
    """The parts held when ``said_elsewhere`` was last found, and what it found."""
    _holders: np.ndarray = field(default_factory=lambda: np.zeros(0, np.intp))
    _holders_counted: int = 0
    """Per row of ``dense``, how many messages hold it, counted over the first ``_holders_counted`` parts."""
    _named_given: dict[named.Binding, int] = field(default_factory=dict)
    """The names the first ``_named_upto`` messages give things, each with the first message giving it, read once
    (``_given_names``)."""
    _named_upto: int = 0
    parts_waiting: tuple[list[Message], list[list[str]]] | None = None
    """The messages from ``vectored`` on whose vectors a sync left to the background job, with their parts
    (``SessionRecall._parts``): found once, not again by the job."""

    def __len__(self) -> int:
        return len(self.messages)

    # The per-message (and per-part) columns are each one growing numpy buffer, read as views: an ``array`` beside a
    # numpy mirror of it held each item twice for the session's life (docs/history/benchmarks-log.md,
    # "Session 47 (memflat9)").

    @property
    def said_by(self) -> np.ndarray:
        """Per message, its speaker's number in ``_speaker_numbers`` (``UNNAMED``: a user's or an assistant's party
        no tag or name gives; -1: none known). Read-only."""
        return self._said_by.view

    @property
    def unit_of(self) -> np.ndarray:
        """Per message, the position of the first message of its unit (a tool result's call). Read-only."""
        return self._unit_of.view

    @property
    def row_of(self) -> np.ndarray:
        """Per part, in order, its vector's row in ``dense``: a part said again (a greeting, a repeated line of a tool
        result) is held and scored once. Read-only."""
        return self._row_of.view

    @property
    def held_bytes(self) -> int:
        """About the memory the index holds: its messages' text (and their terms) and its vectors."""
        return sum(self.chars) + (self.dense.nbytes if self.dense is not None else 0)

    @property
    def vectored(self) -> int:
        """How many of the first messages have their vectors (dense scores need every message ranked to)."""
        return self._vectored

    def add(self, messages: Sequence[Message], vectors: Sequence[Sequence[Any]] | None = None) -> None:
        """Append ``messages`` (the history's next ones, in order) with, when the index is dense, each one's part
        vectors (one list per message, its ``parts_of`` in order). Vectors given while earlier messages still lack
        theirs are dropped: ``attach`` gives them later, in order."""
        if vectors is not None and len(self.messages) == self._vectored:
            self.attach(len(self.messages), vectors)
        contents = column(messages, "content")  # each field read in C, no message made: a long history met cold has
        calls = any(column(messages, "tool_calls"))  # 10,000 (a library user's conversation: ``ChatMessages``)
        roles = column(messages, "role")
        self.lexical.add([searchable_text(m) for m in messages] if calls else contents)
        first = len(self.messages)
        self.chars.extend(map(len, contents))
        # each test below tried per text only when some text holds its mark (searched in C, each text: a join of a
        # long history's texts to search once cost ~4 times the searches)
        if any(map(contains, contents, repeat("?"))):
            self._shows.extend(np.fromiter((not (_asks_last(c) and _only_asks(c)) for c in contents), bool))
        else:
            self._shows.extend(np.ones(len(contents), bool))
        dated = dated_among(contents)
        self.dated += [first + i for i in dated]
        if any(map(contains, contents, repeat(":"))) or any(column(messages, "name")):
            speakers = [_speaker(m) for m in messages]
            for i in dated:
                speakers[i] = _dated_speaker(messages[i], contents[i])
            self.speakers.update(filter(None, speakers))
            numbers = self._speaker_numbers
            said = (
                UNNAMED.get(m.role, -1) if s is None else numbers.setdefault(s, len(numbers))
                for m, s in zip(messages, speakers, strict=True)
            )
            self._said_by.extend(np.fromiter(said, np.intp, len(messages)))
        else:  # no ":", no tag; no name: no speaker known but a role's party
            self._said_by.extend(np.fromiter(map(UNNAMED.get, roles, repeat(-1)), np.intp, len(roles)))
        if not self._calls and not calls and "tool" not in roles:
            self._unit_of.extend(np.arange(first, first + len(messages), dtype=np.intp))  # each message its own unit
        else:
            self._units_of(messages, first)
        if isinstance(self.messages, PackedMessages):
            self.messages.extend(messages)
        else:
            self.messages = followed_by(self.messages, messages)

    def _units_of(self, messages: Sequence[Message], first: int) -> None:
        """Each message's unit (``unit_of``): a tool result's is its call's message, any other message's its own."""
        calls = self._calls
        unit_of: list[int] = []
        for position, message in enumerate(messages, first):
            if message.role == "tool":
                unit_of.append(calls.get(message.tool_call_id, position))  # type: ignore[arg-type]
                continue
            if message.role == "assistant" and message.tool_calls:
                calls = {str(c.get("id")): position for c in message.tool_calls}
            elif calls:
                calls = {}
            unit_of.append(position)
        self._calls = calls
        units = np.asarray(unit_of, dtype=np.intp)
        self._unit_of.extend(units)
        self._one_message_units &= bool((units == np.arange(first, first + len(units))).all())

    def focus(self, query: str) -> str:
        """``query`` without the names of the chat's speakers, or the short names a question may call them by ("Kat"
        for Katherine), and their possessive: in a chat between people half the messages carry each name, so the name
        finds the short lines that say it ("Sure, Theo!", "Yo Kat"), not the fact asked about. Unchanged when nothing
        would be left."""
        parties = self.parties_called(query)
        if not self.speakers and not parties:
            return query
        short = {w for w in _CALLED.findall(query) if terms(w) and self._speaks(w)}  # "Kat": Katherine, not "The": Theo
        names = "|".join(re.escape(name) for name in sorted({*self.speakers, *short, *parties}, key=len, reverse=True))
        focused = re.sub(rf"\b(?:{names})(?:'s|s')?\b", " ", query)
        return focused if terms(focused) else query

    def asked_about(self, query: str) -> frozenset[int]:
        """The speakers ``query`` names, in full or by the start of their name ("Kat" for Katherine), by number: a
        month is no one's short name ("May" is not Maya)."""
        called = [w.lower() for w in _CALLED.findall(query) if terms(w)]
        numbers = self._speaker_numbers.items()
        named = {number for speaker, number in numbers if any(_calls(w, speaker.lower()) for w in called)}
        assistant = {UNNAMED["assistant"]} if _ASKS_WHAT_YOU_SAID.search(query) and self._answers_unnamed() else set()
        return frozenset(named | assistant | set(self.parties_called(query).values()))

    def _answers_unnamed(self) -> bool:
        """Whether the chat's assistant is no named speaker: the "you" a question addresses."""
        return bool((self.said_by == UNNAMED["assistant"]).any())

    def parties_called(self, query: str) -> dict[str, int]:
        """The words of ``query`` that name a party by what the others call it, with its number (``said_by``): a party
        no tag or name gives (``UNNAMED``: a chat between two people imported as a user and an assistant still calls
        each by name, "Hey Kat!"), or a speaker called by a name that is not the start of their own ("Sasha" for
        Alexandra, "Seun" for Oluwaseun). Only the question's names are asked (``names_asked``), and not a known
        speaker's."""
        found = {w: self._party_called(w) for w in names_asked(query) if terms(w) and not self._speaks(w)}
        return {w: party for w, party in found.items() if party is not None}

    def _party_called(self, word: str) -> int | None:
        """The party ``word`` names: the one that answers when it is called out (``CALLED_OUT``), by its ``said_by``."""
        key = (word, len(self.messages))
        if key not in self._called_out:
            if len(self._called_out) >= 256:  # one entry per name a question asks about: a session asks few
                self._called_out.clear()
            self._called_out[key] = self._count_called_out(word)
        return self._called_out[key]

    def _count_called_out(self, word: str) -> int | None:
        said = self.lexical.coverage(terms(word))
        calling = re.compile(
            rf"(?:^|[.!?,;:]\s*|\b{_GREETING}[\s,]+){re.escape(word)}\b(?=\s*(?:[,.!?…]|$|[^\x00-\u2000]))", re.I
        )
        answered: Counter[int] = Counter()  # per party, how often it answered a message calling the word out
        said_by = self.said_by
        for position in np.flatnonzero(said)[-CALLS_READ:].tolist():  # the newest: a name called out is called often
            if said_by[position] != -1 and calling.search(self.content_at(position)):
                party = self._answer_to(position)
                if party is not None:
                    answered[party] += 1
        (party, most), (_, next_most) = [*answered.most_common(2), (None, 0), (None, 0)][:2]
        return party if most >= CALLED_OUT * max(1, next_most) else None

    def content_at(self, position: int) -> str:
        """The text of the message at ``position`` (held packed: no message made)."""
        held = self.messages
        return held.content(position) if isinstance(held, PackedMessages) else held[position].content

    def role_at(self, position: int) -> str:
        """The role of the message at ``position`` (held packed: no message made)."""
        held = self.messages
        return held.role(position) if isinstance(held, PackedMessages) else held[position].role

    def _answer_to(self, position: int) -> int | None:
        """The party of the first message after ``position`` that another party says (None: none within
        ``ANSWER_WITHIN`` messages): who answers a message calling someone out is the one it calls."""
        said_by = self.said_by[position : position + 1 + ANSWER_WITHIN].tolist()  # a few, as Python integers
        caller = said_by[0]
        for party in said_by[1:]:
            if party not in (-1, caller):
                return party
        return None

    def attach(self, first: int, vectors: Sequence[Sequence[Any]]) -> None:
        """Give the messages from position ``first`` (the first without vectors) their part vectors, in order."""
        if first != self._vectored:
            raise ValueError(f"vectors for position {first}, but {self._vectored} is the first without")
        rows = [row for per_message in vectors for row in per_message]
        if rows:
            self._row_of.extend(np.asarray(self._rows_for(rows), dtype=np.intp))
            self.owner.extend(first + i for i, per_message in enumerate(vectors) for _ in per_message)
            self._attach_wholes(first, vectors)
        self._vectored += len(vectors)

    def _attach_wholes(self, first: int, vectors: Sequence[Sequence[Any]]) -> None:
        """Note the messages of ``WHOLE_TEXT_PARTS`` parts among those from ``first`` (``vectors``: each one's part
        vectors) with the length of their parts' mean vector, the parts read as ``dense`` holds them."""
        low, high = WHOLE_TEXT_PARTS
        whole = [i for i, per_message in enumerate(vectors) if low <= len(per_message) <= high]
        if not whole:
            return
        sizes = np.asarray([len(vectors[i]) for i in whole])
        held = unit_rows([v for i in whole for v in vectors[i]]).astype(np.float16).astype(np.float32)
        means = np.add.reduceat(held, np.cumsum(sizes) - sizes, axis=0) / sizes[:, None]
        self._whole_owner.extend(first + np.asarray(whole, dtype=np.intp))
        self._whole_scale.extend(1.0 / np.maximum(np.linalg.norm(means, axis=1).astype(np.float64), 1e-6))

    def _rows_for(self, vectors: Sequence[Any]) -> list[int]:
        """Each vector's row in ``dense``, adding those not held yet (known by a digest of their bytes)."""
        if self.dense is None:
            self.dense = VectorIndex()
        held = len(self.dense)
        added: dict[bytes, int] = {}
        new_rows: list[np.ndarray] = []
        rows: list[int] = []
        for vector in vectors:
            as_array = np.asarray(vector, dtype=np.float32)
            digest = hashlib.blake2b(as_array.tobytes(), digest_size=16).digest()
            row = added.get(digest)
            if row is None:
                row = self._row_by_digest.get(digest)
            if row is None:
                row = added[digest] = held + len(new_rows)
                new_rows.append(as_array)
            rows.append(row)
        if new_rows:
            self.dense.add(np.stack(new_rows))  # raises for vectors of another size, before anything is kept
            for digest, row in added.items():
                self._row_by_digest.put(digest, row)
        return rows

    def is_stored(self, key: str) -> bool:
        """Whether the store is known to hold the part named ``key`` (a ``part_key``) for the session."""
        return bytes.fromhex(key) in self.stored

    def mark_stored(self, keys: Iterable[str]) -> None:
        for key in keys:
            self.stored.put(bytes.fromhex(key), 0)

    def dense_scores(self, query_vector: Sequence[float] | np.ndarray, n: int) -> np.ndarray | None:
        """Each of the first ``n`` messages' best part cosine with the query (None: not every message has vectors)."""
        if self.dense is None or not self.owner or self._vectored < n:
            return None
        return self._part_scores(np.asarray(query_vector, dtype=np.float32))[0][:n]

    def whole_scores(self, query_vector: Sequence[float] | np.ndarray, n: int) -> np.ndarray | None:
        """Each of the first ``n`` messages' mean part cosine with the query: how much of the whole message is about
        it (None: not every message has vectors)."""
        if self.dense is None or not self.owner or self._vectored < n:
            return None
        return self._part_scores(np.asarray(query_vector, dtype=np.float32))[1][:n]

    def whole_by_length(self, query_vector: Sequence[float] | np.ndarray, positions: np.ndarray) -> np.ndarray | None:
        """The whole meaning of the messages at ``positions``, each part's cosine with the query weighted by its
        characters: a trailing "Ideas?" or "Thanks!" is not half of what a short message says. Its parts are split
        again here (``parts_of``, a few sentences a message), so ``positions`` are a few (``FAINT_POOL``). None: one of
        them has no vectors yet."""
        if self.dense is None or not self.owner or (len(positions) and int(positions.max()) >= self._vectored):
            return None
        scores = self.dense.scores(np.asarray(query_vector, dtype=np.float32))[self.row_of]
        starts, owners = self._runs.caught_up(self.owner)
        runs = np.searchsorted(owners, positions)
        ends = np.r_[starts[1:], len(scores)]
        out = np.empty(len(positions))
        for i, (position, run) in enumerate(zip(positions.tolist(), runs.tolist(), strict=True)):
            cosines = scores[starts[run] : ends[run]]
            chars = [len(part) for part in parts_of(embedded_text(self.messages[position]))]
            weights = np.asarray(chars) if len(chars) == len(cosines) else np.ones(len(cosines))
            out[i] = float(cosines @ weights) / float(weights.sum())
        return out

    def said_elsewhere(self, n: int) -> np.ndarray:
        """Per message among the first ``n``, whether every part of it is said in at least ``SAID_ELSEWHERE`` messages
        (the same vector; False without vectors). Found again only when parts were added: the index only grows."""
        held = len(self.owner)
        if self._said_elsewhere is None or self._said_elsewhere[0] != held:
            said = np.zeros(len(self.messages), dtype=bool)
            if held:
                common = self._stock_parts(held).astype(np.int8)
                starts, runs = self._runs.caught_up(self.owner)
                said[runs] = np.minimum.reduceat(common, starts).astype(bool)
            self._said_elsewhere = (held, said)
        return self._said_elsewhere[1][:n]

    def own_best(self, query_vector: Sequence[float] | np.ndarray, n: int) -> np.ndarray | None:
        """Per message among the first ``n``, its best cosine with the query over the parts said in fewer than
        ``SAID_ELSEWHERE`` messages (-1 for a message with none, or no vectors): near the question by what it says
        itself, not by a stock line ("So what's your favourite drink these days?") many messages share. None: not
        every message has vectors."""
        if self.dense is None or not self.owner or self._vectored < n:
            return None
        scores = self._part_scores(np.asarray(query_vector, dtype=np.float32))[2].copy()
        scores[self._stock_parts(len(self.owner))] = -1.0
        starts, owners = self._runs.caught_up(self.owner)
        best = np.full(len(self.messages), -1.0)
        best[owners] = np.maximum.reduceat(scores, starts)
        return best[:n]

    def _stock_parts(self, held: int) -> np.ndarray:
        """Per part among the first ``held``, whether its sentence is said in at least ``SAID_ELSEWHERE`` messages."""
        return self._holders_of_rows(held)[self.row_of[:held]] >= SAID_ELSEWHERE

    def _holders_of_rows(self, held: int) -> np.ndarray:
        """Per row of ``dense``, how many messages hold it among the first ``held`` parts' owners, counting only the
        parts added since the last call: parts come a whole message at a time, in order, so a message adding a part
        is a holder no earlier count knew (a message saying a line twice holds it once)."""
        counted = self._holders_counted
        assert self.dense is not None
        if len(self._holders) < len(self.dense):
            self._holders = np.concatenate([self._holders, np.zeros(len(self.dense) - len(self._holders), np.intp)])
        if counted < held:
            rows = self.row_of[counted:held].astype(np.int64)
            owners = np.frombuffer(self.owner, dtype=np.int64)[counted:held]
            width = int(owners.max()) + 1
            distinct = np.unique(rows * width + owners) // width  # each (row, message) once
            self._holders += np.bincount(distinct, minlength=len(self._holders))
            self._holders_counted = held
        return self._holders

    def whole_text_ranking(self, query_vector: Sequence[float] | np.ndarray, n: int) -> np.ndarray | None:
        """The positions among the first ``n`` messages of ``WHOLE_TEXT_PARTS`` parts, best first by their whole
        text's cosine with the query (the parts' mean vector's: their mean cosine over its length), ties in order
        (None: not every message has vectors yet, so cold and warm rank alike)."""
        mean = self.whole_scores(query_vector, n)
        if mean is None:
            return None
        held = int(np.searchsorted(self._whole_owner.view, n))
        owners = self._whole_owner.view[:held]
        cosines = mean[owners] * self._whole_scale.view[:held]
        return owners[np.argsort(-cosines, kind="stable")]

    def _faint_guesses(self, by_whole: np.ndarray, n: int, query_vector: Sequence[float] | np.ndarray) -> np.ndarray:
        """The first ``FAINT_GUESSES`` short messages of ``by_whole`` (positions best first by whole meaning), read
        again by their parts' lengths (``whole_by_length``) among the first ``FAINT_POOL``: "I work nights on the
        cardiac ward, so I need dinners ... Ideas?" is about the ward by its first sentence, not by half its parts."""
        pool = by_whole[self.short()[:n][by_whole]][:FAINT_POOL]
        by_length = self.whole_by_length(query_vector, pool)
        if by_length is not None:
            pool = pool[np.argsort(-by_length, kind="stable")]
        return pool[:FAINT_GUESSES]

    def best_scores_at(
        self, query_vector: Sequence[float] | np.ndarray, positions: Sequence[int], n: int
    ) -> np.ndarray | None:
        """``dense_scores(query_vector, n)[positions]``, bit for bit, reading only those messages' part vectors: a
        turn's lead compares the query with the newest few questions first, and a conversation going on needs no
        more (None: not every message has vectors)."""
        if self.dense is None or not self.owner or self._vectored < n:
            return None
        query = np.asarray(query_vector, dtype=np.float32)
        at = np.asarray(positions, dtype=np.intp)
        if not len(at):
            return np.zeros(0)
        cached = self._dense_cache
        if cached is not None and cached[0] == (query.tobytes(), len(self.owner), len(self.messages)):
            return cached[1][at]
        starts, owners = self._runs.caught_up(self.owner)  # parts are in order: a message's are one run
        run = np.minimum(np.searchsorted(owners, at), len(owners) - 1)
        firsts = starts[run]
        ends = np.where(owners[run] == at, np.r_[starts[1:], len(self.owner)][run], firsts)
        rows = self.row_of
        scores = self.dense.scores_at(query, np.concatenate([rows[a:b] for a, b in zip(firsts, ends, strict=True)]))
        best, offset = np.full(len(at), -1.0), 0
        for i, count in enumerate((ends - firsts).tolist()):
            if count:
                best[i] = scores[offset : offset + count].max()
            offset += count
        return best

    def lexical_scores(self, query: str) -> np.ndarray:
        """Every message's BM25 score for ``query`` (read-only; computed once per query and history length)."""
        key = (query, len(self.messages))
        if self._lexical_cache is None or self._lexical_cache[0] != key:
            scores = self.lexical.scores(query)
            scores.flags.writeable = False
            self._lexical_cache = (key, scores)
        return self._lexical_cache[1]

    def _part_scores(self, query_vector: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every message's best and mean part cosine (-1 without vectors) and every part's, read-only: a turn's lead
        and recall ask for the same query, so the last one's scores are kept (keyed by its vector and the parts held:
        the index only grows)."""
        key = (query_vector.tobytes(), len(self.owner), len(self.messages))
        if self._dense_cache is not None and self._dense_cache[0] == key:
            return self._dense_cache[1], self._dense_cache[2], self._dense_cache[3]
        assert self.dense is not None
        scores = self.dense.scores(query_vector)[self.row_of]
        starts, owners = self._runs.caught_up(self.owner)
        best, mean = np.full(len(self.messages), -1.0), np.full(len(self.messages), -1.0)
        best[owners] = np.maximum.reduceat(scores, starts)
        mean[owners] = np.add.reduceat(scores, starts) / self._runs.counts()
        best.flags.writeable = mean.flags.writeable = scores.flags.writeable = False
        self._dense_cache = (key, best, mean, scores)
        return best, mean, scores

    @property
    def asking(self) -> list[int]:
        """The positions of the messages that only ask, in order."""
        return np.flatnonzero(~self._shows.view).tolist()

    def shows(self) -> np.ndarray:
        """Per message, whether it shows something (it does not only ask), read-only."""
        return self._shows.view

    def short(self) -> np.ndarray:
        """Per message, whether it is short enough to come with a hit as its neighbour (``NEIGHBOUR_MAX_CHARS``);
        extended by what was added since the last call (the index only grows)."""
        held = len(self._short)
        if held < len(self.messages):
            self._short.extend(np.asarray(self.chars[held:], np.int64) <= NEIGHBOUR_MAX_CHARS)
        return self._short.view

    def unit(self, first: int, phase: str | None) -> tuple[Message, ...] | None:
        """The unit starting at ``first``: one message, or a tool call with every result answering it (``None`` when a
        result is missing or has no call, or the unit holds an invalid or invisible message: a provider would reject
        it)."""
        return self._unit(first, phase)[0]

    def closed(self, phase: str | None) -> array[int]:
        """Per first position, what ``recallable`` knows of a closed unit in ``phase`` (``_closed``), as long as the
        history."""
        closed = self._closed.setdefault(phase, array("i"))
        if len(closed) < len(self.messages):
            closed.extend(repeat(0, len(self.messages) - len(closed)))
        return closed

    def recallable(self, first: int, phase: str | None) -> tuple[tuple[Message, ...] | None, int]:
        """``unit(first, phase)`` and its rough tokens, what is known of it kept once no later message can change it
        (the index only grows): a unit that is not recallable is not read again."""
        closed = self.closed(phase)
        known = closed[first]
        if known == NOT_RECALLABLE:
            return None, 0
        if known:
            return self.made(first, phase), known - 1
        unit, is_closed = self._unit(first, phase)
        rough = sum(rough_tokens(m) for m in unit) if unit is not None else 0
        if is_closed:
            closed[first] = NOT_RECALLABLE if unit is None else rough + 1
        return unit, rough

    def made(self, first: int, phase: str | None) -> tuple[Message, ...] | None:
        """The closed unit at ``first``, made once a ranking (``_made``)."""
        key = (first, phase)
        made = self._made.get(key) or self._made_before.get(key) or self._unit(first, phase)[0]
        self._made[key] = made
        return made

    def ranked_anew(self) -> None:
        """A new ranking is gathered: the units made for the one before it are kept for it, older ones let go."""
        self._made_before, self._made = self._made, {}

    def _unit(self, first: int, phase: str | None) -> tuple[tuple[Message, ...] | None, bool]:
        """``unit(first, phase)``, and whether it is closed: a message after it that is not its result ends it, so a
        later one cannot change it (a tool call's unit still open at the history's end may get more results)."""
        head = self.messages[first]
        if head.role == "tool":  # a result whose call is not in the history: a provider rejects it alone
            return None, True
        if not head.tool_calls:
            return ((head,) if _shown(head, phase) else None), True
        calls = {str(c.get("id")) for c in head.tool_calls}
        results: list[Message] = []
        closed, unit_of = False, self.unit_of
        for position in range(first + 1, len(self.messages)):
            if unit_of[position] != first:
                if self.messages[position].role != "tool":
                    closed = True
                    break
                continue
            results.append(self.messages[position])
        if {m.tool_call_id for m in results} != calls or not all(_shown(m, phase) for m in (head, *results)):
            return None, closed
        return (head, *results), closed

    def unit_firsts(self, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The first position of each ranked message's unit, and where each unit is first met in ``positions`` (in
        ``positions``' order): a unit once, at its best message's rank. In numpy: a long history ranks thousands."""
        if self._one_message_units:  # each ranked message its own unit, met once (a sort for the first of each: ~0.6 ms
            return positions, np.arange(len(positions))  # at 10,000 messages, asked by each of a turn's rankings)
        firsts = self.unit_of[positions]
        at = np.unique(firsts, return_index=True)[1]
        at.sort()
        return firsts, at

    def rank(
        self,
        query: str,
        query_vector: Sequence[float] | np.ndarray | None,
        before: int,
        weights: tuple[float, float] = WEIGHTS,
        evidence: Evidence | None = None,
        about: frozenset[int] = frozenset(),
        thing: str | None = None,
        *,
        ample: bool = False,
        asked: str | None = None,
        head_tokens: int = 0,
        small: bool = False,
    ) -> _Ranked:
        """Positions of the messages before ``before``, best first, with fused scores, the method and (when nothing
        ranks) the reason. Messages no signal ranks are left out (and the exchanges of the best hits come with them);
        with vectors, every message is ranked by its whole meaning (``WHOLE_WEIGHT``). With ``evidence``, nothing ranks
        when the query has no evidence among them, and a message enters the dense ranking only above its z-score floor
        (see ``Evidence``), nor when it asks about a ``thing`` (``thing_asked`` of the question as asked) that no
        message names and none stands out for in meaning. ``ample``: the room is ample (``WHOLE_TEXT_ROOM``), so the
        messages of ``WHOLE_TEXT_PARTS`` parts are ranked by their whole text too (``WHOLE_TEXT_WEIGHT``); a two-thing
        question's links come from more hits (``LINK_FROM_WIDE``). Both only once every message has its vectors (cold
        and warm rank alike). ``asked`` (the question as asked, given from ``PLAIN_ROOM``): when the question names a
        speaker (``names_a_speaker``), the plain hybrid's order is interleaved (``interleaved``) past the ranking's
        ``PLAIN_FROM`` best at ample room, below it past the best units whose rough tokens fill ``head_tokens``; at
        ample room, past its ``THEIRS_FIRST_FROM`` best every message of theirs then comes before the others'
        (``theirs_first``), and so do the user's for a first-person question of a user-and-assistant chat
        (``asked_of_user``). Below an ample room (and given ``asked``), a question naming a speaker also fuses their
        lines near it and unlike the rest of theirs (``distinct_of_theirs``, ``DISTINCT_WEIGHT``), before the plain
        order; ``small`` (a room below ``PLAIN_ROOM``: no ``asked``) fuses only their best short ones
        (``DISTINCT_SMALL_TOP``, ``DISTINCT_SMALL_CHARS``). The last ranking is kept, and with the whole texts fused in
        apart: a turn asks again when the history gets more room (the surplus pass), and an old gateway session's first
        step asks for a room under ``WHOLE_TEXT_ROOM``, then one over it, and its next step under it again (ranked anew
        at each switch: 1.0-1.1 ms an old call, 0.4 now)."""
        vector = None if query_vector is None else np.asarray(query_vector, dtype=np.float32).tobytes()
        vectored = self.vectored >= min(before, len(self.messages))  # and the query's: cold and warm rank alike
        link_from = LINK_FROM_WIDE if vectored and query_vector is not None else LINK_FROM
        key = (query, vector, before, len(self.messages), self._vectored, weights, evidence, about, thing)
        if self._rank_cache is None or self._rank_cache[0] != key:
            ranked = self._rank(query, query_vector, before, weights, evidence, about, thing, link_from)
            self._rank_cache = (key, ranked, None)
        _, ranked, whole = self._rank_cache
        if query_vector is None:
            return ranked
        if ample:
            if whole is None:  # (``whole_text_ranking`` waits for every vector itself)
                whole = self._with_whole_texts(ranked, query_vector, before, about)
                self._rank_cache = (key, ranked, whole)
            ranked = whole
        elif (asked is not None or small) and names_a_speaker(about) and DISTINCT_WEIGHT:  # below an ample room
            if self._distinct_cache is None or self._distinct_cache[0] != (key, small):
                self._distinct_cache = ((key, small), self._with_distinct(ranked, query_vector, before, about, small))
            ranked = self._distinct_cache[1]
        if asked is None:
            return ranked
        speaker = names_a_speaker(about)
        theirs = about if speaker else self.asked_of_user(asked, about)
        if not speaker and not (ample and theirs):
            return ranked
        start = PLAIN_FROM if ample else self._units_filling(ranked[0], head_tokens)
        if self._plain_cache is None or self._plain_cache[0] != (key, ample, asked, start):
            plain = self._with_plain(ranked, asked, query_vector, before, start) if speaker else ranked
            self._plain_cache = ((key, ample, asked, start), self._theirs_first(plain, theirs) if ample else plain)
        return self._plain_cache[1]

    def asked_of_user(self, asked: str, about: frozenset[int]) -> frozenset[int]:
        """The user's party (``UNNAMED``) when ``asked`` is in the first person ("Who employs me at the moment?"),
        about no one else, of a chat no speaker tag or name gives: a user asking an assistant about themselves. Else
        none."""
        if about or self.speakers or not _FIRST_PERSON.search(asked):
            return frozenset()
        return frozenset({UNNAMED["user"]})

    def _theirs_first(self, ranked: _Ranked, about: frozenset[int]) -> _Ranked:
        """``ranked`` with, past its ``THEIRS_FIRST_FROM`` best, the messages said by one of ``about`` before the
        others' (each in its order), each at the score of the place it takes."""
        positions, scores, method, reason = ranked
        if len(positions) <= THEIRS_FIRST_FROM:
            return ranked
        return (
            theirs_first(positions, np.isin(self.said_by[positions], list(about)), THEIRS_FIRST_FROM),
            scores,
            method,
            reason,
        )

    def _with_plain(
        self,
        ranked: _Ranked,
        asked: str,
        query_vector: Sequence[float] | np.ndarray,
        before: int,
        start: int,
    ) -> _Ranked:
        """``ranked`` with the plain hybrid's best interleaved past its own ``start`` best, each unit at the score of
        the place it takes. An abstention stays one, and so does a ranking made before every message has its
        vectors."""
        positions, scores, method, reason = ranked
        plain = self.plain_ranking(asked, query_vector, min(before, len(self.messages))) if len(positions) else None
        if plain is None:
            return ranked
        return interleaved(positions, plain, start), scores, method, reason

    def _units_filling(self, positions: np.ndarray, tokens: int) -> int:
        """How many of the first ranked ``positions`` fill ``tokens`` by their rough count (characters per token)."""
        chars = np.cumsum(np.asarray(self.chars, np.int64)[positions])
        return int(np.searchsorted(chars, tokens * LIKELY_CHARS_PER_TOKEN))

    def plain_ranking(self, asked: str, query_vector: Sequence[float] | np.ndarray, n: int) -> np.ndarray | None:
        """The first ``n`` messages as a plain hybrid ranks them, best first: BM25 of the question as asked (the names
        in it too: a message's speaker tag is among its words) and whole meaning (the mean part cosine: a vector of a
        message's whole text would cost an import ~2.4 times the CPU), fused by RRF under no floor. None: not every
        message has its vectors."""
        whole = self.whole_scores(query_vector, n)
        if whole is None:
            return None  # (its words scored apart: ``lexical_scores`` keeps the focused question's)
        return fuse(lexical=self.lexical.scores(asked)[:n], dense=whole).positions

    def _with_whole_texts(
        self,
        ranked: _Ranked,
        query_vector: Sequence[float] | np.ndarray,
        before: int,
        about: frozenset[int] = frozenset(),
    ) -> _Ranked:
        """``ranked`` with the whole-text ranking fused in (``WHOLE_TEXT_WEIGHT``), and for a question ``about``
        someone every message of theirs by whole meaning (``THEIRS_AMPLE_WEIGHT``). An abstention stays one (nothing
        ranked, nothing added), and so does a ranking made before every message has its vectors."""
        n = min(before, len(self.messages))
        by_whole = self.whole_text_ranking(query_vector, n) if len(ranked[0]) else None
        if by_whole is None or not len(by_whole):
            return ranked
        lists = [(by_whole, WHOLE_TEXT_WEIGHT)]
        if about:  # what they did, asked for in general words: their own lines first, where the room holds them
            lists.append((self.theirs_by_meaning(about, query_vector, n), ABOUT_FACTOR * THEIRS_AMPLE_WEIGHT))
        return fused_with(ranked, n, lists)

    def _with_distinct(
        self,
        ranked: _Ranked,
        query_vector: Sequence[float] | np.ndarray,
        before: int,
        about: frozenset[int],
        small: bool = False,
    ) -> _Ranked:
        """``ranked`` with the lines of ``about`` near the question and unlike the rest of theirs fused in
        (``DISTINCT_WEIGHT``); in a ``small`` room only the best of them that are short (``DISTINCT_SMALL_TOP`` of at
        most ``DISTINCT_SMALL_CHARS``). An abstention stays one, and so does a ranking made before every message has
        its vectors."""
        n = min(before, len(self.messages))
        if not len(ranked[0]):
            return ranked
        if small:
            distinct = self.distinct_of_theirs(about, query_vector, n, DISTINCT_SMALL_TOP, DISTINCT_SMALL_CHARS)
        else:
            distinct = self.distinct_of_theirs(about, query_vector, n)
        if not len(distinct):
            return ranked
        return fused_with(ranked, n, [(distinct, ABOUT_FACTOR * DISTINCT_WEIGHT)])

    def distinct_of_theirs(
        self,
        about: frozenset[int],
        query_vector: Sequence[float] | np.ndarray,
        n: int,
        top: int = DISTINCT_TOP,
        max_chars: int | None = None,
    ) -> np.ndarray:
        """At most ``top`` of ``theirs_by_meaning``'s lines (their newest ``DISTINCT_LINES``), best first by their whole
        meaning's z-score among them plus their unlikeness's (``unlike_each_other``); with ``max_chars``, only those
        of at most that many characters, scored among all of them."""
        held = np.sort(self.theirs_by_meaning(about, query_vector, n))[-DISTINCT_LINES:]
        if len(held) <= DISTINCT_NEAREST:
            return np.zeros(0, np.intp)
        whole = self.whole_scores(query_vector, n)
        assert whole is not None
        key = (about, n, len(self.owner))
        if self._unlike_cache is None or self._unlike_cache[0] != key:
            self._unlike_cache = (key, unlike_each_other(self.whole_vectors(held)))
        score = z_scores(whole[held]) + z_scores(self._unlike_cache[1])
        best = held[np.argsort(-score, kind="stable")]
        if max_chars is not None:
            best = best[np.asarray(self.chars, np.int64)[best] <= max_chars]
        return best[:top]

    def whole_vectors(self, positions: np.ndarray) -> np.ndarray:
        """The unit mean of each message's part vectors at ``positions`` (each with vectors), one row each."""
        assert self.dense is not None
        starts, owners = self._runs.caught_up(self.owner)
        runs = np.searchsorted(owners, positions)
        ends = np.r_[starts[1:], len(self.owner)]
        counts = ends[runs] - starts[runs]
        firsts = np.r_[0, np.cumsum(counts)[:-1]]
        parts = np.arange(int(counts.sum())) + np.repeat(starts[runs] - firsts, counts)  # each message's run of parts
        vectors = self.dense.rows_at(self.row_of[parts])
        mean = np.add.reduceat(vectors, firsts) / counts[:, None]
        return (mean / np.maximum(np.linalg.norm(mean, axis=1, keepdims=True), 1e-9)).astype(np.float32)

    def theirs_by_meaning(
        self, about: frozenset[int], query_vector: Sequence[float] | np.ndarray, n: int
    ) -> np.ndarray:
        """The first ``n`` messages said by one of ``about`` with vectors and ``OWN_MEANING_MIN_WORDS`` words, none a
        stock line (``said_elsewhere``), best first by whole meaning (ties in order)."""
        whole = self.whole_scores(query_vector, n)
        if whole is None:
            return np.zeros(0, np.intp)
        theirs = np.isin(self.said_by[:n], list(about)) & ~self.said_elsewhere(n)
        held = np.flatnonzero(theirs & (whole > -1) & (self.lexical.word_counts()[:n] >= OWN_MEANING_MIN_WORDS))
        return held[np.argsort(-whole[held], kind="stable")]

    def unknown_names(self, query: str, n: int) -> list[str]:
        """The names ``query`` asks about that none of the first ``n`` messages mentions ("What is my neighbour
        Dmitri's dog called?" in a chat that never names a Dmitri): nothing earlier is about them. A name that begins
        a speaker's is known: the question may shorten it ("Mel" for "Melanie"). A name qualifying a kind of thing ("an
        old Oasis hit": ``names_a_kind``) or a region ("East Asia": ``names_a_region``) is not asked about: the chat
        may name the thing itself, or the place in it; nor is a kinship word written capitalised ("Mum":
        ``names_kin``)."""
        asked = [name for name in names_asked(query) if terms(name) and not _a_kind_or_region(query, name)]
        return [name for name in asked if not self._mentions(name, n)]

    def _mentions(self, name: str, n: int) -> bool:
        return bool(self.lexical.coverage(terms(name), n).any()) or self._speaks(name)

    def _speaks(self, name: str) -> bool:
        """Whether ``name`` is a speaker's, or the start of one: a question may shorten it ("Mel" for "Melanie")."""
        return any(_calls(name.lower(), speaker.lower()) for speaker in self.speakers)

    def _rank(
        self,
        query: str,
        query_vector: Sequence[float] | np.ndarray | None,
        before: int,
        weights: tuple[float, float],
        evidence: Evidence | None,
        about: frozenset[int] = frozenset(),
        thing: str | None = None,
        link_from: int = LINK_FROM,
    ) -> _Ranked:
        n = min(before, len(self.messages))
        if n <= 0:
            return np.zeros(0, np.intp), np.zeros(0), "none", "no earlier messages"
        lexical = self.lexical_scores(query)[:n]
        dense = self.dense_scores(query_vector, n) if query_vector is not None else None
        method = "+".join(name for name, s in (("lexical", lexical), ("dense", dense)) if s is not None)
        floor, hits = Floor(), None
        if evidence is not None:
            coverage = self.lexical.coverage(terms(query), n)
            near = None if query_vector is None else functools.partial(self.own_best, query_vector, n)
            reason = self._abstention(query, evidence, coverage, dense, n, thing, near)
            if reason is not None:
                return np.zeros(0, np.intp), np.zeros(0), method, reason
            floor = dense_floor(evidence, dense)
            if dense is not None:  # words alone: a common word shared is still the best signal there is
                lexical = lexical_floor(evidence, lexical, coverage)
            if not about and faint(evidence, coverage, dense):
                hits = FAINT_HITS
        said = self.said_elsewhere(n)  # stock lines leave the rankings by meaning (the gate above read every message)
        weights = weights if dense is not None else (1.0, 1.0)
        ranking = fuse(lexical=lexical, dense=_without(dense, said), weights=weights, floor=floor)
        if said.any() and not len(ranking):  # unless they are all the chat has for it: ranked as any message then
            said = np.zeros(n, dtype=bool)
            ranking = fuse(lexical=lexical, dense=dense, weights=weights, floor=floor)
        dense = _without(dense, said)
        if not len(ranking):
            return ranking.positions, ranking.scores, ranking.method, ranking.reason
        fused = np.zeros(n)
        fused[ranking.positions[:hits]] = ranking.scores[:hits]
        whole = self.whole_scores(query_vector, n) if query_vector is not None else None
        by_whole = None if whole is None else best_first(whole, said)
        described = describes_someone(query)
        sources = hop_sources(ranking.positions, by_whole if described else None)
        hop = None if hits else self._second_hop(query, sources, n)
        if hop is not None:  # what the best hits name leads to the next hop's message: fused as a third ranking
            ranked, led = hop
            fused[ranked] += HOP_WEIGHT / (RRF_K + np.arange(1, len(ranked) + 1))
            for hit, message in led.items():  # and each hit's next hop ranks just below it, as its exchange
                fused[message] = max(fused[message], fused[hit] * NEIGHBOUR_SHARE)
        by_name = None if hits or not NAMED_WEIGHT else self._named(query, n)
        if by_name is not None:  # what the chat calls a thing the question asks about by its word
            fused[by_name] += NAMED_WEIGHT / (RRF_K + np.arange(1, len(by_name) + 1))
        if not hits and LINK_TOP and asks_two_things(query):  # the second thing asked: what the first's hits link to
            for hit in ranking.positions[:link_from].tolist():
                for message in self._linked(hit, query, n):
                    fused[message] = max(fused[message], fused[hit] * NEIGHBOUR_SHARE)
        best = ranking.positions[: hits or NEIGHBOURS_OF]  # faint: the guesses come bare (``FAINT_GUESSES``)
        own = None
        if about:  # a question about someone: what they said counts for more
            own = np.isin(self.said_by[:n], list(about))
        scores = self._with_exchanges(fused, best, n, own)
        signalled = scores > 0  # what a signal ranks over its floor (with the hits' exchanges)
        if own is not None and dense is not None and floor.min_dense is not None:  # and the asked-about's own messages
            signalled |= own & (dense > -1)
        missing = None if evidence is None else self._type_missing(query, np.flatnonzero(signalled), ranking.positions)
        if missing is not None:
            return np.zeros(0, np.intp), np.zeros(0), ranking.method, missing
        unranked = fused <= 0  # what no floor, hop or hit ranks
        if whole is not None:  # every message by its whole meaning, fused as one more ranking, under no floor
            assert by_whole is not None
            held = by_whole
            if hits and query_vector is not None:  # faint: a few short guesses, the newest older turns get the rest
                held = self._faint_guesses(held, n, query_vector)
            fused[held] += WHOLE_WEIGHT / (RRF_K + np.arange(1, len(held) + 1))
            if own is not None:  # and their own news no other signal ranks, by its meaning among what they said
                theirs = told_by_them(whole, own & unranked & ~said, own, self.lexical.word_counts()[:n])
                fused[theirs] += OWN_MEANING_WEIGHT / (RRF_K + np.arange(1, len(theirs) + 1))
            if own is not None and dense is not None and asks_hypothetically(query):  # and what they like, or not
                stated = self.stated_by(own, dense)
                fused[stated] += STATED_WEIGHT / (RRF_K + np.arange(1, len(stated) + 1))
                lines = self.one_liners(own & ~said, whole)  # and each thing they said in a line of its own
                fused[lines] += ONE_LINE_WEIGHT / (RRF_K + np.arange(1, len(lines) + 1))
            scores = self._with_exchanges(fused, best, n, own)
        if described and not hits:  # the description's message and its answer's, each told in its own words
            scores = self._with_pairs(scores, sources, query_vector)
        positions = np.flatnonzero(scores > 0)
        positions = positions[np.lexsort((-positions, -scores[positions]))]
        return positions, scores[positions], ranking.method, None

    def stated_by(self, own: np.ndarray, dense: np.ndarray) -> np.ndarray:
        """The ``own`` messages (a mask over the first ``len(own)``) holding a word of liking or disliking
        (``STATED_WORDS``), best first by ``dense`` (best part; ties in order), at most ``STATED_TOP``."""
        n = len(own)
        holding = np.unique(np.concatenate([self.lexical.rows(word) for word in STATED_WORDS]))
        holding = holding[holding < n]
        held = holding[own[holding] & (dense[holding] > -1)]
        return held[np.argsort(-dense[held], kind="stable")][:STATED_TOP]

    def one_liners(self, candidates: np.ndarray, whole: np.ndarray) -> np.ndarray:
        """The ``candidates`` (a mask over the first ``len(candidates)`` messages) embedded as one part (one sentence)
        with vectors, best first by ``whole`` meaning (ties in order)."""
        n = len(candidates)
        _, owners = self._runs.caught_up(self.owner)
        single = np.zeros(n, dtype=bool)
        within = owners < n
        single[owners[within]] = self._runs.counts()[within] == 1
        held = np.flatnonzero(candidates & single & (whole > -1))
        return held[np.argsort(-whole[held], kind="stable")]

    def _with_exchanges(self, fused: np.ndarray, best: np.ndarray, n: int, own: np.ndarray | None) -> np.ndarray:
        """``fused`` with the short exchanges of the ``best`` hits ranked with them, the ``own`` messages counting
        double (``ABOUT_FACTOR``), and the hits' sessions' dated lines just below their hits as they then score (a
        question about someone ranks every message of theirs by its whole meaning: a date below its hit's half would
        fall behind their chatter)."""
        short = self.short()[:n]
        scores = with_neighbours(fused, best, short)
        if own is not None:
            scores[own] *= ABOUT_FACTOR
        return with_session_dates(scores, scores, best, self.dated, short)

    def _type_missing(self, query: str, positions: np.ndarray, ranked: np.ndarray) -> str | None:
        """Why none of the ranked messages at ``positions`` can answer ``query``: it asks for a type of answer ("How
        much was the rent?": an amount) that none of them gives, so the detail was never given (``answer_types``).
        When the chat speaks of the holder in the question's words (a word of it in one of the best
        ``TYPE_HOLDER_HITS`` ``ranked``), the type must be given about it; else (a paraphrase: "the animal doctor"
        for "the vet") anywhere in a message. Not when the question asks another thing beside it ("Who wants to sell
        the cheddar, and for how much?"): that thing's evidence is still worth recalling."""
        kind = asked_type(query)
        if kind is None or asks_two_things(query):
            return None
        about = holder(query)
        text = self._text
        if about and any(not about.isdisjoint(terms(text(p))) for p in ranked[:TYPE_HOLDER_HITS].tolist()):
            gives = any(gives_type_about(text(p), self._followed(p), kind, about) for p in positions.tolist())
        else:
            gives = any(holds_type(text(p), kind) for p in positions.tolist())
        return (
            None
            if gives
            else f"nothing relevant found: none of the {len(positions)} earlier messages about it gives {kind}"
        )

    def _text(self, position: int) -> str:
        return searchable_text(self.messages[position])

    def _followed(self, position: int) -> str:
        """What the message at ``position`` answers: the message before it, and when that one asks after the
        speaker's own message before it (``asks_back``, asked by someone else), that message too ("Sold my old drum
        kit" <- "How much did you get for it?" <- "£340 in cash": the amount's holder is two messages up; fresh7,
        session 60). An asker going on after their own question answers nothing."""
        if position == 0:
            return ""
        before = self._text(position - 1)
        said_by = self.said_by
        if position > 1 and said_by[position - 2] == said_by[position] != said_by[position - 1] and asks_back(before):
            return self._text(position - 2) + " " + before
        return before

    def _abstention(
        self,
        query: str,
        evidence: Evidence,
        coverage: np.ndarray,
        dense: np.ndarray | None,
        n: int,
        thing: str | None = None,
        near: Callable[[], np.ndarray | None] | None = None,
    ) -> str | None:
        """Why none of the first ``n`` messages is evidence for ``query`` (None: some may be); ``near``: their cosines
        by what each says itself (``own_best``), read only when no other rule finds evidence. A hypothetical may name
        what nothing earlier mentions, and so may a question asking the speaker's advice (``asks_advice``): each is
        answered from what the chat says of the person it asks about."""
        if asks_hypothetically(query) or asks_advice(query):
            return abstention(evidence, coverage, dense, near)
        unknown = self.unknown_names(query, n)
        if unknown:
            return f"nothing relevant found: no earlier message mentions {', '.join(unknown)}"
        return abstention(evidence, coverage, dense, near) or self._thing_unmentioned(thing, evidence, dense, n)

    def _thing_unmentioned(self, thing: str | None, evidence: Evidence, dense: np.ndarray | None, n: int) -> str | None:
        """Why nothing earlier is about the ``thing`` a question asks about: no message among the first ``n`` names it
        (nor an inflection of it) and none stands out in meaning either (``Evidence.thing_z``: a chat may call the
        thing another way). Only when every message has a vector: meaning must be able to say it was found."""
        if thing is None or evidence.thing_z is None or dense is None or not len(dense) or not (dense > -1).all():
            return None
        if not terms(thing) or self._mentions(thing, n):
            return None
        best_z = float(z_scores(dense).max(initial=0.0))
        if best_z >= evidence.thing_z:
            return None
        return (
            f"nothing relevant found: no earlier message mentions {thing} (nor stands out in meaning: the best is "
            f"{best_z:.2f} standard deviations above the rest, evidence from {evidence.thing_z:.1f})"
        )

    def _second_hop(self, query: str, best: np.ndarray, n: int) -> tuple[np.ndarray, dict[int, int]] | None:
        """Messages ranked by words for the query plus the names the ``best`` messages bring in (a person or place
        the question does not name: "the relative who taught me to sail" -> "Mireille" -> where Mireille moves),
        best first, and per best message the next hop it leads to (``_led_to``); None when they name nothing new.
        Query decomposition without a model call."""
        asked = terms(query)
        brings = {hit: [t for t in self._names_in(hit) if t not in asked] for hit in best.tolist()}
        names = {hit: brought for hit, brought in brings.items() if brought}
        every = list(dict.fromkeys(term for brought in names.values() for term in brought))
        if not every:
            return None
        scores = self.lexical.scores_for_terms([*asked, *every])[:n]
        hop = np.flatnonzero(scores > 0)
        hop = hop[np.lexsort((-hop, -scores[hop]))]
        return hop, self._led_to(hop, names, best, self.lexical.scores_for_terms(asked)[:n])

    def _named(self, query: str, n: int) -> np.ndarray | None:
        """The first ``n`` messages holding a name the chat gave a thing ``query`` asks about, best first by the
        query's words and the names (ties: the newest first); None when the chat names none of its things."""
        asked = terms(query)
        names = named.names_for((b for b, row in self._given_names().items() if row < n), asked)
        names = [name for name in names if name in self.lexical and self.lexical.idf(name) >= HOP_MIN_IDF]
        if not names:
            return None
        holding = np.unique(np.concatenate([self.lexical.rows(name) for name in names]))
        holding = holding[holding < n]
        scores = self.lexical.scores_for_terms([*asked, *names])
        return holding[np.lexsort((-holding, -scores[holding]))]

    def _given_names(self) -> dict[named.Binding, int]:
        """Every name the history gives a thing (``named.bindings``), with the position of the first message giving
        it: the messages added since the last question are read (only those holding "called" or "named"), the rest
        kept. A name given again is held once: a question reads each binding once, however long the history."""
        upto = self._named_upto
        if upto < len(self.messages):
            cued = np.unique(np.concatenate([self.lexical.rows(cue) for cue in named.CUE_TERMS]))
            for row in cued[cued >= upto].tolist():
                for binding in named.bindings(searchable_text(self.messages[row])):
                    self._named_given.setdefault(binding, row)
            self._named_upto = len(self.messages)
        return self._named_given

    def _led_to(
        self, hop: np.ndarray, names: dict[int, list[str]], best: np.ndarray, asked: np.ndarray
    ) -> dict[int, int]:
        """Per best message, the message holding a name it brought (not a best one) that holds most of the
        question's own words (one at least), then ranks first in the ``hop``: "Dusty" leads to "he's officially
        Captain now, Dusty just didn't suit him" for "What is the cat called now?", not to "Dusty slept on my head".
        When none holds a word of the question, the one other message holding the name, if it is the only one: "Colm
        let me borrow his van" leads to "Colm's a tree surgeon" for "What does the man who lent him a vehicle do for
        work?" (the answer is about Colm, in words the question cannot know)."""
        led, others = {}, hop[~np.isin(hop, best) & (asked[hop] > 0)]
        for hit, brought in names.items():
            rows = np.unique(np.concatenate([self.lexical.rows(t) for t in brought]))
            holding = others[np.isin(others, rows)]
            only = rows[(rows != hit) & ~np.isin(rows, best) & (rows < len(asked))]
            if len(holding):
                led[hit] = int(holding[np.argmax(asked[holding])])  # argmax: the first of the best, in hop order
            elif len(only) == 1:
                led[hit] = int(only[0])
        return led

    def _with_pairs(
        self, scores: np.ndarray, sources: np.ndarray, query_vector: Sequence[float] | np.ndarray | None
    ) -> np.ndarray:
        """``scores`` with the one other message holding a rare name brought by one of the best
        ``DESCRIBED_HOP_FROM`` (not the second hop's ``sources``) ranked just below it, and the one older message
        holding a name a shown message brings (``_best_shown``) just below the best."""
        n, scores = len(scores), scores.copy()
        ranked = np.flatnonzero(scores > 0)
        deeper = ranked[np.lexsort((-ranked, -scores[ranked]))][:DESCRIBED_HOP_FROM]
        for hit, message in self._paired(deeper[~np.isin(deeper, sources)], n).items():
            scores[message] = max(scores[message], scores[hit] * NEIGHBOUR_SHARE)
        for message in self._paired(self._best_shown(query_vector, n), n).values():
            scores[message] = max(scores[message], scores.max() * NEIGHBOUR_SHARE)
        return scores

    def _best_shown(self, query_vector: Sequence[float] | np.ndarray | None, n: int) -> np.ndarray:
        """The ``HOP_FROM`` best by whole meaning of the messages from ``n`` on (the window shows them) that have
        vectors, but stock lines (``said_elsewhere``) and messages that only ask (the question itself, embedded or
        not yet)."""
        upto = min(len(self.messages), self._vectored)
        whole = None if query_vector is None or upto <= n else self.whole_scores(query_vector, upto)
        if whole is None:
            return np.zeros(0, np.intp)
        left_out = self.said_elsewhere(upto)[n:] | ~self.shows()[n:upto]
        return (best_first(whole[n:], left_out) + n)[:HOP_FROM]

    def _paired(self, hits: np.ndarray, n: int) -> dict[int, int]:
        """Per hit, the one other message among the first ``n`` holding a rare name it brings (``_names_in``), when
        only one does: someone introduced by what they did, and what they do now."""
        paired = {}
        for hit in hits.tolist():
            for name in self._names_in(hit):
                rows = self.lexical.rows(name)
                others = rows[(rows != hit) & (rows < n)]
                if len(others) == 1:
                    paired[hit] = int(others[0])
                    break
        return paired

    def _linked(self, hit: int, query: str, n: int) -> list[int]:
        """The messages among the first ``n`` that share with message ``hit`` a word the query does not say and at
        most ``LINK_MAX_OTHERS`` other messages hold, the most linked first (``LINK_TOP``; ties: the nearest), at most
        ``LINK_TOP``: "the county show turned down my jug" -> "the jug, thrown from mud we dug out of the riverbank",
        where the second thing a question asks ("...and where had he found what it was made of?") names nothing of
        the first's answer."""
        asked = set(terms(query))
        words = [
            t for t in dict.fromkeys(terms(searchable_text(self.messages[hit]))) if t not in asked and not t.isdigit()
        ]
        shared: dict[int, float] = defaultdict(float)
        for term, holders in zip(words, self.lexical.holders(words).tolist(), strict=True):
            if 1 < holders <= LINK_MAX_OTHERS + 1:
                for row in self.lexical.rows(term).tolist():  # a word one other holds links more than one two hold
                    if row != hit and row < n:
                        shared[row] += 1.0 / (holders - 1)
        order = sorted(shared, key=lambda r: (-shared[r], abs(r - hit)))
        return order[:LINK_TOP]

    def _names_in(self, position: int) -> list[str]:
        """The rare names message ``position`` brings in (its capitalised words, ``_NAME``), as terms."""
        names = terms(" ".join(_NAME.findall(searchable_text(self.messages[position]))))
        return [term for term in dict.fromkeys(names) if self.lexical.idf(term) >= HOP_MIN_IDF]


def _a_kind_or_region(query: str, name: str) -> bool:
    return names_a_kind(query, name) or names_a_region(query, name) or names_kin(name)


def _without(dense: np.ndarray | None, said: np.ndarray) -> np.ndarray | None:
    """``dense`` with the messages ``said`` elsewhere (``HistoryIndex.said_elsewhere``) scored as having no vector."""
    return dense if dense is None or not said.any() else np.where(said, -1.0, dense)


def interleaved(ranked: np.ndarray, plain: np.ndarray, start: int) -> np.ndarray:
    """``ranked``'s first ``start``, then one from ``ranked`` and one from ``plain`` in turn, each unit once (a unit
    met again is passed over for the next), until ``ranked``'s length: the units ``plain`` adds push ``ranked``'s last
    ones out."""
    out: list[int] = ranked[:start].tolist()
    seen = set(out)
    rest, theirs = iter(ranked[start:].tolist()), iter(plain.tolist())
    while len(out) < len(ranked):
        taken = len(out)
        for source in (rest, theirs):
            for position in source:
                if position not in seen:
                    seen.add(position)
                    out.append(position)
                    break
        if len(out) == taken:
            break
    return np.asarray(out[: len(ranked)], dtype=np.intp)


def theirs_first(ranked: np.ndarray, theirs: np.ndarray, start: int) -> np.ndarray:
    """``ranked``'s first ``start``, then the rest of those ``theirs`` marks (a mask in ``ranked``'s order), then the
    rest of the others, each in its order."""
    start = min(start, len(ranked))
    rest = np.arange(start, len(ranked))
    return ranked[np.concatenate([np.arange(start), rest[theirs[start:]], rest[~theirs[start:]]])]


def fused_with(ranked: _Ranked, n: int, lists: Sequence[tuple[np.ndarray, float]]) -> _Ranked:
    """``ranked`` (over the first ``n`` messages) with each list of positions, best first, fused in by reciprocal rank
    at its weight, and ordered again (ties in order)."""
    positions, scores, method, reason = ranked
    fused = np.zeros(n)
    fused[positions] = scores
    for listed, weight in lists:
        fused[listed] += weight / (RRF_K + np.arange(1, len(listed) + 1))
    positions = np.flatnonzero(fused > 0)
    positions = positions[np.lexsort((-positions, -fused[positions]))]
    return positions, fused[positions], method, reason


def unlike_each_other(vectors: np.ndarray) -> np.ndarray:
    """Per row of ``vectors`` (unit rows), minus its mean cosine with the ``DISTINCT_NEAREST`` other rows nearest it."""
    out = np.empty(len(vectors))
    nearest = min(DISTINCT_NEAREST, len(vectors) - 1)
    for start in range(0, len(vectors), 256):  # a block of rows at a time: the whole square is their count squared
        cosines = vectors[start : start + 256] @ vectors.T
        cosines[np.arange(len(cosines)), np.arange(start, start + len(cosines))] = -1.0
        out[start : start + len(cosines)] = -np.partition(cosines, -nearest, axis=1)[:, -nearest:].mean(axis=1)
    return out


def names_a_speaker(about: frozenset[int]) -> bool:
    """Whether a question ``about`` someone names a speaker the chat gives by tag or name (``said_by`` >= 0), not only a
    party of a role (``UNNAMED``): the plain hybrid's edge is reading that name among the speaker's lines."""
    return any(number >= 0 for number in about)


def is_ample(enough_tokens: int) -> bool:
    """Whether a recall gathering ``enough_tokens`` has ample room (``WHOLE_TEXT_ROOM``: a 16K window's)."""
    return enough_tokens >= WHOLE_TEXT_ROOM


def asks_two_things(question: str) -> bool:
    """Whether ``question`` asks a second thing after a first ("Which piece was turned down, and where had he found
    what it was made of?"): the second's evidence is linked to the first's answer, not to the question's words."""
    return _TWO_THINGS.search(question) is not None


def told_by_them(whole: np.ndarray, candidates: np.ndarray, theirs: np.ndarray, words: np.ndarray) -> np.ndarray:
    """The ``candidates`` (a mask) that stand out by ``whole`` meaning among ``theirs`` (``OWN_MEANING_MIN_Z``) and
    hold ``OWN_MEANING_MIN_WORDS`` words, best first (ties in order), at most ``OWN_MEANING_TOP``."""
    among = whole[theirs & (whole > -1)]
    if not len(among):
        return np.zeros(0, np.intp)
    z = (whole - among.mean()) / (among.std() or 1.0)
    held = np.flatnonzero(candidates & (z >= OWN_MEANING_MIN_Z) & (words >= OWN_MEANING_MIN_WORDS))
    return held[np.argsort(-whole[held], kind="stable")][:OWN_MEANING_TOP]


def describes_someone(question: str) -> bool:
    """Whether ``question`` names someone by what they did ("What does the man who lent Theo a vehicle do for
    work?"): its answer is told of them by a name it does not say, which a message fitting the description gives."""
    return _DESCRIBED.search(question) is not None


def best_first(whole: np.ndarray, left_out: np.ndarray) -> np.ndarray:
    """The positions of the messages with vectors (``whole`` above -1) but those ``left_out``, best first by
    ``whole``, ties in order."""
    held = np.flatnonzero((whole > -1) & ~left_out)  # a stable sort of positions in order
    return held[np.argsort(-whole[held], kind="stable")]


def hop_sources(ranked: np.ndarray, by_whole: np.ndarray | None) -> np.ndarray:
    """The messages a second hop starts from: the best ``HOP_FROM`` of ``ranked``, then the best ``HOP_FROM`` of
    ``by_whole`` (positions best first by whole meaning) not among them."""
    best = ranked[:HOP_FROM]
    if by_whole is None:
        return best
    top = by_whole[:HOP_FROM]
    return np.concatenate([best, top[~np.isin(top, best)]])


def with_neighbours(fused: np.ndarray, hits: np.ndarray, short: np.ndarray) -> np.ndarray:
    """Each message's score, raised to just below a hit's when it is ``short`` and one of the ``NEIGHBOURS`` messages
    before or after one of the best ``hits``: an exchange is ranked with its hit (the reply "A beagle mix, we think"
    holds the detail a question about the dog asks; "Where did Theo find the fish restaurant?" hits the reply and
    needs the message naming the city)."""
    out = fused.copy()
    for hit in hits.tolist():
        near = np.arange(max(0, hit - NEIGHBOURS), min(len(fused), hit + NEIGHBOURS + 1))
        near = near[short[near]]  # only ``short`` ones (see ``NEIGHBOUR_MAX_CHARS``)
        out[near] = np.maximum(out[near], fused[hit] * NEIGHBOUR_SHARE)
    return out


def with_session_dates(
    scores: np.ndarray, fused: np.ndarray, hits: np.ndarray, dated: Sequence[int], short: np.ndarray
) -> np.ndarray:
    """``scores`` with the dated line opening each of the best ``hits``' sessions (``HistoryIndex.dated``) raised to
    just below its hit's, when short: "we moved on Friday" says when only beside "[2 March 2024] Hey!"."""
    out = scores.copy()
    for hit in hits.tolist():
        at = bisect.bisect_right(dated, hit) - 1  # the last dated line at or before the hit
        if at >= 0 and dated[at] != hit and short[dated[at]]:
            out[dated[at]] = max(out[dated[at]], fused[hit] * NEIGHBOUR_SHARE)
    return out


def _attach_from(index: HistoryIndex, first: int, start: int, vectors: Sequence[Sequence[Any]]) -> None:
    index.attach(first + start, vectors)


def _embedded(message: Message) -> bool:
    """Whether a message could ever be recalled (what ``_shown`` requires whatever the phase)."""
    return message.valid and message.role != "system"


def _shown(message: Message, phase: str | None) -> bool:
    return message.valid and (phase is None or visible(message.phase, phase)) and message.role != "system"


async def read_new(index: HistoryIndex, source: MessageSource) -> Sequence[Message]:
    """The messages of ``source`` after the first ``len(index)``, oldest first (pages read newest first, stopping
    at what the index already holds; a history in memory sliced, so a ``ChatMessages``' are not made)."""
    wanted = source.total - len(index)
    if wanted <= 0:
        return []
    if isinstance(source, InMemoryMessages):
        return source.messages[len(index) :]
    found: list[Message] = []
    async with aclosing(pages_newest_first(source)) as pages:
        async for _, messages in pages:
            found.extend(messages[: wanted - len(found)])
            if len(found) >= wanted:
                break
    return found[::-1]


CALL_INDEXES = 8
"""Indexes of stateless calls' conversations kept for the calls that go on from them (``CallIndexes``)."""
CALL_INDEX_BYTES = 64 * 2**20
"""At most about this much memory (``HistoryIndex.held_bytes``) held by those indexes together."""


class CallIndexes:
    """Indexes that each served one call (a stateless chat's conversation, ``SessionRecall.for_one_call``), kept
    for the next call whose conversation begins with one's messages: a client that sends its whole conversation
    again, a few messages longer, has only those indexed and embedded. A kept index is named by a digest of the
    messages it holds (the caller's: ``beginnings[n]`` names a conversation's first ``n`` messages); one is handed
    to one call at a time (taken out while it serves it), and the call checks the messages themselves before going
    on from it (``SessionRecall._current``): an edited conversation gets a fresh index. Bounded in entries and in
    the memory they hold (``held_bytes``); the least recently kept go first."""

    def __init__(self, max_entries: int = CALL_INDEXES, max_bytes: int = CALL_INDEX_BYTES) -> None:
        self.max_entries, self.max_bytes = max_entries, max_bytes
        self._held: dict[str, tuple[HistoryIndex, int]] = {}  # in the order kept: the oldest first

    def __len__(self) -> int:
        return len(self._held)

    @property
    def held_bytes(self) -> int:
        return sum(size for _, size in self._held.values())

    def take(self, beginnings: Sequence[str]) -> HistoryIndex | None:
        """The kept index of the longest beginning of the conversation ``beginnings`` names (``beginnings[n]``: its
        first ``n`` messages), taken out (None: none is kept)."""
        found = [
            (len(index), key)
            for key, (index, _) in self._held.items()
            if len(index) < len(beginnings) and beginnings[len(index)] == key
        ]
        return self._held.pop(max(found)[1])[0] if found else None

    def keep(self, key: str, index: HistoryIndex) -> None:
        """Keep ``index`` (holding the messages ``key`` names) for a call that goes on from them."""
        size = index.held_bytes
        if not len(index) or size > self.max_bytes // 2:  # one long conversation would push out every other
            return
        self._held.pop(key, None)
        self._held[key] = (index, size)
        while len(self._held) > self.max_entries or self.held_bytes > self.max_bytes:
            del self._held[next(iter(self._held))]


class SessionRecall:
    """The ``HistoryRecall`` provider: one ``HistoryIndex`` per session, synced from the session's history at first
    use. ``embedder`` (optional) adds meaning to words; without it recall is lexical."""

    def __init__(
        self,
        embedder: Embedder | None = None,
        max_sessions: int = 64,
        max_vector_bytes: int = VECTORS_BY_TEXT_BYTES,
        *,
        stored: PartVectors | None = None,
        vectors_wait_s: float = VECTORS_WAIT_S,
        outlive_calls: bool = True,
        evidence: Evidence | None = None,
        runner: Runner | None = None,
    ) -> None:
        self.embedder = embedder
        self.runner = runner
        """Runs a step over a long history off the event loop (the application's worker threads; ``offload.py``).
        None: every step runs here, a long one in slices with a yield to the event loop between."""
        self.evidence = evidence or evidence_for(embedder)
        """When a query has evidence among the older messages at all (calibrated for ``embedder``): recall returns
        nothing, and says why, for a question nothing earlier answers."""
        self.vectors_wait_s = vectors_wait_s
        """How long recall waits for a vectors job under way before ranking by words (see ``VECTORS_WAIT_S``)."""
        self.outlive_calls = outlive_calls
        """False: the index serves one call and is then dropped (a stateless chat's conversation), so no work
        outlives it: an index's vectors job runs once and is cancelled when recall stops waiting for it
        (``vectors_wait_s``); what it did not embed by then is ranked by words."""
        self.stored = stored
        """Where the parts' vectors are kept beyond this process: read before embedding, written after."""
        self._store_failed = False
        self._store_retry_at = 0.0
        self._indexes: BoundedCache[str, HistoryIndex] = BoundedCache(max_sessions)
        self._vectors: VectorsByText[str] = VectorsByText(20_000, max_vector_bytes, TAKEN_VECTORS_BYTES)
        """Vectors by the text embedded: a history indexed afresh (edited, or another session with the same messages,
        a stateless call's conversation sent again) is not embedded again. With a ``stored``, those a session's
        index took are its index's and the store's: only the most recent are kept again here (``_taken``)."""
        self._embedding: dict[str, asyncio.Future[dict[str, np.ndarray]]] = {}
        """The texts being embedded, by the job embedding them: a call needing one waits for it (``_embedded``)."""
        self._queries: BoundedCache[str, np.ndarray] = BoundedCache(64)
        """Query vectors by the query's text (one embedder per recall: the same text, the same vector)."""
        self._background = Background("history vectors")
        """The vector jobs running (a history's catching up, texts embedded ahead of the call that needs them)."""
        self.call_indexes = CallIndexes()
        """The indexes one-call recalls built, for the calls that go on from their conversations."""
        self._beginnings: Sequence[str] = ()
        self._kept_by: CallIndexes | None = None

    def for_one_call(self, beginnings: Sequence[str] = ()) -> SessionRecall:
        """A recall whose one index serves one call (``outlive_calls`` False: a stateless chat's conversation),
        sharing this recall's embedder and its vectors by text: a client sending its conversation again, one
        message longer, is not embedded again. With ``beginnings`` (``beginnings[n]`` names the conversation's
        first ``n`` messages, see ``CallIndexes``) it starts from the index an earlier call built of the longest
        beginning of the conversation, and ``call_done`` keeps its own for the next."""
        one = SessionRecall(
            self.embedder,
            max_sessions=1,
            vectors_wait_s=self.vectors_wait_s,
            outlive_calls=False,
            evidence=self.evidence,
            runner=self.runner,
        )
        one._vectors, one._queries, one._embedding = self._vectors, self._queries, self._embedding
        if beginnings:
            one._beginnings, one._kept_by = beginnings, self.call_indexes
            index = self.call_indexes.take(beginnings)
            if index is not None and _settled(index):
                index.vectors_due, index.checked, index.checked_length = 0.0, None, -1  # a new call: its one job
                one._indexes.put(index.session_id or "", index)
        return one

    def call_done(self) -> None:
        """The call this one-call recall served is over: its index is kept for a call that goes on from it, when no
        job is giving it vectors (a later call never sees an earlier one's vectors arrive). One whose job stopped
        before every message had its vectors is kept too: the next call finds what it did embed by text and gives
        the rest in the turn when few are left (``_vectors_in_turn``), as a fresh index would, without indexing the
        conversation's words again (a client resending a long conversation while it is embedded: ~20 ms of CPU a
        call at 400 messages)."""
        if self._kept_by is None:
            return
        for index in self._indexes.values():
            if _settled(index) and len(index) < len(self._beginnings):
                self._kept_by.keep(self._beginnings[len(index)], index)
        self._indexes.clear()
        self._kept_by = None

    def forget(self, session_id: str) -> int:
        """Drop a session's index (its history was purged or edited); returns how many indexes went (0 or 1)."""
        found = session_id in self._indexes
        self._indexes.discard(session_id)
        return int(found)

    def index_of(self, session: Session) -> HistoryIndex:
        index = self._indexes.get(session.id)  # not ``or``: an index still empty (being built) is falsy
        return index if index is not None else self._indexes.put(session.id, HistoryIndex(session_id=session.id))

    async def sync(self, session: Session, *, dense: bool = False, vectors: bool | None = None) -> HistoryIndex:
        """The session's index holding its whole history (read and indexed since the last call only). The indexing
        goes on when the caller is cancelled (a module's timeout while a long history is read from the store or
        embedded): the next call finds it done, or waits for it, instead of starting again. More than
        ``READ_AT_ONCE`` parts to read or ``EMBED_AT_ONCE`` to embed get their vectors in the background (the index
        ranks by words meanwhile) unless ``dense`` (a job off the turn): then the call returns once all have them.
        ``vectors`` False holds the vectors back (``HistoryIndex.words_only``: a history too young for any window to
        recall from); True gives those held back theirs, as a fresh index of the history would; None: as before."""
        index = await asyncio.shield(self._sync(session, vectors))
        job = index.vectoring
        if dense and job is not None and self.outlive_calls:
            await asyncio.shield(job)
        return index

    async def _sync(self, session: Session, vectors: bool | None = None) -> HistoryIndex:
        source = session.message_source()
        version = getattr(source, "version", None)
        index = self.index_of(session)
        async with index.lock:
            words_only = index.words_only if vectors is None else not vectors
            if not self._current(index, session, version):
                # what the store holds for the session still holds: a history read afresh is not read back
                # a stored history's messages are the store's: held packed, read again when gathered (a list or a
                # client's conversation in memory is the caller's own, held anyway, and compared when it comes again)
                held: Sequence[Message] = PackedMessages() if version is not None else []
                fresh = HistoryIndex(version=version, session_id=session.id, stored=index.stored, messages=held)
                index = self._indexes.put(session.id, fresh)
            index.words_only = words_only
            resumed = self._left_unvectored(index)
            new = await read_new(index, source)
            if new:
                await self.add(index, new, in_turn=True)
            if resumed:
                await self._vectors_in_turn(index)
            if self.embedder is not None and index.vectored < len(index) and not index.words_only:
                self._catch_up_later(session.id, index)
        self._indexes.touch(session.id)
        return index

    def _left_unvectored(self, index: HistoryIndex) -> bool:
        """Whether ``index`` has messages without vectors that no job has been giving theirs, and wants them: a
        one-call index an earlier call kept before its vectors were all in (``call_done``), met by its next call
        before that call's own vectors job, or an index whose vectors were held back (``words_only``) until now."""
        unvectored = self.embedder is not None and index.vectored < len(index) and not index.words_only
        return unvectored and not index.vectors_due

    async def _vectors_in_turn(self, index: HistoryIndex) -> None:
        """Give ``index``'s messages without vectors theirs now when few are left to embed, as ``add`` gives a fresh
        index's (``in_turn``): a kept index ranks as a fresh one of its messages would."""
        first = index.vectored
        vectors = await self._vectors_of(index, index.messages[first:], bounded=True)
        if vectors is not None:
            await self._in_slices(index, vectors, functools.partial(_attach_from, index, first))

    def _catch_up_later(self, session_id: str, index: HistoryIndex) -> None:
        """Start the job giving ``index``'s messages their vectors, unless it runs (a failed one is started again;
        not so for an index that serves one call: its job, once over, is not started again)."""
        if index.vectoring is not None and not index.vectoring.done():
            return
        if not self.outlive_calls and index.vectors_due:  # an index serving one call has had its one job
            return
        job = self._background.start(self._catch_up(session_id, index))
        assert job is not None  # no limit: a job others wait for always starts
        index.vectoring = job
        index.vectors_due = time.monotonic() + self.vectors_wait_s
        if not self.outlive_calls:  # nobody waits for it after that: a stateless call's vectors die with it
            asyncio.get_running_loop().call_later(self.vectors_wait_s, job.cancel)
            # A cancelled job's traceback holds the index: let go of the job, so that is no reference cycle
            # (which would keep the whole conversation until a full collection walks it).
            job.add_done_callback(lambda _: setattr(index, "vectoring", None))

    async def _catch_up(self, session_id: str, index: HistoryIndex) -> None:
        """Give the messages without vectors theirs (and those added meanwhile), while ``index`` is the session's."""
        try:
            while index.vectored < len(index) and self._indexes.get(session_id) is index:
                # all at once: the store reads a session's large sets whole; embedded parts are kept by text, so
                # a job that fails halfway is not embedding them again when the next sync starts it again
                first = index.vectored
                messages = index.messages[first:]
                vectors = await self._vectors_of(index, messages)
                assert vectors is not None
                await self._in_slices(index, vectors, functools.partial(_attach_from, index, first))
        except Exception as exc:  # the next sync starts again from what was done
            log.warning("history vectors of session %s: %s; recall ranks by words until they are in", session_id, exc)

    def _current(self, index: HistoryIndex, session: Session, version: Any) -> bool:
        """Whether what ``index`` holds is still the start of the session's history."""
        if index.version != version:
            return False
        if version is not None:  # a versioned history only grows while its version holds (a continuation sees less)
            return True
        source = session.history
        held = session.messages if source is None else source.messages if isinstance(source, InMemoryMessages) else None
        if held is None:  # a source that can only be paged, without a version: trusted to grow only
            return source is not None and len(index) <= source.total
        # An in-memory list (a client's conversation: another one may come under the same session id, a stateless
        # call's ""): compare what was indexed, once per list (in C; the same objects at once).
        if index.checked is held and len(held) == index.checked_length:
            return True
        if len(held) < len(index) or _listed(held[: len(index)]) != index.messages:
            return False
        index.checked, index.checked_length = held, len(held)
        return True

    async def add(self, index: HistoryIndex, messages: Sequence[Message], *, in_turn: bool = False) -> None:
        """Index ``messages`` (the history's next ones), embedding them when there is an embedder. A message never
        shown (invalid, or a system message) is not embedded: recall never returns it. ``in_turn``: by words only
        when earlier messages wait for their vectors, or these have too many to read or embed now (the background
        job gives them theirs)."""
        vectors = None
        if self.embedder is not None and index.vectored == len(index) and not index.words_only:
            vectors = await self._vectors_of(index, messages, bounded=in_turn)
        await self._in_slices(
            index,
            messages,
            lambda start, some: index.add(some, vectors[start : start + len(some)] if vectors else None),
        )

    async def _in_slices(
        self, index: HistoryIndex, items: Sequence[T], work: Callable[[int, Sequence[T]], None]
    ) -> None:
        """``work(start, items[start:...])`` over all ``items``, changing ``index``: at once through the runner (a
        worker thread, holding the index's guard), else ``INDEX_SLICE`` items at a time with a yield to the event loop
        between (a long history takes seconds to index)."""
        if self.runner is not None:
            await self._step(index, len(items), lambda: work(0, items))
            return
        for start in range(0, len(items), INDEX_SLICE):
            if start:
                await asyncio.sleep(0)
            work(start, items[start : start + INDEX_SLICE])

    async def _step(self, index: HistoryIndex, size: int, work: Callable[[], R]) -> R:
        """``work()`` over ``index`` (``size`` items of work), holding its guard: through the runner when large."""
        return await guarded(index.guard, self.runner, size, work)

    async def _over(self, items: Sequence[T], work: Callable[[Sequence[T]], list[R]]) -> list[R]:
        """``work(items)`` (pure: it reads nothing else that changes), through the runner when long, else in slices."""
        if self.runner is not None:
            return await run_sized(self.runner, len(items), lambda: work(items))
        return await _sliced(items, work)

    async def _vectors_of(
        self, index: HistoryIndex, messages: Sequence[Message], *, bounded: bool = False
    ) -> list[list[np.ndarray]] | None:
        """Each message's part vectors (read from memory or the store, else embedded; new ones stored). None when
        ``bounded`` and more than ``READ_AT_ONCE`` would be read or ``EMBED_AT_ONCE`` embedded."""
        assert self.embedder is not None
        parts = await self._parts(index, messages)
        texts = await run_sized(self.runner, len(parts), lambda: list(dict.fromkeys(p for per in parts for p in per)))
        known = dict(
            await self._over(texts, lambda some: [(t, v) for t in some if (v := self._vectors.get(t)) is not None])
        )
        if bounded and len(texts) - len(known) > READ_AT_ONCE:
            index.parts_waiting = (list(messages), parts)
            return None
        keys = dict(await self._over(texts, _keyed)) if self.stored is not None else {}
        found, reachable = await self._from_store(index, keys, known)
        known.update(found)
        missing = [p for p in texts if p not in known]
        if bounded and len(missing) > EMBED_AT_ONCE:
            for text, held in found.items():  # the background job finds them here, not read again
                self._vectors.put(text, held)
            index.parts_waiting = (list(messages), parts)
            return None
        for start in range(0, len(missing), EMBED_BATCH):
            batch = missing[start : start + EMBED_BATCH]
            known.update(await self._embedded(batch))
        if reachable:  # a store that failed to read is not written to (it would fail again, message by message)
            await self._to_store(index, keys, known)
        self._taken(texts)
        return await self._over(parts, lambda some: [[known[p] for p in per] for per in some])

    async def _parts(self, index: HistoryIndex, messages: Sequence[Message]) -> list[list[str]]:
        """Each of ``messages``' parts (``parts_of``; none for a message never shown), ``messages`` being the index's
        from ``vectored`` on: those of a sync that left their vectors to the job that asks now are not found again
        (a conversation met cold has its 400 messages' parts found once, not twice)."""
        waiting, index.parts_waiting = index.parts_waiting, None
        done: list[list[str]] = []
        if waiting is not None and len(waiting[0]) <= len(messages) and waiting[0] == list(messages[: len(waiting[0])]):
            done = waiting[1]
        rest = await self._over(
            messages[len(done) :], lambda some: [parts_of(embedded_text(m)) if _embedded(m) else [] for m in some]
        )
        return [*done, *rest] if done else rest

    def _taken(self, texts: Sequence[str]) -> None:
        """The vectors of ``texts`` are a session's index's now (about to be attached), or a query's that was ranked
        for: with a store that holds the session's, they are kept by text among the most recently taken only (a
        long native session kept each twice, ~4 KB a turn until ``VECTORS_BY_TEXT_BYTES``). Without a store (a
        library's recall), a history edited or indexed again finds them here; a stateless call's index is dropped
        after its call, and its client's next call finds its conversation's vectors here."""
        if self.outlive_calls and self.stored is not None:
            self._vectors.take(texts)

    async def _embedded(self, texts: list[str]) -> dict[str, np.ndarray]:
        """``texts`` embedded and kept by text: those another call is embedding are awaited from it. Shielded, so a
        caller's cancelling loses no batch: a stateless call's vectors job is cancelled after ``vectors_wait_s``,
        and the calls that sent the same conversation after it each embedded the same first batch again (64 texts,
        1-4 s of a worker thread), lost with each job: ~0.6-1.5 s of CPU a call on a 240-message agent history, for
        as long as the client kept sending it (measured). Those kept meanwhile are looked up again here, with nothing
        awaited before the rest are claimed: a job that ended after the caller looked (it had awaited the store, or
        an earlier batch) has taken them out of ``_embedding``."""
        found = {t: v for t in texts if (v := self._vectors.get(t)) is not None}
        jobs = {id(job): job for t in texts if t not in found and (job := self._embedding.get(t)) is not None}
        mine = [t for t in texts if t not in found and t not in self._embedding]
        if mine:
            job = asyncio.ensure_future(self._embed_now(mine))
            job.add_done_callback(retrieved)
            self._embedding.update(dict.fromkeys(mine, job))
            jobs[id(job)] = job
        for job in jobs.values():
            found.update(await asyncio.shield(job))
        return {t: found[t] for t in texts}

    async def _embed_now(self, texts: list[str]) -> dict[str, np.ndarray]:
        assert self.embedder is not None
        try:
            vectors = await self.embedder.embed(texts)
            return {
                t: self._vectors.put(t, np.asarray(v, dtype=np.float32)) for t, v in zip(texts, vectors, strict=True)
            }
        finally:
            for text in texts:
                self._embedding.pop(text, None)

    def embed_ahead(self, session: Session, query: str) -> None:
        """Start embedding ``query`` now, beside what the caller does first (``sync`` embedding the history's new
        messages, on the other core): ``lead`` and ``recall`` then find its vector ready or under way (kept by text,
        the same vector) instead of embedding it after everything else. For a caller that knows recall will rank for
        ``query`` (a history the window cannot hold whole): otherwise it is an embedding nobody reads."""
        if self.embedder is not None:
            self._background.start(self._query_ahead(session.id, query))

    def holds_back_vectors(self, session: Session) -> bool:
        """Whether the session's index is held to words (``HistoryIndex.words_only``): what joins it needs no vectors
        before its next sync turns them on."""
        index = self._indexes.get(session.id)
        return index is not None and index.words_only

    def embed_joining(self, messages: Sequence[Message]) -> None:
        """Start embedding the parts of ``messages``, which join the history at the session's next call (a tool loop's
        results the client sends back with its next step, the reply it is sent): that call's ``sync`` finds their
        vectors by text, ready or under way, instead of embedding them before its window. The same vectors either way
        (kept by text): the window does not change, only when its embedding is done."""
        if self.embedder is not None and messages:
            self._background.start(self._parts_ahead(messages))

    async def _query_ahead(self, session_id: str, query: str) -> None:
        index = self._indexes.get(session_id)
        if index is not None:  # recall embeds the query as its index focuses it (a speaker added since: another text)
            query = await self._step(index, 0, lambda: index.focus(query))
        if query not in self._queries:
            await self._embedded_ahead([query])

    async def _parts_ahead(self, messages: Sequence[Message]) -> None:
        await self._embedded_ahead([p for m in messages if _embedded(m) for p in parts_of(embedded_text(m))])

    async def _embedded_ahead(self, texts: list[str]) -> None:
        await self._embedded(list(dict.fromkeys(texts)))  # those held or under way are not embedded again

    async def _query_vector(self, index: HistoryIndex, query: str, n: int) -> np.ndarray | None:
        """The query's vector when ``index``'s first ``n`` messages have vectors (kept for the next asker: a turn's
        lead and recall). Kept by text with the parts' vectors: a question is usually one sentence, and the part its
        message becomes once recorded is the same text, so an embedder without a cache of its own (a library's; the
        service's keeps its recent vectors) embeds the turn's question once, not again when it is indexed."""
        if self.embedder is None or index.dense is None or index.vectored < n:
            return None
        vector = self._queries.get(query)
        if vector is None:  # held by text, under way, or embedded now (``_embedded``)
            vector = self._queries.put(query, (await self._embedded([query]))[query])
            self._taken([query])
        return vector

    async def _from_store(
        self, index: HistoryIndex, keys: Mapping[str, str], known: Mapping[str, np.ndarray]
    ) -> tuple[dict[str, np.ndarray], bool]:
        """The vectors the store holds for the texts (``keys``: text -> ``part_key``) whose vector is not ``known``
        here or that the index does not know to be stored, by text; and whether the store answered."""
        if self.stored is None or index.session_id is None:
            return {}, False
        asked = {k: t for t, k in keys.items() if t not in known or not index.is_stored(k)}
        if not asked:
            return {}, True
        if time.monotonic() < self._store_retry_at:
            return {}, False
        try:
            found = await self.stored.get(index.session_id, asked.keys())
        except Exception as exc:  # the store is down: embed instead (the turn goes on)
            self._failed("read", exc)
            return {}, False
        self._store_failed = False
        index.mark_stored(k for k in found if k in asked)
        return {asked[k]: np.asarray(v, dtype=np.float32) for k, v in found.items() if k in asked}, True

    async def _to_store(self, index: HistoryIndex, keys: Mapping[str, str], known: Mapping[str, np.ndarray]) -> None:
        """Hand the store the vectors of the texts (``keys``: text -> ``part_key``) it does not hold yet for the
        index's session."""
        if self.stored is None or index.session_id is None:
            return
        fresh = {k: known[t] for t, k in keys.items() if not index.is_stored(k)}
        if not fresh:
            return
        try:
            await self.stored.put(index.session_id, fresh)
        except Exception as exc:
            self._failed("write", exc)
            return
        index.mark_stored(fresh)
        self._store_failed = False

    def _failed(self, what: str, exc: Exception) -> None:
        if not self._store_failed:  # once per outage: every message indexed meanwhile would say the same
            log.warning(
                "history vectors: the %s failed (%s); embedding instead until it works again", what, describe_error(exc)
            )
        self._store_failed = True
        self._store_retry_at = time.monotonic() + STORE_RETRY_S

    async def _synced(self, session: Session) -> HistoryIndex:
        """The session's index, after waiting up to ``vectors_wait_s`` for a vectors job under way: the same answer
        whether the vectors were ready or came a moment ago. A question asked ranks by meaning: vectors held back
        (``words_only``) are given now, as a fresh index would have them."""
        index = await self.sync(session, vectors=True)
        job, left = index.vectoring, index.vectors_due - time.monotonic()
        if job is not None and not job.done() and left > 0:  # one wait per job, shared by the turn's calls
            # asyncio.wait, not wait_for: a stateless call's job is cancelled at the same moment the wait ends, and
            # whichever comes first the call goes on (wait_for raised the job's CancelledError when it won)
            await asyncio.wait([job], timeout=left)
        return index

    async def ask(self, session: Session, query: str) -> IndexQuestion:
        """``query`` asked of the session's index (``HistoryRecall.ask``): synced, waited for, and the query read once
        for the leads and rankings of one assembly (an old gateway call's first step asked three times for its lead
        and twice for its ranking, each syncing and reading the query again)."""
        index = await self._synced(session)
        # its speakers may be growing in a step
        about, focused = await self._step(index, 0, lambda: (index.asked_about(query), index.focus(query)))
        return IndexQuestion(self, session, index, focused, about, asks_when(query), thing_asked(query), query)

    async def recall(
        self,
        session: Session,
        query: str,
        *,
        before: int,
        enough_tokens: int,
        tail_tokens: int = 0,
        tail_room: Callable[[tuple[RecalledUnit, ...]], int] | None = None,
    ) -> RecallRanking:
        """``ask`` and its ranking at once (``HistoryQuestion.recall``)."""
        asked = await self.ask(session, query)
        return await asked.recall(
            before=before, enough_tokens=enough_tokens, tail_tokens=tail_tokens, tail_room=tail_room
        )

    async def lead(
        self, session: Session, query: str, *, split: int, continues_from: float | None = None
    ) -> RecallLead:
        """``ask`` and its lead at once (``HistoryQuestion.lead``)."""
        return await (await self.ask(session, query)).lead(split=split, continues_from=continues_from)


@dataclass(frozen=True, eq=False)
class IndexQuestion:
    """A query asked of a session's ``HistoryIndex`` (``SessionRecall.ask``): the ``HistoryQuestion`` provider."""

    recall_of: SessionRecall
    session: Session
    index: HistoryIndex
    query: str
    """Focused (``HistoryIndex.focus``): without the speakers' names."""
    about: frozenset[int]
    dates: bool
    thing: str | None
    asked: str
    """As asked: the plain hybrid reads its names too (``HistoryIndex.plain_ranking``)."""

    async def recall(
        self,
        *,
        before: int,
        enough_tokens: int,
        tail_tokens: int = 0,
        tail_room: Callable[[tuple[RecalledUnit, ...]], int] | None = None,
    ) -> RecallRanking:
        """Units of the session's messages before position ``before``, best first, until their messages hold about
        ``enough_tokens`` tokens (by their stored counts, else ~4 characters a token) or the ranking ends; those
        ranked next until about ``tail_tokens`` in all as its ``tail`` (with ``tail_room``, those that may fit the
        room it says the head leaves: ``HistoryQuestion.recall``)."""
        recall, index, session = self.recall_of, self.index, self.session
        query_vector = await recall._query_vector(index, self.query, min(before, len(index)))

        def ranked() -> RecallRanking:
            positions, scores, method, reason = index.rank(
                self.query,
                query_vector,
                before,
                evidence=recall.evidence,
                about=self.about,
                thing=self.thing,
                ample=is_ample(enough_tokens),
                asked=self.asked if enough_tokens >= PLAIN_ROOM else None,
                head_tokens=int(enough_tokens * PLAIN_HEAD_SHARE),
                small=enough_tokens < PLAIN_ROOM,
            )
            return collect_units(
                index,
                positions,
                scores,
                method,
                reason,
                session.phase,
                enough_tokens,
                tail_tokens,
                dates=self.dates,
                tail_room=tail_room,
            )

        ranking = await recall._step(index, min(before, len(index)), ranked)
        return dataclasses.replace(ranking, pending=len(index) - index.vectored) if recall.embedder else ranking

    async def lead(self, *, split: int, continues_from: float | None = None) -> RecallLead:
        """How the best message before ``split`` outranks the best from ``split`` on, by each signal (``lead_of``:
        only the continuity when it reaches ``continues_from``). Only the messages the session's source holds count: a
        replay or what-if sees the history as it was before its turn, while the session's index may already hold that
        turn (whose question would match itself)."""
        recall, index, query = self.recall_of, self.index, self.query
        end = min(len(index), self.session.message_source().total)
        query_vector = await recall._query_vector(index, query, end)
        continuity = await recall._step(index, RECENT_QUESTIONS, lambda: _continuity(index, query_vector, split, end))
        if _goes_on(continuity, continues_from):
            return RecallLead(None, None, continuity)
        return await recall._step(index, end, lambda: _outranking(index, query, query_vector, split, end, continuity))


def lead_of(
    index: HistoryIndex,
    query: str,
    query_vector: np.ndarray | None,
    split: int,
    end: int,
    continues_from: float | None = None,
) -> RecallLead:
    """How the best of ``index``'s first ``end`` messages before ``split`` outranks the best from ``split`` on. Only
    messages that say something count: one that only asks (every sentence a question) shows nothing a question
    needs, however alike their words. A user asking question after question about something said long ago has the
    earlier questions as the newest turns, and they must not hold recall back; nor does an older question, shorter
    than the newest answers alike to it, lead them.

    The query is compared with the newest few questions first (``continuity``): when that reaches ``continues_from``
    the conversation goes on and recall stays off whatever the older messages score, so they are not scored (the
    lead's ``dense`` and ``lexical`` are None). Scoring every message and part each turn was what grew a native
    session's turn with its length (docs/history/benchmarks-log.md, "Session 42 (turnflat)")."""
    continuity = _continuity(index, query_vector, split, end)
    if _goes_on(continuity, continues_from):
        return RecallLead(None, None, continuity)
    return _outranking(index, query, query_vector, split, end, continuity)


def _goes_on(continuity: float | None, continues_from: float | None) -> bool:
    return continues_from is not None and continuity is not None and continuity >= continues_from


def _outranking(
    index: HistoryIndex, query: str, query_vector: np.ndarray | None, split: int, end: int, continuity: float | None
) -> RecallLead:
    """``lead_of``'s figures over every message: how the best before ``split`` outranks the best from it on."""
    showing = index.shows()[:end]
    older_shows, newer_shows = showing[:split], showing[split:]
    lexical = index.lexical_scores(query)[:end]
    older = float(lexical[:split][older_shows].max(initial=0.0))
    newer = float(lexical[split:][newer_shows].max(initial=0.0))
    ratio = older / newer if newer > 0 else (float("inf") if older > 0 else 0.0)
    dense = None
    scores = index.dense_scores(query_vector, end) if query_vector is not None else None
    if scores is not None and 0 < split < end:
        dense = float(scores[:split][older_shows].max(initial=-1.0) - scores[split:][newer_shows].max(initial=-1.0))
    return RecallLead(dense, ratio, continuity)


def _continuity(index: HistoryIndex, query_vector: np.ndarray | None, split: int, end: int) -> float | None:
    """The query's best cosine with the newest ``RECENT_QUESTIONS`` user messages from ``split`` to ``end`` (0.0
    without one; None without vectors, or with nothing before ``split`` to lead)."""
    if query_vector is None or not 0 < split < end:
        return None
    newest_first = (p for p in range(end - 1, split - 1, -1) if index.role_at(p) == "user")
    asked = list(islice(newest_first, RECENT_QUESTIONS))
    scores = index.best_scores_at(query_vector, asked, end)
    if scores is None:
        return None
    return float(scores.max()) if asked else 0.0


def _listed(messages: Sequence[Message]) -> Sequence[Message]:
    """``messages`` as a list, or as the view of a ``ChatMessages`` they are (compared with its own views unmade)."""
    return messages if isinstance(messages, ChatMessages) else list(messages)


def _calls(word: str, speaker: str) -> bool:
    """Whether a question's capitalised ``word`` (lower case) names ``speaker`` (lower case)."""
    return speaker.startswith(word) and (word not in CALENDAR or speaker.split()[0] == word)


def _speaker(message: Message, text: str | None = None) -> str | None:
    """Who says ``message`` in a chat between people: its line's speaker tag ("Maya: ") opening ``text`` (its
    content unless given), else its ``name`` (a user's or an assistant's); None: no one known."""
    text = message.content if text is None else text
    if ": " in text and (tag := _SPEAKER.match(text)) is not None:
        return tag.group(2)
    return message.name if message.name and message.role in ("user", "assistant") else None


def _dated_speaker(message: Message, text: str) -> str | None:
    """Who says ``message``, whose ``text`` opens with a date: the tag after the date ("2023-05-08 13:56: Maya: hi"),
    else the one before it on the line the date goes on ("Maya: May 8, 2023: hi"; "Date: 8 May 2023" ending its line
    is a heading's label), else its ``name``."""
    rest = after_date(text)
    if ": " in rest and (tag := _SPEAKER.match(rest)) is not None:
        return tag.group(2)
    header = text[: len(text) - len(rest)].rstrip(" \t")
    if rest and not header.endswith("\n") and (tag := _SPEAKER.match(header)) is not None:
        return tag.group(2)
    return _speaker(message, rest)


def _asks_last(text: str) -> bool:
    """Whether ``text`` ends with a question mark (trailing space aside): what every text that only asks does."""
    return text.rstrip().endswith("?")


def _only_asks(text: str) -> bool:
    """Whether every sentence of ``text`` is a question."""
    sentences = [s for s in _SENTENCE_END.split(text) if s.strip()]
    return bool(sentences) and all(s.rstrip().endswith("?") for s in sentences)


def _settled(index: HistoryIndex) -> bool:
    """Whether nothing is changing ``index`` (no sync holds it, no job is giving it vectors): a call may go on
    from it. (A sync its call gave up on, a module's timeout, goes on shielded.)"""
    return not index.lock.locked() and (index.vectoring is None or index.vectoring.done())


def collect_units(
    index: HistoryIndex,
    positions: np.ndarray,
    scores: np.ndarray,
    method: str,
    reason: str | None,
    phase: str | None,
    enough_tokens: int,
    tail_tokens: int = 0,
    *,
    dates: bool = False,
    tail_room: Callable[[tuple[RecalledUnit, ...]], int] | None = None,
) -> RecallRanking:
    """Ranked messages as ranked whole units (a unit once, at its best message's rank), until ``enough_tokens``, and
    those ranked next until ``tail_tokens`` as the tail: with ``tail_room``, only those that may fit the room it
    says the head leaves (``HistoryRecall.recall``). Gathered on from the last call's units when it collected the
    same ranking (``Collected``)."""
    collected = index.collected
    if collected is None or not collected.collects(positions, scores, phase, dates, len(index)):
        firsts, at = index.unit_firsts(positions)
        index.ranked_anew()
        collected = index.collected = Collected(positions, scores, phase, dates, len(index), firsts[at], scores[at])
    units = collected.until(index, enough_tokens)
    chars = math.inf if tail_room is None else tail_room(units) * LIKELY_CHARS_PER_TOKEN
    deeper = tail_tokens > enough_tokens and chars > 0
    tail = collected.after(index, len(units), tail_tokens, chars) if deeper else ()
    return RecallRanking(units, method, reason if not units else None, searched=len(positions), tail=tail)


@dataclass
class Collected:
    """A ranking's units as far as a call gathered them: a turn's windows ask for the same ranking (``rank`` keeps
    it) with more room each (the surplus pass, the fill), and went through its units from the top each time (~200
    units a call at 100 gateway turns, more as a session offers more small units)."""

    positions: np.ndarray
    scores: np.ndarray
    phase: str | None
    dates: bool
    length: int
    """The messages the index held (a unit still open at the end may get more results)."""
    firsts: np.ndarray
    """Each ranked unit's first position, best first (an array: a long history ranks thousands, read a few hundred
    deep; as Python numbers they were ~100 bytes each, held with the index)."""
    unit_scores: np.ndarray
    """Their scores."""
    units: list[RecalledUnit] = field(default_factory=list)
    gathered: list[int] = field(default_factory=list)
    """Per unit gathered, the rough tokens of those up to it."""
    next: int = 0
    """Where in ``firsts`` the gathering goes on."""

    def collects(self, positions: np.ndarray, scores: np.ndarray, phase: str | None, dates: bool, length: int) -> bool:
        """Whether this is the ranking asked for (the same arrays: ``rank``'s kept result, never changed), over the
        same messages."""
        same = self.positions is positions and self.scores is scores and self.length == length
        return same and self.phase == phase and self.dates == dates

    def until(self, index: HistoryIndex, enough_tokens: int) -> tuple[RecalledUnit, ...]:
        """The best units up to the first whose rough tokens with those before it reach ``enough_tokens`` (all of
        them when none does)."""
        units, gathered, firsts, phase = self.units, self.gathered, self.firsts, self.phase
        total, at = (gathered[-1] if gathered else 0), self.next
        while at < len(firsts) and (not gathered or total < enough_tokens):  # a tight loop: a tail is ~100 units
            first = firsts.item(at)
            at += 1
            unit, rough = index.recallable(first, phase)
            if unit is None:
                continue
            dated = _dated_by(index, first, phase) if self.dates else None
            units.append(RecalledUnit(first, unit, self.unit_scores.item(at - 1), dated))
            total += rough
            gathered.append(total)
        self.next = at
        return tuple(units[: bisect.bisect_left(gathered, enough_tokens) + 1])

    def after(self, index: HistoryIndex, head: int, tokens: int, chars: float) -> tuple[RecalledUnit, ...]:
        """The units ranked after the first ``head`` until ``tokens`` in all (as ``until`` counts them), those whose
        messages hold at most ``chars`` characters. A closed unit whose first message alone holds more is passed over
        unmade, by what the index knows of it (its rough tokens, its first message's characters): the room the head
        leaves is a few dozen tokens, and making each unit of the tail (~1.5 us) was most of its cost. Read only:
        what a later call asks of the ranking is gathered by ``until``."""
        units, gathered = self.units, self.gathered
        end = bisect.bisect_left(gathered, tokens) + 1
        tail = [unit for unit in units[head:end] if _chars(unit.messages) <= chars]
        if end <= len(units) or not gathered:
            return tuple(tail)
        firsts, scores, phase, at, total = self.firsts, self.unit_scores, self.phase, self.next, gathered[-1]
        closed, lengths, ranked = index.closed(phase), index.chars, len(self.firsts)
        while at < ranked and total < tokens:  # a tight loop: a tail is ~100 units
            first = firsts.item(at)
            at += 1
            known = closed[first]
            if known > 0:  # closed and recallable
                total += known - 1
                if lengths[first] > chars:
                    continue
                unit: tuple[Message, ...] | None = index.made(first, phase)
            else:
                unit, rough = index.recallable(first, phase)
                total += rough
                if unit is None or lengths[first] > chars:
                    continue
            if unit is None or (len(unit) > 1 and _chars(unit) > chars):
                continue
            dated = _dated_by(index, first, phase) if self.dates else None
            tail.append(RecalledUnit(first, unit, scores.item(at - 1), dated))
        return tuple(tail)


def _chars(messages: Sequence[Message]) -> int:
    """The characters of ``messages``' contents."""
    return sum(len(m.content) for m in messages)


_WHEN = re.compile(
    r"\b(?:when (?:did|does|do|was|were|is|are|will|would|has|have|had)|what (?:time|day|date|month|year)"
    r"|which (?:day|date|month|year)|how long|ago|before|after|since|until|first|last|earlier|later|recently)\b",
    re.IGNORECASE,
)
"""A time cue: "when" asking ("When did...", not "what to leave out when I cook"), a date asked, or an order."""


_HYPOTHETICAL = re.compile(r"(?:^|[,:;.!?])\W*would\b|\b(?:likely|probably|might)\b", re.IGNORECASE)
"""A hypothetical: "Would Priya likely enjoy an evening at a West End musical?", "What might Dan's builder charge?",
and the same after an opener ("Sorry, quick one: would Dara enjoy a boat trip off Kerry?": read as a question about
what happened, the place it names, never said, made recall abstain; bench/abstention_bench.py's rewordings)."""


_FIRST_PERSON = re.compile(r"\b(?:I|me|my|mine|myself)\b", re.IGNORECASE)
"""A question in the first person: asked of an assistant, it is about the user (``HistoryIndex.asked_of_user``)."""


_ASKS_WHAT_YOU_SAID = re.compile(
    r"\b(?:did|have|had) you\b|\byou (?:\w+ed|said|told|gave|wrote|made|chose|sent|came up with)\b", re.IGNORECASE
)
"""A question about what the assistant said or did ("Which book did you suggest?", "the hotel you recommended"):
asked of an assistant no name gives, it is about the assistant's own messages (``HistoryIndex.asked_about``)."""


def asks_hypothetically(query: str) -> bool:
    """Whether ``query`` asks what someone would likely do, like or be (``_HYPOTHETICAL``): its answer is inferred
    from what the chat says of them, and what it names ("West End", "Victorian") need never have been mentioned, so an
    unknown name is no sign that nothing earlier answers it (bench/fresh2_chats.py's ``inference`` questions)."""
    return bool(_HYPOTHETICAL.search(query))


_ADVICE = re.compile(r"\bshould\b(?=[^.!?]*\b(?:I|me|we|us)\b)", re.IGNORECASE)
"""Advice for the speaker: "Should I do the Carrauntoohil ridge scramble?", "Should Joost book me a week in
Lapland?"."""


def asks_advice(query: str) -> bool:
    """Whether ``query`` asks what the speaker should do (``_ADVICE``): like a hypothetical, it is answered from what
    the chat says of their likes, and the thing it names need never have been mentioned (bench/fresh8_chats.py's
    preference questions)."""
    return bool(_ADVICE.search(query))


def asks_when(query: str) -> bool:
    """Whether ``query`` asks when something happened, or in what order (a time cue): its recalled messages then come
    with their sessions' dated lines (``RecalledUnit.dated_by``)."""
    return bool(_WHEN.search(query))


def _dated_by(index: HistoryIndex, first: int, phase: str | None) -> RecalledUnit | None:
    """The short dated line opening the session of the unit at ``first`` (``HistoryIndex.dated``), as a unit."""
    at = bisect.bisect_right(index.dated, first) - 1
    if at < 0 or index.dated[at] == first or not index.short()[index.dated[at]]:
        return None
    unit, _ = index.recallable(index.dated[at], phase)
    return None if unit is None else RecalledUnit(index.dated[at], unit, 0.0)


def rough_tokens(message: Message) -> int:
    """A message's tokens by its stored counts, else ~4 characters a token."""
    if message.tokens:
        return max(message.tokens.values())
    return len(message.content) // 4 + 4
