"""system_prompt: the profile's prompt with ``{placeholders}`` filled in; never condensed (the floor).

A chat client's own system messages (``ctx.instructions``) are sent as it sent them; the profile's
``system_prompt_mode`` says how the profile's prompt joins them: ``client`` (the default) keeps the client's
alone (the profile's prompt only when the client sends none), ``profile`` replaces them, ``prepend`` and
``append`` put the profile's prompt before or after them.
"""

from __future__ import annotations

import re
from typing import Any

from components.context_window.base import AssemblyContext, ContextModule, Contribution, Message, text_contribution
from components.context_window.options import ModuleOptions

PLACEHOLDERS = ["components", "phase", "profile_name", "profile_type", "tools_context"]


def placeholders(ctx: AssemblyContext) -> dict[str, str]:
    tools = ", ".join(t.name for t in ctx.tools)
    return {
        "profile_name": ctx.profile.name or ctx.profile.id,
        "profile_type": ctx.profile.type,
        "tools_context": f"You can call these tools: {tools}." if tools else "You have no tools in this session.",
        "components": ", ".join(ctx.profile.components) or "none",
        "phase": ctx.session.phase or "",
    }


_PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")


def render(prompt: str, ctx: AssemblyContext) -> str:
    """Fill known ``{placeholders}``; any other braces (JSON examples, unknown names) stay as written."""
    values = placeholders(ctx)
    return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), prompt)


class SystemPromptModule(ContextModule):
    options_model = ModuleOptions

    async def contribute(self, budget: int, ctx: AssemblyContext) -> Contribution:
        # The budget is advisory here: the prompt is the floor, and the orchestrator fails loudly if it cannot fit.
        text = render(ctx.profile.system_prompt, ctx)
        client, mode = tuple(ctx.instructions), ctx.profile.system_prompt_mode
        if not client or mode == "profile":
            return text_contribution(self.module_id, [text], placement="system", strategy="full")
        own = (Message("system", text),) if text and mode in ("prepend", "append") else ()
        messages = own + client if mode == "prepend" else client + own
        strategy = "client" if not own else f"client_{mode}ed"
        return Contribution(self.module_id, tuple((m,) for m in messages), placement="system", strategy=strategy)

    def get_status(self) -> dict[str, Any]:
        return {**super().get_status(), "placeholders": PLACEHOLDERS}
