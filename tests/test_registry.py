"""Discovery, precedence (builtin < pack < user), load-error reporting and the module lifecycle."""

from __future__ import annotations

import ast
import importlib.metadata
import shutil
from pathlib import Path

import pytest

from components.context_window.base import AssemblyContext, Profile, Session
from components.context_window.module_registry import ModuleRegistry
from tda.builtins import module_registry

FIXTURES = Path(__file__).parent / "modules"


@pytest.fixture
def user_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "user_modules"
    folder.mkdir()
    return folder


def fake_entry_points(monkeypatch: pytest.MonkeyPatch, *values: tuple[str, str]) -> None:
    eps = [importlib.metadata.EntryPoint(name, value, "tda.context_modules") for name, value in values]
    real = importlib.metadata.entry_points
    monkeypatch.setattr(
        importlib.metadata,
        "entry_points",
        lambda **kw: eps if kw.get("group") == "tda.context_modules" else real(**kw),
    )


def test_builtin_modules_load_with_their_manifests(builtin_registry):
    loaded = set(builtin_registry.modules)
    assert {"system_prompt", "tool_definitions", "conversation_history"} <= loaded == builtin_registry.builtin_ids
    info = builtin_registry.info("system_prompt")
    assert info.source == "builtin" and info.capabilities["condensable"] is False
    assert builtin_registry.load_errors == []


def test_broken_modules_are_reported_by_name_and_never_stop_the_others(user_dir):
    for name in ("good_echo", "broken_json", "no_handler", "import_error", "wrong_class"):
        shutil.copytree(FIXTURES / name, user_dir / name)
    registry = module_registry(user_dir=user_dir, entry_point_group=None).load()
    assert "good_echo" in registry.modules and "system_prompt" in registry.modules
    errors = {e.name: e.error for e in registry.load_errors}
    assert set(errors) == {"broken_json", "no_handler", "import_error", "wrong_class"}
    assert "invalid manifest.json" in errors["broken_json"]
    assert "handler file handler.py not found" in errors["no_handler"]
    assert "a_package_that_does_not_exist" in errors["import_error"]
    assert "no ContextModule subclass named 'NotAModule'" in errors["wrong_class"]
    assert all(e.source == "user" for e in registry.load_errors)


def test_precedence_is_builtin_then_pack_then_user(monkeypatch, user_dir):
    fake_entry_points(monkeypatch, ("demo", "tests.packs.demo_pack"))
    with_pack = module_registry().load()
    assert with_pack.info("system_prompt").source == "pack"
    assert with_pack.info("pack_extra").source == "pack"
    shutil.copytree(FIXTURES / "system_prompt_override", user_dir / "system_prompt")
    with_user = module_registry(user_dir=user_dir).load()
    assert with_user.info("system_prompt").source == "user"
    assert with_user.info("system_prompt").version == "9.0.0"
    assert with_user.info("tool_definitions").source == "builtin"


def test_a_pack_that_fails_to_load_is_named(monkeypatch):
    fake_entry_points(monkeypatch, ("broken_pack", "tests.packs.no_such_module"))
    registry = module_registry().load()
    assert [(e.name, e.source) for e in registry.load_errors] == [("broken_pack", "pack")]
    assert "system_prompt" in registry.modules


def test_install_validates_then_copies_and_uninstall_removes(user_dir):
    registry = module_registry(user_dir=user_dir, entry_point_group=None).load()
    info = registry.install(FIXTURES / "good_echo")
    assert (info.module_id, info.source, info.version) == ("good_echo", "user", "2.0.0")
    assert (user_dir / "good_echo" / "manifest.json").is_file()
    registry.uninstall("good_echo")
    assert "good_echo" not in registry.modules and not (user_dir / "good_echo").exists()


def test_install_of_a_broken_module_writes_nothing(user_dir):
    registry = module_registry(user_dir=user_dir, entry_point_group=None).load()
    with pytest.raises(ValueError, match="a_package_that_does_not_exist"):
        registry.install(FIXTURES / "import_error")
    assert list(user_dir.iterdir()) == []


def test_builtins_cannot_be_uninstalled_and_required_cannot_be_deactivated(builtin_registry):
    with pytest.raises(ValueError, match="built in"):
        builtin_registry.uninstall("tool_definitions")
    with pytest.raises(ValueError, match="required"):
        builtin_registry.deactivate("system_prompt")
    with pytest.raises(KeyError, match="no module 'nope'"):
        builtin_registry.activate("nope")


def test_activate_deactivate_and_purge(user_dir):
    shutil.copytree(FIXTURES / "good_echo", user_dir / "good_echo")
    registry = module_registry(user_dir=user_dir, entry_point_group=None).load()
    registry.deactivate("good_echo")
    assert not registry.is_active("good_echo") and registry.info("good_echo").active is False
    registry.activate("good_echo")
    assert registry.is_active("good_echo")


async def test_purge_reaches_the_module(user_dir):
    shutil.copytree(FIXTURES / "good_echo", user_dir / "good_echo")
    registry = module_registry(user_dir=user_dir, entry_point_group=None).load()
    assert await registry.purge("good_echo", "s1", "u1") == {"purged": 1, "session_id": "s1"}
    with pytest.raises(ValueError, match="purgeable is false"):
        await registry.purge("system_prompt", "s1", "u1")


def test_reload_picks_up_new_folders_and_keeps_activation_state(user_dir):
    registry = module_registry(user_dir=user_dir, entry_point_group=None).load()
    registry.deactivate("tool_definitions")
    shutil.copytree(FIXTURES / "good_echo", user_dir / "good_echo")
    registry.reload()
    assert "good_echo" in registry.modules
    assert not registry.is_active("tool_definitions")


async def test_a_helper_file_beside_the_handler_imports_and_a_reload_rereads_it(user_dir):
    ctx = AssemblyContext(query="q", profile=Profile(id="p"), session=Session(id="s"), model="gpt-4o")
    shutil.copytree(FIXTURES / "with_helper", user_dir / "with_helper")
    registry = module_registry(user_dir=user_dir, entry_point_group=None).load()
    assert registry.load_errors == []
    assert (await registry.get("with_helper").contribute(100, ctx)).text() == "from the helper file"
    (user_dir / "with_helper" / "wording.py").write_text('GREETING = "changed on disk"\n')
    registry.reload()
    assert (await registry.get("with_helper").contribute(100, ctx)).text() == "changed on disk"


def test_built_in_modules_and_types_come_through_the_plugin_hooks_like_a_packs(monkeypatch):
    fake_entry_points(monkeypatch, ("demo", "tests.packs.demo_pack"))
    registry = module_registry().load()
    types = {t.id: t for t in registry.window_types()}
    assert set(types) == {"balanced", "knowledge_heavy", "conversation_first", "token_efficient", "pack_type"}
    assert types["pack_type"].modules["pack_extra"].target_pct == 10
    bare = ModuleRegistry(builtin=None, entry_point_group=None).load()  # the component ships no module of its own
    assert bare.modules == {} and bare.window_types() == []


def test_the_component_names_no_built_in_module(builtin_registry):
    """Adding a built-in module never means editing the component: no code there holds a built-in module's id
    (docstrings and messages may mention one as an example)."""
    component = Path(__file__).resolve().parents[1] / "components" / "context_window"
    named = []
    for source in sorted(component.glob("*.py")):
        for node in ast.walk(ast.parse(source.read_text())):
            if isinstance(node, ast.Constant) and node.value in builtin_registry.builtin_ids:
                named.append(f"{source.name}:{node.lineno} {node.value!r}")
    assert named == []
