from components.context_window.base import ContextModule, text_contribution

from .wording import GREETING


class HelperModule(ContextModule):
    async def contribute(self, budget, ctx):
        return text_contribution(self.module_id, [GREETING])
