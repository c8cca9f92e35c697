from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from components.context_window.base import Document, Session

PARAGRAPH = "The quarterly report covers revenue, margins and headcount. Each region reported on time. "


def doc(name: str, chars: int, text: str = PARAGRAPH) -> Document:
    body = (text * (chars // len(text) + 1))[:chars]
    return Document(id=name, name=name, text=body)


def with_docs(*docs: Document, sid: str = "s1") -> Session:
    return Session(id=sid, documents=docs)


@pytest.fixture
def documents(builtin):
    return builtin("document_context")


async def test_small_documents_go_in_whole_in_the_system_prefix(documents, ctx_for):
    out = await documents.contribute(5_000, ctx_for(session=with_docs(Document("d1", "notes.txt", "Alpha.\n\nBeta."))))
    assert out.placement == "system" and out.strategy == "full"
    assert out.text() == "## Documents attached to this session\n### Document: notes.txt\nAlpha.\n\nBeta."


async def test_per_file_limit_cuts_at_a_boundary_with_a_visible_marker(documents, ctx_for):
    out = await documents.contribute(50_000, ctx_for(session=with_docs(doc("big.txt", 30_000))))
    block = out.texts()[0]
    body, marker = block.split("\n")[1], block.split("\n")[-1]
    assert marker.startswith("[Document truncated: showing the first ") and marker.endswith(" of 30,000 characters]")
    assert len(body) <= 20_000 and body.endswith(".")  # a sentence end
    assert out.strategy == "truncated" and out.metadata["truncated"] == 1


async def test_total_limit_truncates_then_omits_and_names_what_was_left_out(documents, ctx_for):
    session = with_docs(doc("a.txt", 20_000), doc("b.txt", 20_000), doc("c.txt", 20_000), doc("d.txt", 5_000))
    out = await documents.contribute(100_000, ctx_for(session=session, config={"total_chars": 45_000}))
    assert [t.split("\n")[0] for t in out.texts()[:3]] == [
        "### Document: a.txt",
        "### Document: b.txt",
        "### Document: c.txt",
    ]
    assert "[Document truncated" in out.texts()[2]  # c.txt got what was left of the total
    assert (
        out.texts()[-1]
        == "[Documents omitted: the total limit of 45,000 characters was reached before d.txt (5,000 characters)]"
    )
    assert out.metadata["omitted"] == ["d.txt"]
    assert sum(len(t) for t in out.texts()) < 45_000 + 1_000  # bodies within the total; titles and markers aside


async def test_condense_cuts_every_document_to_its_share_at_sentence_ends(documents, ctx_for, tokens_used):
    session = with_docs(doc("long.txt", 15_000), Document("short", "short.txt", "Tiny note."))
    ctx = ctx_for(session=session)
    full = await documents.contribute(20_000, ctx)
    smaller = await documents.condense(full, 800, ctx)
    assert tokens_used(smaller) <= 800 and smaller.strategy == "cut_to_budget"
    long_block, short_block = smaller.texts()
    assert short_block == "### Document: short.txt\nTiny note."  # small documents keep all they need
    assert long_block.split("\n")[1].endswith(".") and "[Document truncated: showing the first" in long_block
    assert await documents.condense(full, 10, ctx) == await documents.contribute(10, ctx)
    assert (await documents.condense(full, 10, ctx)).metadata["reason"].startswith("10 tokens cannot hold")


async def test_cuts_are_cached_per_session_and_purged(documents, ctx_for):
    for sid in ("a", "a", "b"):
        await documents.contribute(500, ctx_for(session=with_docs(doc("x.txt", 8_000), sid=sid)))
    cache = documents.get_status()["cache"]
    assert (cache["sessions"], cache["entries"], cache["hits"]) == (2, 4, 2)  # limits and cut, per session
    assert await documents.purge("a", "u") == {"purged": 2}
    assert documents.get_status()["cache"]["sessions"] == 1


async def test_no_documents_and_bad_options(documents, ctx_for):
    out = await documents.contribute(1_000, ctx_for())
    assert out.is_empty and out.metadata["reason"] == "no documents attached"
    with pytest.raises(ValueError, match="'per_file_chars' must be at least 1"):
        await documents.contribute(1_000, ctx_for(session=with_docs(doc("a", 10)), config={"per_file_chars": 0}))


words = st.text(alphabet=st.sampled_from("abc de.\n!?"), max_size=3_000)


@settings(max_examples=50, deadline=None)
@given(texts=st.lists(words, min_size=1, max_size=4), budget=st.integers(-1, 1_200), per_file=st.integers(1, 2_500))
def test_contribute_never_exceeds_any_budget(builtin, ctx_for, tokens_used, run, texts, budget, per_file):
    documents = builtin("document_context")
    session = with_docs(*(Document(f"d{i}", f"doc{i}.txt", t) for i, t in enumerate(texts)))
    out = run(
        documents.contribute(
            budget, ctx_for(session=session, config={"per_file_chars": per_file, "total_chars": 4_000})
        )
    )
    assert tokens_used(out) <= max(budget, 0)


async def test_a_budget_drifting_by_a_few_tokens_keeps_the_same_cut(documents, ctx_for):
    ctx = ctx_for(session=with_docs(doc("long.txt", 15_000)))
    texts = {(await documents.contribute(budget, ctx)).text() for budget in range(1_000, 1_031)}
    assert len(texts) <= 2  # shares move in steps of 32 tokens: the cached system prefix survives


async def test_documents_that_get_no_room_are_named(documents, ctx_for, tokens_used):
    ctx = ctx_for(session=with_docs(doc("a.txt", 8_000), doc("b.txt", 8_000)))
    none = await documents.contribute(35, ctx)
    assert none.is_empty and none.metadata["dropped_for_budget"] == ["a.txt", "b.txt"]
    both = await documents.contribute(100, ctx)
    assert tokens_used(both) <= 100 and both.metadata["included"] == 2 and both.metadata["dropped_for_budget"] == []


# --- long documents: the parts that match the question, not the first N characters ---------------

TOPICS = ["invoicing", "shipping", "returns", "warranty", "payroll", "onboarding", "security", "travel"]


def handbook() -> Document:
    """27,000+ characters of distinct paragraphs; the one about parking permits sits near the end."""
    paragraphs = [
        f"Section {i}: the {TOPICS[i % len(TOPICS)]} procedure, revision {i}. Staff follow the {TOPICS[i % 8]} "
        f"checklist and file form {100 + i} with their team lead before the end of the month. " * 3
        for i in range(60)
    ]
    paragraphs.insert(52, "Parking permits for the north garage are renewed every March at the reception desk.")
    return Document(id="hb", name="handbook.txt", text="\n\n".join(paragraphs))


async def test_a_long_document_sends_the_part_that_matches_the_question_with_a_marker(documents, ctx_for):
    hb = handbook()
    assert len(hb.text) > 27_000 and hb.text.index("Parking permits") > 20_000  # beyond the per-file limit
    ctx = ctx_for("Where do I renew my parking permit for the garage?", session=with_docs(hb))
    block = (await documents.contribute(50_000, ctx)).texts()[0]
    assert "Parking permits for the north garage are renewed every March at the reception desk." in block
    assert block.splitlines()[-1].startswith("[Document excerpted: the parts that match the question, ")
    assert block.splitlines()[-1].endswith(f" of {len(hb.text):,} characters; […] marks what was left out]")
    assert block.splitlines()[1] == "[…]"  # the opening was left out: the room went to the matching part's context
    assert 19_000 <= len(block) <= 20_000 + 300  # the per-file limit is used and holds (title and marker aside)


async def test_under_a_small_token_budget_the_matching_part_is_what_is_sent(documents, ctx_for, tokens_used):
    ctx = ctx_for("When are parking permits renewed?", session=with_docs(handbook()))
    out = await documents.contribute(400, ctx)
    assert "renewed every March at the reception desk" in out.text() and tokens_used(out) <= 400
    assert "[Document excerpted: " in out.text()


async def test_a_question_no_part_matches_keeps_the_opening_and_says_it_was_truncated(documents, ctx_for):
    ctx = ctx_for("Zebra?", session=with_docs(handbook()))
    block = (await documents.contribute(50_000, ctx)).texts()[0]
    assert block.splitlines()[1].startswith("Section 0: the invoicing procedure")
    assert block.splitlines()[-1].startswith("[Document truncated: showing the first ")
