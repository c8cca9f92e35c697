"""tool_definitions: the richest level of tool description that fits the budget.

Levels, richest first: ``full`` schemas, ``condensed`` schemas (first sentence of each description,
no parameter descriptions, still callable), ``names_only`` (a text list). After the first turn the
module sends names only, unless a rule forces full schemas (``force_full``) or the window type's
slot config sets ``"after_first_turn": "full"``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any
from weakref import WeakKeyDictionary

from components.context_window.base import AssemblyContext, ContextModule, Contribution, ToolSchema

LEVELS = ("full", "condensed", "names_only")
NAMES_HEADER = "Available tools (ask for a tool's schema before calling it if you need its arguments):"
_FIRST_SENTENCE = re.compile(r"^(.+?[.!?])(\s|$)", re.S)


def first_sentence(text: str, limit: int = 160) -> str:
    match = _FIRST_SENTENCE.match(text.strip())
    sentence = (match.group(1) if match else text.strip()).replace("\n", " ")
    return sentence if len(sentence) <= limit else sentence[: limit - 1].rstrip() + "…"


def _strip_descriptions(schema: Any) -> Any:
    """The parameter schema without ``description`` keys (types, enums and required stay)."""
    if isinstance(schema, Mapping):
        return {k: _strip_descriptions(v) for k, v in schema.items() if k != "description"}
    if isinstance(schema, list):
        return [_strip_descriptions(v) for v in schema]
    return schema


_condensed: WeakKeyDictionary[ToolSchema, ToolSchema] = WeakKeyDictionary()


def condensed(tool: ToolSchema) -> ToolSchema:
    """The condensed schema of ``tool``, built once per tool object."""
    small = _condensed.get(tool)
    if small is None:
        small = _condensed[tool] = ToolSchema(
            tool.name, first_sentence(tool.description), _strip_descriptions(tool.parameters)
        )
    return small


def name_line(tool: ToolSchema) -> str:
    return f"- {tool.name}"


class ToolDefinitionsModule(ContextModule):
    async def contribute(self, budget: int, ctx: AssemblyContext) -> Contribution:
        tools = list(ctx.tools)
        if not tools:
            return Contribution(self.module_id, placement="tools", strategy="none")
        start = self._starting_level(ctx)
        return self._fit(tools, budget, ctx, LEVELS.index(start))

    async def condense(self, contribution: Contribution, target_tokens: int, ctx: AssemblyContext) -> Contribution:
        level = contribution.metadata.get("level", "full")
        next_level = min(LEVELS.index(level) + 1, len(LEVELS) - 1)
        return self._fit(list(ctx.tools), target_tokens, ctx, next_level)

    def _starting_level(self, ctx: AssemblyContext) -> str:
        if ctx.directives.force_full or ctx.session.turn_number <= 1:
            return "full"
        return ctx.directives.config.get("after_first_turn", "names_only")

    def _fit(self, tools: Sequence[ToolSchema], budget: int, ctx: AssemblyContext, first_level: int) -> Contribution:
        """The first level from ``first_level`` on that fits; names-only drops trailing tools if it must."""
        assert ctx.tokens is not None
        for level in LEVELS[first_level:-1]:
            schemas = tools if level == "full" else [condensed(t) for t in tools]
            if ctx.tokens.count_tools(schemas) <= budget:
                return self._schemas(schemas, level, len(tools))
        return self._names(tools, budget, ctx)

    def _schemas(self, schemas: Sequence[ToolSchema], level: str, total: int) -> Contribution:
        return Contribution(
            self.module_id,
            units=tuple((t,) for t in schemas),
            placement="tools",
            strategy=level,
            metadata={"level": level, "tools": total, "included": len(schemas)},
        )

    def _names(self, tools: Sequence[ToolSchema], budget: int, ctx: AssemblyContext) -> Contribution:
        assert ctx.tokens is not None
        lines: list[str] = []
        used = ctx.tokens.count_text_message(NAMES_HEADER) + 1  # the message, its header and the newline
        for tool in tools:
            line = name_line(tool)
            cost = ctx.tokens.count(line) + 1  # the joining newline costs about one token
            if used + cost > budget:
                break
            lines.append(line)
            used += cost
        contribution = Contribution(
            self.module_id,
            units=tuple((line,) for line in lines),
            placement="system",
            header=NAMES_HEADER,
            joiner="\n",
            strategy="names_only",
            metadata={"level": "names_only", "tools": len(tools), "included": len(lines)},
        )
        while contribution.units and ctx.tokens.count_text_message(contribution.text()) > budget:
            contribution = contribution.replace(units=contribution.units[:-1])
        return contribution
