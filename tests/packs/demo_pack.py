"""A third-party pack as an installed package would ship it (entry point group tda.context_modules)."""

from components.context_window.base import ContextModule, text_contribution
from components.context_window.hookspecs import hookimpl


class PackPrompt(ContextModule):
    async def contribute(self, budget, ctx):
        return text_contribution(self.module_id, ["from the pack"], placement="system")


class PackExtra(ContextModule):
    async def contribute(self, budget, ctx):
        return text_contribution(self.module_id, ["pack extra"])


@hookimpl
def tda_context_modules():
    prompt = {"module_id": "system_prompt", "display_name": "Pack prompt", "capabilities": {"condensable": False}}
    return [(prompt, PackPrompt), ({"module_id": "pack_extra", "display_name": "Pack extra"}, PackExtra)]


@hookimpl
def tda_window_types():
    """A pack may ship window types too: seeded with the built-in ones on a fresh database."""
    return [
        {
            "id": "pack_type",
            "name": "Pack type",
            "modules": {"system_prompt": {"target_pct": 20, "max_pct": 40}, "pack_extra": {"target_pct": 10}},
        }
    ]
