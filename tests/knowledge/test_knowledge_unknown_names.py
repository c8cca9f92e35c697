"""knowledge_context sends nothing for a question naming what its collections never mention, at any similarity, and
still answers questions whose names the collections hold in another form (hand-built corpora; the oracle is the
corpus text as written here, read with ``str.split``, not the BM25 index)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from components.context_window.base import AssemblyContext, Passage, Profile, Session
from components.context_window.handler import ContextWindowHandler
from components.context_window.module_registry import ModuleRegistry
from modules.knowledge_context.unknown_names import asked_names, spellings, unknown_names
from tda.builtins import DEFAULT_TYPES
from tda.knowledge.ingest import ingest_paths
from tda.knowledge.retrieval import ChromaKnowledgeRetriever
from tda.knowledge.store import KnowledgeStore

from .test_knowledge_relevance import RankedKnowledge, context, module, passage

MANUAL = [
    "The fstab file lists the filesystems mounted at boot; the nofail option keeps boot quiet when a disk is absent.",
    "The server listens on TCP port 8080 by default; set Port in the configuration file to change it.",
    "Israel and Moab were neighbours; Ruth of Moab went with Naomi to Bethlehem.",
    "Copying under the Free Documentation License requires the invariant sections to be kept.",
]


class VocabularyKnowledge(RankedKnowledge):
    """A ranked retriever that also says which words its corpus holds: the words of ``corpus`` as written, lower-cased
    and stripped of punctuation (no stemming: every word a test asks about is written in full here)."""

    def __init__(self, ranking: Sequence[Passage], corpus: Sequence[str]) -> None:
        super().__init__(ranking)
        self.corpus = list(corpus)
        self.words = {w.strip(".,;:?!'").lower() for text in corpus for w in text.split()}
        self.held_asked: list[list[str]] = []

    async def held_words(self, words: Sequence[str], *, collections: Sequence[str] = ()) -> set[str]:
        self.held_asked.append(list(words))
        return {w for w in words if w.lower() in self.words or w in self.spelt}

    @property
    def spelt(self) -> set[str]:
        """Abbreviations the corpus writes out: the initials of every run of 2-4 capitalised words."""
        runs: set[str] = set()
        for text in self.corpus:
            words = text.split()
            for i in range(len(words)):
                for n in (2, 3, 4):
                    run = words[i : i + n]
                    if len(run) == n and all(w[0].isupper() for w in run):
                        runs.add("".join(w[0] for w in run))
        return runs


def near(text: str) -> RankedKnowledge:
    """The manual's passages, the first near the question in meaning (cosine 0.5: above the floor of 0.25)."""
    hits = [passage(i, t, 0.9 - i * 0.1, dense=0.5 if i == 0 else 0.3) for i, t in enumerate([text, *MANUAL])]
    return VocabularyKnowledge(hits, MANUAL)


async def test_a_question_naming_a_product_the_corpus_never_mentions_gets_nothing_and_the_snapshot_says_why() -> None:
    kb = near(MANUAL[1])
    out = await module().contribute(1000, context(kb, "What is the default TCP port the PostgreSQL server listens on?"))
    assert out.is_empty and out.metadata["abstained"] is True
    assert out.metadata["reason"] == "nothing relevant found: the knowledge base never mentions PostgreSQL"


async def test_a_name_the_corpus_holds_is_answered() -> None:
    out = await module().contribute(1000, context(near(MANUAL[2]), "Where did Ruth go with Naomi?"))
    assert "Bethlehem" in out.text()


async def test_a_people_of_a_place_is_mentioned_by_the_place() -> None:
    """ "the Israelites" of a text that says "Israel"; "the Moabite widow" qualifies a noun: a kind, never read."""
    out = await module().contribute(1000, context(near(MANUAL[2]), "Where did Naomi go with the Israelites?"))
    assert "Bethlehem" in out.text()
    widow = await module().contribute(1000, context(near(MANUAL[2]), "Where did the Moabite widow go?"))
    assert "Bethlehem" in widow.text()


async def test_an_abbreviation_spelt_out_in_a_passage_is_mentioned() -> None:
    out = await module().contribute(1000, context(near(MANUAL[3]), "What must be kept when copying under the FDL?"))
    assert "invariant sections" in out.text()
    other = await module().contribute(1000, context(near(MANUAL[3]), "What does the GPL require of copies?"))
    assert other.is_empty and other.metadata["reason"].endswith("never mentions GPL")


async def test_a_question_without_names_asks_nothing_of_the_vocabulary() -> None:
    kb = near(MANUAL[0])
    out = await module().contribute(1000, context(kb, "which mount option keeps boot quiet when a disk is absent?"))
    assert "nofail" in out.text() and kb.held_asked == []  # type: ignore[attr-defined]


async def test_a_retriever_without_a_vocabulary_sends_what_it_found() -> None:
    hits = [passage(0, MANUAL[1], 0.9, dense=0.5)]
    out = await module().contribute(1000, context(RankedKnowledge(hits), "Which port does PostgreSQL use?"))
    assert "port 8080" in out.text()


def test_the_names_a_question_asks_about() -> None:
    assert asked_names("Which river did Julius Caesar cross in 49 BC?") == ["Julius", "BC"]  # Caesar qualifies "cross"
    assert asked_names("Which Norse deity lent her name to a transition metal?") == []
    assert asked_names("How do I set a static IP address with NetworkManager?") == ["IP", "NetworkManager"]
    assert asked_names("Who Wrote The Odyssey?") == []  # title case: the capitals say nothing
    assert asked_names("What is the capital of East Asia?") == []  # a region


def test_spellings_and_unknown_names() -> None:
    assert spellings("Israelites") == ["Israelites", "israel", "israelite"]
    assert spellings("Moab") == ["Moab"]
    assert spellings("OOM") == ["OOM"]
    assert unknown_names(["Israelites", "Odyssey"], {"israel"}) == ["Odyssey"]


async def test_a_real_store_says_which_words_it_holds_and_the_snapshot_abstains(
    store: KnowledgeStore, tmp_path: Path, builtin_registry: ModuleRegistry
) -> None:
    (tmp_path / "server.md").write_text("# Server\n\n" + MANUAL[1] + "\n")
    (tmp_path / "licence.md").write_text("# Licence\n\n" + MANUAL[3] + "\n")
    ingest_paths(store, [tmp_path / "server.md", tmp_path / "licence.md"], "manual")
    retriever = ChromaKnowledgeRetriever(store)
    asked = ["Port", "listening", "PostgreSQL", "FDL", "GPL", "BY"]
    assert await retriever.held_words(asked, collections=["manual"]) == {
        "Port",
        "listening",  # stemmed as the index reads it: "listens"
        "FDL",  # written out: "Free Documentation License"
        "BY",  # a stopword ("ORDER BY"): the index reads nothing of it, so nothing is missing
    }
    ctx = AssemblyContext(
        query="Which port does the PostgreSQL server listen on by default?",
        profile=Profile("p", "rag_focused", knowledge_collections=("manual",)),
        session=Session("s"),
        model="gpt-4o",
        model_limit=6000,
        knowledge=retriever,
    )
    result = await ContextWindowHandler(builtin_registry).assemble(ctx, DEFAULT_TYPES["balanced"])
    usage = result.snapshot.module("knowledge_context")
    assert usage.used == 0 and usage.metadata["abstained"] is True
    assert usage.metadata["reason"] == "nothing relevant found: the knowledge base never mentions PostgreSQL"
    assert "port 8080" not in "\n".join(str(m.get("content", "")) for m in result.messages)
