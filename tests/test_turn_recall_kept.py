"""What a long session's turn recall keeps beside the history's own data (issue 32 item 5: "memory that stays flat"):
no terms by text beside its indexes."""

from __future__ import annotations

import asyncio
import gc
import types
from typing import Any

from components.context_window.recall.turns import TurnRecall
from tests.agent_session import question


class _Vectors:
    vector_space = "test-kept"

    async def embed(self, texts: list[str]) -> list[list[float]]:
        return [[1.0, float(len(text) % 7), float(sum(map(ord, text)) % 11)] for text in texts]


_CODE = (types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType, types.MethodType, types.CodeType)


def _held_beside_indexes(recall: TurnRecall) -> int:
    """Objects reachable from ``recall`` but through its indexes and the vectors shared by text (code and classes
    not followed)."""
    skipped = {id(recall._indexes), id(recall._vectors)}
    seen, stack = set(skipped), [value for value in vars(recall).values() if id(value) not in skipped]
    while stack:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, _CODE):
            continue
        seen.add(id(obj))
        stack.extend(gc.get_referents(obj))
    return len(seen) - len(skipped)


def test_turn_recall_keeps_no_terms_by_text_beside_its_indexes():
    """A session's turns searched one by one: what the recall holds beside its indexes does not grow with the turns
    (it kept each text's terms by session and key, up to 8,192 texts, used only when an index is built again); an
    index built again scores as the first."""
    recall = TurnRecall()
    turns: list[Any] = [((n, question(n)), question(n), (question(n),)) for n in range(1, 301)]

    def match(upto: int) -> Any:
        return asyncio.run(
            recall.match(
                "s",
                turns[:upto],
                "which orders of customer CUST-007 are open",
                shown=range(upto - 3, upto),
                candidates=range(upto - 3),
                embedder=_Vectors(),
            )
        )

    match(50)
    early = _held_beside_indexes(recall)
    for upto in range(51, 301, 25):
        first = match(upto)
    assert _held_beside_indexes(recall) == early
    assert recall.stats()["texts"] == 276
    recall.forget("s")
    assert match(276) == first
