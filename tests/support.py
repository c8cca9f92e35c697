"""Test helpers: scripted fake modules (the way simonw/llm scripts a fake model) and context builders."""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
import random
import re
from collections.abc import Callable, Sequence
from types import SimpleNamespace
from typing import Any

import numpy as np

from components.context_window.base import (
    AssemblyContext,
    ContextModule,
    Contribution,
    Message,
    ModuleManifest,
    Profile,
    Session,
    ToolSchema,
)
from components.context_window.relevance import terms
from components.context_window.token_estimator import estimator_for
from components.context_window.window_type import ContextWindowType


def manifest(
    module_id: str, *, condensable: bool = True, profile_types: Sequence[str] | None = None, **kw: Any
) -> ModuleManifest:
    data: dict[str, Any] = {
        "module_id": module_id,
        "display_name": module_id.replace("_", " ").title(),
        "capabilities": {"condensable": condensable, "purgeable": True},
        **kw,
    }
    if profile_types is not None:
        data["applicability"] = {"profile_types": list(profile_types)}
    return ModuleManifest.model_validate(data)


class Scripted(ContextModule):
    """A context module that does what the test says.

    behaviour: "fit" (as many ``blocks`` as fit the budget), "ignore" (all blocks whatever the budget),
    "raise", "hang", "huge" (one block of ``huge_words`` words, ignoring the budget).
    """

    def __init__(
        self,
        module_id: str,
        blocks: Sequence[str] = (),
        *,
        behaviour: str = "fit",
        condensable: bool = True,
        placement: str = "context",
        signals: dict[str, Any] | None = None,
        huge_words: int = 5000,
        profile_types: Sequence[str] | None = None,
    ) -> None:
        super().__init__(manifest(module_id, condensable=condensable, profile_types=profile_types))
        self.blocks = list(blocks)
        self.behaviour = behaviour
        self.placement = placement
        self._signals = signals or {}
        self.huge_words = huge_words
        self.calls: list[tuple[str, int]] = []
        self.seen_directives: list[Any] = []
        self.purged: list[str] = []

    async def signals(self, ctx: AssemblyContext) -> dict[str, Any]:
        return dict(self._signals)

    async def contribute(self, budget: int, ctx: AssemblyContext) -> Contribution:
        self.calls.append(("contribute", budget))
        self.seen_directives.append(ctx.directives)
        if self.behaviour == "raise":
            raise RuntimeError("scripted failure")
        if self.behaviour == "hang":
            await asyncio.sleep(3600)
        if self.behaviour == "huge":
            return self._made([" ".join(["word"] * self.huge_words)])
        if self.behaviour == "ignore":
            return self._made(self.blocks)
        return self._fit(budget, ctx)

    async def condense(self, contribution: Contribution, target_tokens: int, ctx: AssemblyContext) -> Contribution:
        self.calls.append(("condense", target_tokens))
        if self.behaviour in ("ignore", "huge"):
            return contribution  # a module that cannot condense: the orchestrator must trim
        return self._fit(target_tokens, ctx, strategy="fewer")

    async def purge(self, session_id: str, user_id: str) -> dict[str, Any]:
        self.purged.append(session_id)
        return {"purged": 1}

    def _fit(self, budget: int, ctx: AssemblyContext, strategy: str = "full") -> Contribution:
        assert ctx.tokens is not None
        kept: list[str] = []
        for block in self.blocks:
            trial = self._made([*kept, block])
            if ctx.tokens.count_text_message(trial.text()) > budget:
                break
            kept.append(block)
        return self._made(kept, strategy)

    def _made(self, blocks: Sequence[str], strategy: str = "full") -> Contribution:
        return Contribution(
            self.module_id, units=tuple((b,) for b in blocks), placement=self.placement, strategy=strategy
        )  # type: ignore[arg-type]


def words(n: int, word: str = "alpha") -> str:
    return " ".join([word] * n)


def conversation(turns: int, words_per_message: int = 40) -> list[Message]:
    out: list[Message] = []
    for t in range(1, turns + 1):
        out.append(Message("user", f"question {t}: " + words(words_per_message, "ask"), turn=t))
        out.append(Message("assistant", f"answer {t}: " + words(words_per_message, "reply"), turn=t))
    return out


def tool_call_exchange(turn: int, call_id: str, result_words: int = 30) -> list[Message]:
    call = {"id": call_id, "type": "function", "function": {"name": "lookup", "arguments": '{"q": "x"}'}}
    return [
        Message("user", f"look something up {turn}", turn=turn),
        Message("assistant", "", turn=turn, tool_calls=(call,)),
        Message("tool", words(result_words, "result"), turn=turn, tool_call_id=call_id),
        Message("assistant", f"found it {turn}", turn=turn),
    ]


def make_tools(n: int = 5) -> list[ToolSchema]:
    return [
        ToolSchema(
            f"tool_{i}",
            f"Tool number {i} does a useful thing. It has a longer explanation that condensing removes.",
            {
                "type": "object",
                "properties": {
                    f"arg_{j}": {"type": "string", "description": f"argument {j} of tool {i}"} for j in range(4)
                },
                "required": ["arg_0"],
            },
        )
        for i in range(n)
    ]


