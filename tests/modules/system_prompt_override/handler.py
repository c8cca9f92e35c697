from components.context_window.base import ContextModule, text_contribution


class Override(ContextModule):
    async def contribute(self, budget, ctx):
        return text_contribution(self.module_id, ["overridden by the user folder"], placement="system")
