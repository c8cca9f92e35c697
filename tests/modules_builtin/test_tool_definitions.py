"""tool_definitions keeps tools callable: full when they fit, else the relevant ones as schemas and the rest by name."""

from __future__ import annotations

import gc
import sys
from collections.abc import Sequence

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from components.context_window.base import AssemblyContext, Message, ToolSchema, _evolve
from tda.builtins import module_registry
from tests.fresh_builtins import new_builtins
from tests.support import make_ctx, module_ctx

TOPICS = [
    ("convert_currency", "Convert an amount of money from one currency to another at today's exchange rate."),
    ("get_weather", "Current weather and forecast for a city: temperature, rain and wind."),
    ("send_email", "Send an email message to a recipient with a subject and body."),
    ("query_sales", "Run a SQL query against the sales warehouse and return the rows."),
    ("create_invoice", "Create an invoice for a customer with line items and a due date."),
    ("translate_text", "Translate text between languages."),
    ("book_flight", "Book a flight between two airports on a given date."),
    ("search_documents", "Full-text search over the company's documents."),
]


def realistic_tools(copies: int = 5) -> list[ToolSchema]:
    """40 tools (8 topics x 5 variants) with parameter descriptions, like a real MCP server's catalogue."""
    tools = []
    for k in range(copies):
        for name, description in TOPICS:
            suffix = "" if k == 0 else f"_v{k}"
            params = {
                "type": "object",
                "properties": {
                    f"field_{j}": {"type": "string", "description": f"Field {j} of {name}: " + "detail " * 8}
                    for j in range(4)
                },
                "required": ["field_0"],
            }
            tools.append(ToolSchema(name + suffix, description + " More words explain the edge cases.", params))
    return tools


@pytest.fixture
def module():
    return module_registry(entry_point_group=None).load().modules["tool_definitions"]


def callable_schema(schema: ToolSchema) -> None:
    """What a provider checks before accepting a tool: a name, and parameters that are a valid JSON schema."""
    body = schema.to_openai()
    assert body["type"] == "function" and body["function"]["name"]
    jsonschema.Draft202012Validator.check_schema(body["function"]["parameters"])
    assert body["function"]["parameters"]["type"] == "object"


def room_for_one(module, tools, ctx, name: str) -> int:
    """A budget that holds the name list and exactly one condensed schema: ``name``'s."""
    handler = sys.modules[type(module).__module__]
    tokens = ctx.tokens
    names = tokens.count_text_message(handler.PARTIAL_HEADER) + sum(tokens.count(f"- {t.name}") + 1 for t in tools)
    return names + tokens.count_tools([handler.condensed(next(t for t in tools if t.name == name))])


def sent_cost(c, ctx) -> int:
    """What the orchestrator counts for a contribution: the tools block, and the text as one message."""
    return ctx.tokens.count_tools(c.tool_schemas()) + (ctx.tokens.count_text_message(c.text()) if c.texts() else 0)


async def test_full_schemas_on_every_turn_when_they_fit_in_the_profile_order(module):
    tools = realistic_tools()
    history = [Message("user", "earlier", turn=1), Message("assistant", "answer", turn=1)]
    for messages in ((), history):
        ctx = module_ctx(make_ctx(tools=tools, messages=messages, query="convert 10 USD to EUR"))
        out = await module.contribute(100_000, ctx)
        assert out.strategy == "full" and out.tool_schemas() == tools  # the same objects, same order


async def test_when_full_does_not_fit_the_relevant_tools_stay_callable_and_the_rest_are_named(module):
    tools = realistic_tools()
    ctx = module_ctx(make_ctx(tools=tools, query="How much is 250 dollars in euros? Convert the currency please."))
    full_cost = ctx.tokens.count_tools(tools)
    condensed_cost = ctx.tokens.count_tools((await module.contribute(full_cost - 1, ctx)).tool_schemas())
    budget = condensed_cost // 3
    out = await module.contribute(budget, ctx)
    assert out.strategy == "partial" and sent_cost(out, ctx) <= budget
    sent = [t.name for t in out.tool_schemas()]
    assert "convert_currency" in sent  # the tool the query is about is callable
    for schema in out.tool_schemas():
        callable_schema(schema)
    order = [t.name for t in tools]
    assert sent == sorted(sent, key=order.index)  # schemas keep the profile's order
    left_out = out.metadata["left_out"]
    assert sorted(left_out + sent) == sorted(order)  # every tool is either callable or named
    assert all(f"- {name}" in out.text() for name in left_out)
    assert out.metadata["ranking"] == "lexical"


async def test_the_best_ranked_get_full_schemas_when_room_remains(module):
    tools = realistic_tools(1)
    ctx = module_ctx(make_ctx(tools=tools, query="what is the weather forecast, will it rain in Paris"))
    full_cost = ctx.tokens.count_tools(tools)
    out = await module.contribute(full_cost - 5, ctx)
    assert out.strategy == "condensed" and len(out.tool_schemas()) == len(tools)
    by_name = {t.name: t for t in out.tool_schemas()}
    original = {t.name: t for t in tools}
    assert by_name["get_weather"] is original["get_weather"]  # the relevant tool keeps its full schema
    assert 0 < out.metadata["condensed_schemas"] < len(tools)