def make_ctx(
    *,
    messages: Sequence[Message] = (),
    tools: Sequence[ToolSchema] = (),
    limit: int = 16_000,
    query: str = "What should we do next?",
    profile_type: str = "tool_enabled",
    system_prompt: str = "You are a test assistant. {tools_context}",
    profile_limit: int | None = None,
    session_limit: int | None = None,
    **session_kw: Any,
) -> AssemblyContext:
    return AssemblyContext(
        query=query,
        profile=Profile("p", profile_type, system_prompt=system_prompt, context_limit=profile_limit),  # type: ignore[arg-type]
        session=Session("s", messages=list(messages), context_limit=session_limit, **session_kw),
        tools=list(tools),
        model="gpt-4o",
        model_limit=limit,
    )


def module_ctx(ctx: AssemblyContext, **directives: Any) -> AssemblyContext:
    from components.context_window.base import Directives

    return ctx.for_module(Directives(**directives), estimator_for(ctx.model))


def wtype(slots: dict[str, tuple[float, float, float, int]], *, order=(), rules=(), reserve=10) -> ContextWindowType:
    return ContextWindowType.model_validate(
        {
            "id": "t",
            "name": "Test",
            "output_reserve_pct": reserve,
            "modules": {
                m: {"target_pct": t, "min_pct": lo, "max_pct": hi, "priority": p} for m, (t, lo, hi, p) in slots.items()
            },
            "condensation_order": list(order),
            "dynamic_adjustments": list(rules),
        }
    )


def turn_row(n: int, query: str = "") -> Any:
    """A stored turn's row as the service's turn index reads it (tda/recall/turns.py): turn ``n``, answered."""
    return SimpleNamespace(
        turn=n,
        query=query or f"q{n}",
        plan="",
        answer="",
        outcome="answered",
        tokens_in=0,
        tokens_out=0,
        results=(),
        valid=True,
        phase=None,
    )


class ConceptEmbedder:
    """Each term its own axis, but the words ``same`` maps to another's ("puppy" -> "dog"): a chat may call a thing
    another way, and meaning finds it."""

    vector_space = "concepts-as-axes"

    def __init__(self, same: dict[str, str] | None = None) -> None:
        self.same = {terms(word)[0]: terms(concept)[0] for word, concept in (same or {}).items()}
        self.axes: dict[str, int] = {}

    async def embed(self, texts):
        vectors = []
        for text in texts:
            vector = [0.0] * 512
            for term in terms(text):
                vector[self.axes.setdefault(self.same.get(term, term), len(self.axes)) % 512] += 1.0
            vectors.append(vector)
        return vectors


class DigestVectors:
    """Each text its own vector (seeded by its digest) around one shared direction, 16 dimensions: texts alike in
    meaning, told apart, the same on every run."""

    vector_space = "test-alike"

    async def embed(self, texts: list[str]) -> list[list[float]]:
        import numpy as np

        out = []
        for text in texts:
            seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
            out.append((np.random.default_rng(seed).standard_normal(16) + 1.0).tolist())
        return out


def seeded_direction(name: str, dimensions: int) -> np.ndarray:
    """A unit vector seeded by ``name``: unrelated names, near-orthogonal directions."""
    seed = int.from_bytes(hashlib.blake2b(name.encode(), digest_size=8).digest(), "little")
    vector = np.random.default_rng(seed).standard_normal(dimensions)
    return vector / np.linalg.norm(vector)


class TurnedEmbedder:
    """Every text its own direction (``seeded_direction``) turned toward ``question``'s by ``share(text)``; the
    question its own."""

    question = ""
    dimensions = 48

    async def embed(self, texts: list[str]) -> list[list[float]]:
        return [self.vector(t) for t in texts]

    @classmethod
    def share(cls, text: str) -> float:
        return 0.0

    @classmethod
    def vector(cls, text: str) -> list[float]:
        vector = seeded_direction(text, cls.dimensions)
        if text != cls.question:
            vector = vector + cls.share(text) * seeded_direction(cls.question, cls.dimensions)
        return (vector / np.linalg.norm(vector)).tolist()


CHAT_WORDS = "kettle garden rain biscuit train meeting paint guitar ferry lemon chess bicycle cinema bread wool".split()


def two_speaker_chat(
    messages: int, line: Callable[[int, str], str], words: int, user_every: int, seed: int = 0
) -> list[Message]:
    """``messages`` lines, the ``i``-th ``line(i, words of CHAT_WORDS drawn by seed)``, the user's every
    ``user_every``-th and the assistant's the rest, in turns of two."""
    rng = random.Random(seed)
    return [
        Message(
            "user" if i % user_every == 0 else "assistant",
            line(i, " ".join(rng.choices(CHAT_WORDS, k=words))),
            turn=i // 2 + 1,
        )
        for i in range(messages)
    ]


