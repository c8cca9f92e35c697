from components.context_window.base import ContextModule, text_contribution


class EchoModule(ContextModule):
    async def contribute(self, budget, ctx):
        return text_contribution(self.module_id, [f"echo: {ctx.query}"])

    async def purge(self, session_id, user_id):
        return {"purged": 1, "session_id": session_id}