async def test_recent_turns_count_for_relevance(module):
    tools = realistic_tools()
    call = {"id": "c1", "type": "function", "function": {"name": "book_flight", "arguments": "{}"}}
    history = [
        Message("user", "I need to fly from Oslo to Rome on Friday", turn=1),
        Message("assistant", "", turn=1, tool_calls=(call,)),
        Message("tool", "booked", turn=1, tool_call_id="c1"),
    ]
    ctx = module_ctx(make_ctx(tools=tools, messages=history, query="and the return trip on Monday?"))
    out = await module.contribute(600, ctx)
    assert "book_flight" in [t.name for t in out.tool_schemas()]


class WordEmbedder:
    """A fake embedder that knows one synonym pair no word overlap can find: 'letter' ~ 'email'."""

    def __init__(self) -> None:
        self.calls: list[Sequence[str]] = []

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        return [[1.0 if ("letter" in t.lower() or "email" in t.lower()) else 0.0, 1.0] for t in texts]


async def test_the_embedder_ranks_by_meaning_and_each_tool_is_embedded_once(module):
    tools = realistic_tools(1)
    embedder = WordEmbedder()
    query = "post a letter for Bob"
    words_only = module_ctx(make_ctx(tools=tools, query=query))
    one_schema = room_for_one(module, tools, words_only, "send_email")
    assert [t.name for t in (await module.contribute(one_schema, words_only)).tool_schemas()] != ["send_email"]
    ctx = module_ctx(_evolve(make_ctx(tools=tools, query=query), embedder=embedder))
    out = await module.contribute(one_schema, ctx)
    assert out.metadata["ranking"] == "lexical+embedding"
    assert [t.name for t in out.tool_schemas()] == ["send_email"]
    next_turn = module_ctx(_evolve(make_ctx(tools=tools, query=query), embedder=embedder))
    await module.contribute(one_schema, next_turn)
    assert len(embedder.calls[0]) == 1 + len(tools) and embedder.calls[1] == [ctx.query]


async def test_a_new_embedder_embeds_afresh_and_never_sees_the_old_ones_vectors(module):
    """Vectors are kept per embedder object, not per id(): a replaced embedder (a reloaded model) whose
    meaning differs ranks by its own vectors, even when it lands at the address of the one it replaced."""

    class ReversedEmbedder(WordEmbedder):
        """Knows no synonyms: an email is unlike anything else, the query included."""

        async def embed(self, texts: Sequence[str]) -> list[list[float]]:
            self.calls.append(list(texts))
            return [[0.0, 1.0] if "email" in t.lower() else [1.0, 0.0] for t in texts]

    tools = realistic_tools(1)
    query = "post a letter for Bob"
    probe = module_ctx(make_ctx(tools=tools, query=query))
    one_schema = room_for_one(module, tools, probe, "send_email")
    first = WordEmbedder()
    ctx = module_ctx(_evolve(make_ctx(tools=tools, query=query), embedder=first))
    assert [t.name for t in (await module.contribute(one_schema, ctx)).tool_schemas()] == ["send_email"]
    del first, ctx
    gc.collect()
    assert module.get_status()["embedded_tools"] == 0  # the vectors went with their embedder
    second = ReversedEmbedder()
    ctx = module_ctx(_evolve(make_ctx(tools=tools, query=query), embedder=second))
    out = await module.contribute(one_schema, ctx)
    assert len(second.calls[0]) == 1 + len(tools)  # every tool embedded by the new model
    assert [t.name for t in out.tool_schemas()] != ["send_email"]


async def test_a_failing_embedder_falls_back_to_words(module):
    class Broken:
        async def embed(self, texts):
            raise RuntimeError("model not loaded")

    tools = realistic_tools(1)
    ctx = module_ctx(_evolve(make_ctx(tools=tools, query="send an email to Ann"), embedder=Broken()))
    out = await module.contribute(room_for_one(module, tools, ctx, "send_email"), ctx)
    assert out.metadata["ranking"] == "lexical" and [t.name for t in out.tool_schemas()] == ["send_email"]


async def test_names_only_is_the_last_resort_and_says_what_was_left_out(module):
    tools = realistic_tools(1)
    ctx = module_ctx(make_ctx(tools=tools))
    out = await module.contribute(30, ctx)
    assert out.strategy == "names_only" and not out.tool_schemas()
    assert out.metadata["left_out"] == [t.name for t in tools]
    assert sent_cost(out, ctx) <= 30