def generated_chat(messages: int, seed: int = 0) -> list[Message]:
    """Two of three lines of one sentence, "One ..." (~20 tokens each), every third of two, alternating user and
    assistant, in turns of two."""
    rng = random.Random(seed)

    def line(sentences: int) -> str:
        said = [" ".join(rng.choices(CHAT_WORDS, k=8)).capitalize() + "." for _ in range(sentences)]
        return " ".join(["One " + said[0].lower()] if sentences == 1 else said)

    return [
        Message("user" if i % 2 == 0 else "assistant", line(2 if i % 3 == 0 else 1), turn=i // 2 + 1)
        for i in range(messages)
    ]


async def recalled_contents(embedder: Any, messages: list[Message], query: str, enough_tokens: int) -> list[str]:
    """What recall gathers for ``query`` over the whole of ``messages`` (every vector made first), in rank order."""
    from components.context_window.recall.messages import SessionRecall

    recall = SessionRecall(embedder)
    session = Session("s", messages=messages)
    await recall.sync(session, dense=True)
    ranking = await recall.recall(session, query, before=len(messages), enough_tokens=enough_tokens)
    return [m.content for unit in ranking.units for m in unit.messages]


def index_vectored_to(messages: list[Message], vectored: int, vectors_of: Callable[[Message], list[Any]]) -> Any:
    """A ``HistoryIndex`` of ``messages``, the first ``vectored`` given their part vectors (``vectors_of``), the rest
    still waiting for theirs."""
    from components.context_window.recall.messages import HistoryIndex

    index = HistoryIndex()
    index.add(messages[:vectored], [vectors_of(m) for m in messages[:vectored]])
    index.add(messages[vectored:])
    return index


def stamped_sessions(
    messages: Sequence[dict[str, str]], pattern: re.Pattern[str], form: str
) -> list[tuple[dt.datetime, list[int]]]:
    """A long chat's sessions: each one's stamp (the heading ``pattern`` finds on a message's first line, read with
    ``strptime(form)``) and its messages, up to the next heading."""
    heads = []
    for i, m in enumerate(messages):
        found = pattern.match(m["content"].split("\n", 1)[0])
        if found:
            heads.append((i, dt.datetime.strptime(found.group(1), form)))
    bounds = [*(i for i, _ in heads), len(messages)]
    return [(when, list(range(a, b))) for (a, when), b in zip(heads, bounds[1:], strict=True)]


STOP_WORDS = frozenset(
    "the and for with from was were are did does has have had its this that what which who whose when where why how "
    "would could should will can may might likely probably now far these days their them they his her she him you "
    "your our not yes get got into about than then there kind been being one lately".split()
)
"""Words that carry no content: a question sharing only these (and names) with its evidence shares nothing."""


def speaker_and_words(content: str) -> tuple[str, str]:
    """A chat message's speaker and words ("Name: words" on its last line, past a session's heading)."""
    speaker, words = content.split("\n")[-1].split(": ", 1)
    return speaker, words


def content_words(text: str) -> set[str]:
    """Lowercased words of three letters or more, a trailing "s" or "'s" dropped, stop words left out."""
    found = (w.removesuffix("'s").removesuffix("s") for w in re.findall(r"[a-z']+", text.lower()))
    return {w for w in found if len(w) >= 3 and w not in STOP_WORDS}


def apart_from_evidence(
    chats: Sequence[Any], names: Sequence[Sequence[str]], nothing: Sequence[str]
) -> tuple[int, int]:
    """Of the answerable questions in ``chats`` (each chat's speakers in ``names``), how many share no content word
    but a name with their evidence, and how many there are."""
    clean = total = 0
    for chat, pair in zip(chats, names, strict=True):
        people = {n.lower() for n in pair}
        for question in chat.questions:
            if question.kind in nothing:
                continue
            evidence = " ".join(speaker_and_words(chat.messages[i]["content"])[1] for i in question.evidence)
            total += 1
            clean += not (content_words(question.text) - people) & content_words(evidence)
    return clean, total


def written_from_a_seed(write: Callable[[int], Sequence[Any]]) -> None:
    """A bench set's chats are the same for a seed (messages and questions) and other ones for another seed."""
    first, again, other = write(0), write(0), write(1)
    assert [c.messages for c in again] == [c.messages for c in first]
    assert [c.questions for c in again] == [c.questions for c in first]
    assert [c.messages for c in other] != [c.messages for c in first]
    assert [c.questions for c in other] != [c.questions for c in first]


def evidence_in_range(questions: Sequence[Any], messages: int, nothing: Sequence[str]) -> None:
    """Questions nothing answers have no evidence; the others name distinct messages of the chat."""
    for question in questions:
        if question.kind in nothing:
            assert question.evidence == (), question.text
        else:
            assert question.evidence and len(set(question.evidence)) == len(question.evidence), question.text
            assert all(0 <= i < messages for i in question.evidence), question.text
