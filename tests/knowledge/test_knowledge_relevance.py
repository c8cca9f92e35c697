"""knowledge_context under budget: retrieval depth grows with the budget, windows at small budgets, a relevance
floor that sends nothing (and says why in the snapshot), and chunks that keep a term with its prose."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from components.context_window.base import AssemblyContext, Directives, Passage, Profile, Session
from components.context_window.handler import ContextWindowHandler
from components.context_window.module_registry import ModuleRegistry, load_folder
from components.context_window.token_estimator import estimator_for
from tda.builtins import DEFAULT_TYPES
from tda.knowledge.chunking import chunk_document
from tda.knowledge.ingest import ingest_paths
from tda.knowledge.readers import Block, ExtractedDocument
from tda.knowledge.retrieval import ChromaKnowledgeRetriever
from tda.knowledge.store import KnowledgeStore

TOKENS = estimator_for("gpt-4o")
FOLDER = Path(__file__).resolve().parents[2] / "modules" / "knowledge_context"


class RankedKnowledge:
    """A retriever with a fixed ranking that honours ``k`` as the store does (the first k, best first)."""

    def __init__(self, ranking: Sequence[Passage]) -> None:
        self.ranking = list(ranking)
        self.asked: list[int] = []

    async def retrieve(
        self, query: str, *, collections: Sequence[str] = (), k: int = 8, min_score: float = 0.0
    ) -> list[Passage]:
        self.asked.append(k)
        return self.ranking[:k]

    async def neighbours(self, passage: Passage, *, before: int, after: int) -> list[Passage]:
        return []


def passage(n: int, text: str, score: float, dense: float = 0.6, lexical: float = 0.0) -> Passage:
    metadata = {"dense_score": dense, "lexical_score": lexical}
    return Passage(text, score, f"doc{n}", title=f"Doc {n}", collection="kb", metadata=metadata)


def filler(n: int) -> str:
    """A ~120-token passage about something else."""
    return " ".join(f"Paragraph {n} talks about topic {n} and detail {j} of it." for j in range(10))


def ranked_with_answer_at(position: int) -> RankedKnowledge:
    answer = "Archived invoices are purged after seven years by the retention job."
    hits = [passage(i, filler(i), 0.9 - i * 0.02) for i in range(20)]
    hits[position - 1] = passage(position, f"{filler(position)} {answer}", 0.9 - (position - 1) * 0.02)
    return RankedKnowledge(hits)


def context(knowledge: object, query: str = "how long are old invoices kept?") -> AssemblyContext:
    ctx = AssemblyContext(
        query=query,
        profile=Profile(id="p", type="rag_focused", knowledge_collections=("kb",)),
        session=Session(id="s"),
        model="gpt-4o",
        knowledge=knowledge,  # type: ignore[arg-type]
    )
    return ctx.for_module(Directives(config={}), TOKENS)


def module():  # type: ignore[no-untyped-def]
    definition = load_folder(FOLDER, "builtin")
    return definition.cls(definition.manifest)


async def test_an_answer_ranked_ninth_reaches_the_window_at_a_large_budget() -> None:
    kb = ranked_with_answer_at(9)
    out = await module().contribute(4000, context(kb))
    assert "purged after seven years by the retention job" in out.text()
    assert kb.asked == [4000 // 60]  # one hit per 60 tokens of budget, not a fixed 6
    assert TOKENS.count(out.text()) <= 4000


async def test_depth_follows_the_budget_of_each_pass_of_one_assembly() -> None:
    kb = ranked_with_answer_at(9)
    ctx = context(kb)
    small = await module().contribute(300, ctx)
    assert "retention job" not in small.text() and kb.asked == [6]
    large = await module().contribute(4000, ctx)  # the surplus pass of the same assembly retrieves deeper
    assert "retention job" in large.text() and kb.asked == [6, 66]


async def test_when_no_passage_is_relevant_it_sends_nothing_and_says_why() -> None:
    weak = [passage(i, filler(i), 0.5, dense=0.12) for i in range(6)]
    out = await module().contribute(2000, context(RankedKnowledge(weak), query="who won the 2018 football final?"))
    assert out.is_empty and out.metadata["abstained"] is True
    reason = out.metadata["reason"]
    assert reason.startswith("nothing relevant found: no passage is relevant enough (best similarity 0.12 < 0.25")


async def test_a_large_budget_is_not_filled_with_hits_far_below_the_best() -> None:
    """Beyond the first k, a hit is packed only when it is near the best in meaning (``tail_ratio`` of its similarity)
    or by words (of its BM25 score): the room is left unused rather than filled with what the depth brought."""
    near = [passage(i, filler(i), 0.9 - i * 0.01, dense=0.6 - i * 0.005) for i in range(10)]  # 0.6 .. 0.555
    far = [passage(i, filler(i), 0.7 - i * 0.01, dense=0.3) for i in range(10, 40)]
    near[0] = passage(0, filler(0), 0.9, dense=0.6, lexical=1.0)  # the best by words too
    worded = passage(40, f"{filler(40)} Old invoices are kept seven years.", 0.3, dense=0.2, lexical=0.85)
    out = await module().contribute(8000, context(RankedKnowledge([*near, *far, worded])))
    sent = {s["document_id"] for s in out.metadata["sources"]}
    assert sent == {f"doc{i}" for i in range(10)} | {"doc40"}  # the near ones and the one holding the words
    assert TOKENS.count(out.text()) < 8000 // 2
    everything = await module().contribute(
        8000, context(RankedKnowledge([*near, *far, worded])).for_module(Directives(config={"tail_ratio": 0}), TOKENS)
    )
    assert len(everything.metadata["sources"]) == 41  # the floor off: every hit that fits


async def test_a_low_similarity_hit_that_shares_the_questions_words_is_still_sent() -> None:
    hits = [passage(0, "The retention job purges archived invoices after seven years.", 0.5, dense=0.15)]
    out = await module().contribute(2000, context(RankedKnowledge(hits), query="when does the retention job purge?"))
    assert "purges archived invoices" in out.text()


async def test_a_word_shared_by_chance_does_not_send_a_question_naming_what_no_passage_mentions() -> None:
    """The demo's "What is the capital of Mongolia?" got 3,286 tokens of the docs: one of its two content words
    ("capital") is in a page about capitalised words, half its words, so the lexical signal let it through."""
    style = passage(0, "Headings are capitalised, and so is the first word of every list item.", 0.5, dense=0.18)
    off_topic = await module().contribute(
        2000, context(RankedKnowledge([style]), query="What is the capital of Mongolia?")
    )
    assert off_topic.is_empty and off_topic.metadata["abstained"] is True
    assert off_topic.metadata["reason"].startswith("nothing relevant found: no passage mentions Mongolia")
    atlas = passage(1, "Ulaanbaatar is the capital of Mongolia.", 0.4, dense=0.2)  # named: the words count again
    answered = await module().contribute(
        2000, context(RankedKnowledge([style, atlas]), query="What is the capital of Mongolia?")
    )
    assert "Ulaanbaatar" in answered.text()


async def test_abstention_shows_in_the_snapshot_of_an_assembly(
    store: KnowledgeStore, tmp_path: Path, builtin_registry: ModuleRegistry
) -> None:
    (tmp_path / "faq.md").write_text("# Billing\n\nInvoices are emailed on the first working day of each month.\n")
    ingest_paths(store, [tmp_path / "faq.md"], "support")
    ctx = AssemblyContext(
        query="Which striker scored twice in the 1966 final?",
        profile=Profile("p", "rag_focused", knowledge_collections=("support",)),
        session=Session("s"),
        model="gpt-4o",
        model_limit=6000,
        knowledge=ChromaKnowledgeRetriever(store),
    )
    result = await ContextWindowHandler(builtin_registry).assemble(ctx, DEFAULT_TYPES["balanced"])
    usage = result.snapshot.module("knowledge_context")
    assert usage.used == 0 and usage.metadata["abstained"] is True
    assert usage.metadata["reason"].startswith("nothing relevant found: no passage is relevant enough")
    sent = "\n".join(str(m.get("content", "")) for m in result.messages)
    assert "Invoices are emailed" not in sent


def test_a_chunk_boundary_never_separates_an_option_name_from_its_description() -> None:
    """Blocks as a manual has them: prose, a lead-in, then the option's names on a line of their own before its
    description. Where the target falls between them, the names (too long for the overlap) and the lead-in open
    the next chunk with the description."""
    prose = [
        Block(f"Sentence {i} of the introduction says something about timeouts in general.", ("t",)) for i in range(14)
    ]
    blocks = (
        *prose,
        Block("Options:", ("t",)),
        Block("-k DURATION, --kill-after=DURATION, --kill-delay=DURATION, --grace=DURATION", ("t",)),
        Block("Also send a KILL signal if the command is still running this long after the first signal.", ("t",)),
    )
    doc = ExtractedDocument("t", blocks)
    for target in range(100, 260, 3):
        chunks = chunk_document(doc, TOKENS.count, target_tokens=target)
        [described] = [c for c in chunks if "Also send a KILL signal" in c.text]
        assert "--kill-after=DURATION" in described.text, target
        assert "Options:" in described.text, target
