"""Window-type validation and the four shipped types."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from components.context_window.window_type import ContextWindowType, validate_default_flags
from tda.builtins import DEFAULT_TYPES, default_types


def base(**changes):
    data = DEFAULT_TYPES["balanced"].model_dump()
    data.update(changes)
    return data


def errors(data, **context) -> str:
    with pytest.raises(ValidationError) as info:
        ContextWindowType.model_validate(data, context=context or None)
    return str(info.value)


def test_shipped_types_carry_the_reference_figures(builtin_registry):
    balanced = DEFAULT_TYPES["balanced"]
    figures = {m: (s.target_pct, s.min_pct, s.max_pct, s.priority) for m, s in balanced.modules.items()}
    assert figures["system_prompt"] == (10, 5, 15, 95)
    assert figures["tool_definitions"] == (22, 0, 40, 85)
    assert figures["conversation_history"] == (22, 10, 60, 80)
    assert figures["workflow_history"] == (4, 0, 10, 50)
    assert sum(s.target_pct for s in balanced.modules.values()) == 100
    assert balanced.is_default and balanced.output_reserve_pct == 12
    assert [r.describe() for r in balanced.dynamic_adjustments] == [
        "first_turn -> force_full tool_definitions",
        "no_documents_attached -> transfer document_context -> conversation_history",
        "long_conversation(10) -> condense conversation_history",
        "high_confidence_rag(0.85) -> reduce tool_definitions by 50%",
    ]
    assert DEFAULT_TYPES["knowledge_heavy"].active_ids == [
        "system_prompt",
        "conversation_history",
        "rag_context",
        "knowledge_context",
        "document_context",
        "component_instructions",
    ]
    assert DEFAULT_TYPES["token_efficient"].output_reserve_pct == 15
    assert DEFAULT_TYPES["conversation_first"].modules["conversation_history"].target_pct == 50
    assert [t.id for t in default_types() if t.is_default] == ["balanced"]
    for t in DEFAULT_TYPES.values():
        assert set(t.modules) == builtin_registry.builtin_ids


def test_min_target_max_must_be_ordered():
    data = base()
    data["modules"]["rag_context"].update(min_pct=20, target_pct=10)
    assert "min_pct <= target_pct <= max_pct" in errors(data)


@pytest.mark.parametrize("reserve", [-1, 51])
def test_output_reserve_is_between_0_and_50(reserve):
    assert "output_reserve_pct" in errors(base(output_reserve_pct=reserve))


def test_unknown_modules_are_rejected_against_the_registry(builtin_registry):
    data = base()
    data["modules"]["mystery"] = {"target_pct": 1}
    assert "unknown module ids ['mystery']" in errors(data, known_modules=builtin_registry.builtin_ids)
    ContextWindowType.model_validate(data)  # without a registry context the id is not checked


def test_condensation_order_names_only_active_modules_once():
    assert "not active" in errors(base(condensation_order=["conversation_history", "nope"]))
    assert "twice" in errors(base(condensation_order=["rag_context", "rag_context"]))
    kh = DEFAULT_TYPES["knowledge_heavy"].model_dump()
    kh["condensation_order"].append("tool_definitions")  # inactive in Knowledge Heavy
    assert "not active" in errors(kh)


def test_rules_validate_conditions_actions_and_their_modules():
    rule = {
        "condition": {"type": "long_conversation"},
        "action": {"type": "condense", "module": "conversation_history"},
    }
    assert "threshold" in errors(base(dynamic_adjustments=[rule]))
    rule = {"condition": {"type": "first_turn"}, "action": {"type": "transfer", "module": "rag_context", "to": "x"}}
    assert "refers to modules not in this type: ['x']" in errors(base(dynamic_adjustments=[rule]))
    rule = {"condition": {"type": "sometimes"}, "action": {"type": "force_full", "module": "rag_context"}}
    assert "sometimes" in errors(base(dynamic_adjustments=[rule]))


def test_at_most_one_default():
    types = default_types()
    types[1] = types[1].model_copy(update={"is_default": True})
    with pytest.raises(ValueError, match="only one default"):
        validate_default_flags(types)
    validate_default_flags(default_types())


def test_round_trips_through_json():
    for t in DEFAULT_TYPES.values():
        assert ContextWindowType.model_validate_json(t.model_dump_json()) == t


REFERENCE_RULES = [
    {"condition": "high_confidence_rag", "action": {"reduce": "tool_definitions", "by_pct": 50}},
    {"condition": "no_documents_attached", "action": {"transfer": "document_context", "to": "conversation_history"}},
    {"condition": "first_turn", "action": {"force_full": "tool_definitions"}},
    {"condition": "long_conversation", "action": {"condense": "conversation_history"}},
]


def test_the_reference_rule_form_is_accepted_and_stored_in_tdas_form():
    data = DEFAULT_TYPES["balanced"].model_dump() | {"id": "reference", "dynamic_adjustments": REFERENCE_RULES}
    rules = ContextWindowType.model_validate(data).model_dump()["dynamic_adjustments"]
    assert rules[0] == {
        "condition": {"type": "high_confidence_rag", "threshold": 0.85},
        "action": {"type": "reduce", "module": "tool_definitions", "by_pct": 50},
    }
    assert rules[1]["action"] == {"type": "transfer", "module": "document_context", "to": "conversation_history"}
    assert rules[2]["action"] == {"type": "force_full", "module": "tool_definitions"}
    assert rules[3]["condition"] == {"type": "long_conversation", "threshold": 10}
    assert (
        ContextWindowType.model_validate(data | {"dynamic_adjustments": rules}).model_dump()["dynamic_adjustments"]
        == rules
    )


def test_a_shorthand_action_without_a_known_verb_says_what_to_write():
    data = DEFAULT_TYPES["balanced"].model_dump() | {"id": "reference"}
    data["dynamic_adjustments"] = [{"condition": "first_turn", "action": {"shrink": "tool_definitions"}}]
    with pytest.raises(ValidationError, match="reduce, transfer, force_full or condense"):
        ContextWindowType.model_validate(data)


def test_module_options_are_checked_against_each_modules_model_when_saving(builtin_registry):
    data = base()
    data["modules"]["workflow_history"]["config"] = {"max_turns": "lots", "colour": "red"}
    with pytest.raises(ValidationError) as info:
        ContextWindowType.model_validate(data, context=builtin_registry.validation_context())
    errors = {".".join(map(str, e["loc"])): e["msg"] for e in info.value.errors()}
    assert set(errors) == {"modules.workflow_history.config.max_turns", "modules.workflow_history.config.colour"}
    assert "has no option 'colour'" in errors["modules.workflow_history.config.colour"]
    ContextWindowType.model_validate(data)  # reading a stored type checks no options (the handler reports them)


def test_the_shipped_types_pass_every_check_a_saved_type_passes(builtin_registry):
    """Their options match the modules' options models (a shipped option a module does not declare would be
    dropped on every turn), shares fit, strategies exist."""
    for t in default_types():
        ContextWindowType.model_validate(t.model_dump(mode="json"), context=builtin_registry.validation_context())
