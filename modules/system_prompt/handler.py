"""system_prompt: the profile's prompt with ``{placeholders}`` filled in; never condensed (the floor)."""

from __future__ import annotations

from typing import Any

from components.context_window.base import AssemblyContext, ContextModule, Contribution, text_contribution


class _KeepUnknown(dict[str, str]):
    """format_map mapping that leaves unknown ``{names}`` as written, so prompts with braces survive."""

    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def placeholders(ctx: AssemblyContext) -> dict[str, str]:
    tools = ", ".join(t.name for t in ctx.tools)
    return {
        "profile_name": ctx.profile.name or ctx.profile.id,
        "profile_type": ctx.profile.type,
        "tools_context": f"You can call these tools: {tools}." if tools else "You have no tools in this session.",
        "components": ", ".join(ctx.profile.components) or "none",
        "phase": ctx.session.phase or "",
    }


def render(prompt: str, ctx: AssemblyContext) -> str:
    try:
        return prompt.format_map(_KeepUnknown(placeholders(ctx)))
    except (ValueError, IndexError):  # stray single braces or positional fields: send the prompt verbatim
        return prompt


class SystemPromptModule(ContextModule):
    async def contribute(self, budget: int, ctx: AssemblyContext) -> Contribution:
        # The budget is advisory here: the prompt is the floor, and the orchestrator fails loudly if it cannot fit.
        text = render(ctx.profile.system_prompt, ctx)
        return text_contribution(self.module_id, [text], placement="system", strategy="full")

    def get_status(self) -> dict[str, Any]:
        return {**super().get_status(), "placeholders": sorted(("profile_name", "profile_type", "tools_context", "components", "phase"))}
