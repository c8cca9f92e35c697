"""tda in process: the frameworks' own extension points assembling with the component as a library (no server).

``window.py`` holds what they share (``Window``: a conversation in OpenAI's chat format assembled under a window
type; ``Reporter``: each snapshot posted to a tda server). One file per framework adapts its messages to it:
``langchain.py`` (LangChain v1 agent middleware), ``pydantic_ai.py`` (a history processor) and ``openai_agents.py``
(an Agents SDK ``Session``). Each imports its framework itself, so ``import tda`` loads none of them; install one
with ``pip install 'tda[langchain]'``, ``'tda[pydantic-ai]'`` or ``'tda[openai-agents]'``.
"""

from .window import Reporter, Window

__all__ = ["Reporter", "Window"]
