"""Every model call a module makes while a window is assembled is in the snapshot: what for, which model,
tokens in and out (the provider's, else counted here), the bound it was given, how long it took."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any

from components.context_window.base import AssemblyContext, ContextModule, Contribution
from components.context_window.handler import ContextWindowHandler
from components.context_window.metering import Summary, labelled
from components.context_window.module_registry import ModuleRegistry
from components.context_window.snapshot import ContextWindowSnapshot
from tests import support
from tests.oracle import cookbook_tokens, text_tokens
from tests.support import make_ctx, manifest

INSTRUCTION = "Rewrite it."


class Asking(ContextModule):
    """Asks the summarizer once per contribute, labelled with ``purpose`` (if any), with the given bound."""

    def __init__(self, module_id: str, purpose: str = "", max_tokens: int = 30, delay_s: float = 0.0) -> None:
        super().__init__(manifest(module_id))
        self.purpose, self.max_tokens, self.delay_s = purpose, max_tokens, delay_s

    async def contribute(self, budget: int, ctx: AssemblyContext) -> Contribution:
        assert ctx.summarizer is not None
        await asyncio.sleep(self.delay_s)
        summarizer = labelled(ctx.summarizer, self.purpose) if self.purpose else ctx.summarizer
        try:
            text = await summarizer.summarize(
                f"text of {self.module_id}", max_tokens=self.max_tokens, instruction=INSTRUCTION
            )
        except RuntimeError:
            text = "no summary"
        return Contribution(self.module_id, units=((text,),))


@dataclass
class Plain:
    """A summarizer that reports no usage; ``fail`` raises, ``slow`` outlasts the module timeout."""

    reply: str = "a short reply"
    fail: bool = False
    slow: bool = False
    bounds: list[int] = field(default_factory=list)

    async def summarize(self, text: str, *, max_tokens: int, instruction: str = "") -> str:
        self.bounds.append(max_tokens)
        if self.slow:
            await asyncio.sleep(5)
        if self.fail:
            raise RuntimeError("model unavailable")
        return self.reply


@dataclass
class Reporting(Plain):
    model: str = "small-model"

    async def summarize_with_usage(self, text: str, *, max_tokens: int, instruction: str = "") -> Summary:
        return Summary(await self.summarize(text, max_tokens=max_tokens, instruction=instruction), 321, 9, self.model)


async def assemble(summarizer: Any, *modules: ContextModule, timeout_s: float = 2.0) -> ContextWindowSnapshot:
    handler = ContextWindowHandler(ModuleRegistry.from_modules(modules), timeout_s=timeout_s)
    ctx = make_ctx()
    ctx = dataclasses.replace(ctx, summarizer=summarizer)
    slots = {m.module_id: (20, 0, 50, 50) for m in modules}
    return (await handler.assemble(ctx, support.wtype(slots))).snapshot


async def test_a_call_with_the_providers_counts_is_listed_as_reported():
    snapshot = await assemble(Reporting(), Asking("rewriter", "query_rewrite", max_tokens=64))
    [call] = snapshot.auxiliary_calls
    assert (call.module_id, call.purpose, call.model) == ("rewriter", "query_rewrite", "small-model")
    assert (call.tokens_in, call.tokens_out, call.max_tokens, call.status, call.estimated) == (321, 9, 64, "ok", False)
    assert snapshot.auxiliary_tokens == (321, 9)


async def test_a_call_without_counts_is_counted_on_what_was_sent():
    snapshot = await assemble(Plain(), Asking("summariser"))
    [call] = snapshot.auxiliary_calls
    prompt = f"{INSTRUCTION}\n\ntext of summariser"
    assert call.purpose == "summary" and call.estimated
    assert call.tokens_in == cookbook_tokens([{"role": "user", "content": prompt}]) - 3  # less the reply priming
    assert call.tokens_out == text_tokens("a short reply")


async def test_every_call_is_bounded_and_failed_or_timed_out_calls_are_listed_without_tokens():
    plain, slow = Plain(fail=True), Plain(slow=True)
    failed = await assemble(plain, Asking("unbounded", max_tokens=0))
    assert plain.bounds == [1]
    listed = [(c.status, c.tokens_in, c.tokens_out, c.max_tokens) for c in failed.auxiliary_calls]
    assert listed == [("failed", 0, 0, 1)]
    timed_out = await assemble(slow, Asking("slow"), timeout_s=0.1)
    assert timed_out.module("slow").status == "timeout"
    assert [(c.status, c.tokens_in) for c in timed_out.auxiliary_calls] == [("cancelled", 0)]


async def test_the_calls_of_several_modules_are_all_listed_and_survive_json():
    snapshot = await assemble(Reporting(), Asking("a", "llm_filter"), Asking("b", "history_summary", delay_s=0.01))
    assert sorted((c.module_id, c.purpose) for c in snapshot.auxiliary_calls) == [
        ("a", "llm_filter"),
        ("b", "history_summary"),
    ]
    data = json.loads(json.dumps(snapshot.to_dict()))
    assert ContextWindowSnapshot.from_dict(data).auxiliary_calls == snapshot.auxiliary_calls
    assert all("ms" not in c for c in snapshot.comparable()["auxiliary_calls"])  # time varies run to run
    assert "model calls: 2" in snapshot.summary()


async def test_without_a_summarizer_nothing_is_metered_and_old_snapshots_still_load():
    snapshot = await assemble(None, support.Scripted("quiet", ["words"]))
    assert snapshot.auxiliary_calls == [] and snapshot.auxiliary_tokens == (0, 0)
    data = snapshot.to_dict()
    del data["auxiliary_calls"]  # stored before the field existed
    assert ContextWindowSnapshot.from_dict(data).auxiliary_calls == []
