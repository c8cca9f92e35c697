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