async def test_condensing_steps_down_and_purge_brings_full_back(module):
    tools = realistic_tools()
    ctx: AssemblyContext = module_ctx(make_ctx(tools=tools), config={"after_first_turn": "names_only"})
    first = await module.contribute(100_000, ctx)
    smaller = await module.condense(first, 2_000, ctx)
    assert smaller.strategy in ("condensed", "partial") and sent_cost(smaller, ctx) <= 2_000
    again = await module.condense(smaller, 500, ctx)
    assert sent_cost(again, ctx) <= 500
    assert "purged" in await module.purge("s", "u")
    assert (await module.contribute(100_000, ctx)).strategy == "full"


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 6000), st.integers(1, 40), st.sampled_from(["convert money", "weather", "sql rows", ""]))
async def test_every_level_fits_its_budget_and_sends_callable_schemas(budget, n, query):
    (module,) = new_builtins("tool_definitions")  # a new instance each example, without a registry load each
    ctx = module_ctx(make_ctx(tools=realistic_tools()[:n], query=query or "?"))
    out = await module.contribute(budget, ctx)
    assert sent_cost(out, ctx) <= budget
    for schema in out.tool_schemas():
        callable_schema(schema)
    named = set(out.metadata.get("left_out", []))
    assert named.isdisjoint(t.name for t in out.tool_schemas())


# --- condensing keeps every parameter: annotations are dropped as keywords, never as property names -------------


def test_a_parameter_named_description_survives_condensing():
    from modules.tool_definitions.handler import condensed

    tool = ToolSchema(
        "create_ticket",
        "Open a support ticket. The ticket is assigned to the on-call engineer.",
        {
            "type": "object",
            "title": "CreateTicket",
            "description": "Ticket fields.",
            "properties": {
                "title": {"type": "string", "description": "One line.", "title": "Title"},
                "description": {"type": "string", "description": "What happened.", "examples": ["It broke"]},
                "default": {"type": "boolean", "default": False, "description": "Use the default queue."},
                "examples": {"type": "array", "items": {"type": "string", "description": "An example."}},
            },
            "required": ["title", "description"],
        },
    )
    expected = {  # written by hand: the annotations go, every parameter and its constraints stay
        "type": "object",
        "properties": {
            "title": {"type": "string"},
            "description": {"type": "string"},
            "default": {"type": "boolean", "default": False},
            "examples": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["title", "description"],
    }
    small = condensed(tool)
    assert dict(small.to_openai()["function"]["parameters"]) == expected
    call = {"title": "Printer on fire", "description": "Third floor."}
    jsonschema.validate(call, small.to_openai()["function"]["parameters"])
    with pytest.raises(jsonschema.ValidationError):  # the parameter's type still holds
        jsonschema.validate({"title": "x", "description": 42}, small.to_openai()["function"]["parameters"])


NAMES = ["description", "title", "examples", "default", "properties", "items", "type", "required", "enum", "x"]


@st.composite
def schemas(draw, depth: int = 0) -> dict:
    kind = draw(st.sampled_from(["string", "integer", "object", "array"] if depth < 3 else ["string", "integer"]))
    schema: dict = {"type": kind}
    if draw(st.booleans()):
        schema["description"] = draw(st.sampled_from(["Explained.", "More words here."]))
    if draw(st.booleans()):
        schema["title"] = "T"
    if kind == "string" and draw(st.booleans()):
        schema["enum"] = ["a", "description", "title"]
    if kind == "object":
        names = draw(st.lists(st.sampled_from(NAMES), unique=True, max_size=4))
        schema["properties"] = {n: draw(schemas(depth + 1)) for n in names}
        schema["required"] = [n for n in names if draw(st.booleans())]
        schema["additionalProperties"] = draw(st.booleans())
    if kind == "array":
        schema["items"] = draw(schemas(depth + 1))
    return schema


def sample(schema: dict, wrong: bool = False):
    """An instance of ``schema`` (every property given); ``wrong``: the innermost values of the wrong type."""
    kind = schema["type"]
    if kind == "object":
        return {n: sample(s, wrong) for n, s in schema["properties"].items()}
    if kind == "array":
        return [sample(schema["items"], wrong)]
    if kind == "integer":
        return "seven" if wrong else 7
    return 7 if wrong else (schema["enum"][1] if "enum" in schema else "text")


@settings(max_examples=200, deadline=None)
@given(schemas(), st.data())
def test_condensed_schemas_accept_and_reject_exactly_what_the_full_ones_do(schema, data):
    """Oracle: the jsonschema validator. Annotations never change what validates, so the condensed schema must
    agree with the full one on every instance: a call built from the schema, the same with wrong types, and
    instances missing or adding properties."""
    from modules.tool_definitions.handler import condensed

    tool = ToolSchema("f", "Does f.", {"type": "object", "properties": {"arg": schema}, "required": ["arg"]})
    full, small = tool.to_openai()["function"]["parameters"], condensed(tool).to_openai()["function"]["parameters"]
    good = {"arg": sample(schema)}
    instances = [
        good,
        {"arg": sample(schema, wrong=True)},
        {},
        data.draw(st.dictionaries(st.sampled_from(NAMES), st.integers() | st.text(max_size=3))),
    ]
    if isinstance(good["arg"], dict) and good["arg"]:
        name = data.draw(st.sampled_from(sorted(good["arg"])))
        instances.append({"arg": {k: v for k, v in good["arg"].items() if k != name}})
        instances.append({"arg": {**good["arg"], "unexpected": 1}})
    for instance in instances:
        assert jsonschema.Draft202012Validator(small).is_valid(instance) == jsonschema.Draft202012Validator(
            full
        ).is_valid(instance), instance
