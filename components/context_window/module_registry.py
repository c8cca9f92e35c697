"""Discovery and lifecycle of context modules: load, precedence, install, activate, purge, reload."""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.metadata
import importlib.util
import shutil
import sys
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pluggy
from pydantic import ValidationError

from . import hookspecs
from .base import ContextModule, ModuleManifest
from .window_type import ContextWindowType

PRECEDENCE = {"builtin": 0, "pack": 1, "user": 2}


class ModuleLoadError(Exception):
    """A module could not be loaded; the message says which and why."""


@dataclass(frozen=True)
class LoadError:
    name: str
    source: str
    error: str

    def to_dict(self) -> dict[str, str]:
        return asdict(self)


@dataclass(frozen=True)
class ModuleDefinition:
    manifest: ModuleManifest
    cls: type[ContextModule]
    source: str
    path: Path | None = None


@dataclass(frozen=True)
class ModuleInfo:
    module_id: str
    display_name: str
    version: str
    description: str
    category: str
    source: str
    active: bool
    capabilities: dict[str, bool]
    applicability: dict[str, Any]
    defaults: dict[str, Any]
    path: str | None
    status: dict[str, Any]
    options_schema: dict[str, Any] | None
    """The JSON schema of the module's options model (what a type's slot ``config`` may hold); None: undeclared."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def load_folder(path: Path, source: str) -> ModuleDefinition:
    """Validate ``path/manifest.json`` first, then import the handler it names."""
    manifest_file = path / "manifest.json"
    try:
        manifest = ModuleManifest.model_validate_json(manifest_file.read_bytes())
    except FileNotFoundError:
        raise ModuleLoadError(f"{path.name}: no manifest.json in {path}") from None
    except ValidationError as exc:
        raise ModuleLoadError(f"{path.name}: invalid manifest.json: {_first_errors(exc)}") from None
    if manifest.handler is None:
        raise ModuleLoadError(f"{manifest.module_id}: manifest.json names no handler {{file, class}}")
    handler_file = path / manifest.handler.file
    if not handler_file.is_file():
        raise ModuleLoadError(f"{manifest.module_id}: handler file {manifest.handler.file} not found in {path}")
    package = f"tda_context_modules.{source}.{manifest.module_id}"
    try:
        code = _import_as_package(package, path, handler_file)
    except Exception as exc:
        raise ModuleLoadError(f"{manifest.module_id}: importing {handler_file.name} failed: {exc!r}") from exc
    return ModuleDefinition(manifest, _module_class(code, manifest), source, path)


def _import_as_package(package: str, folder: Path, handler_file: Path) -> Any:
    """Import ``handler_file`` as ``<package>.<stem>``, ``package`` being ``folder``: so a helper file beside the
    handler imports relatively (``from .helper import x``). A reload forgets the previous import of the folder."""
    for name in [n for n in sys.modules if n == package or n.startswith(package + ".")]:
        del sys.modules[name]
    _ensure_namespace(package.rpartition(".")[0])
    init = folder / "__init__.py"
    if init.is_file():
        spec = importlib.util.spec_from_file_location(package, init, submodule_search_locations=[str(folder)])
    else:
        spec = importlib.machinery.ModuleSpec(package, None, is_package=True)
        spec.submodule_search_locations = [str(folder)]
    assert spec is not None
    sys.modules[package] = importlib.util.module_from_spec(spec)  # dataclasses and pickling look modules up here
    try:
        if spec.loader is not None:
            spec.loader.exec_module(sys.modules[package])
        dotted = ".".join(handler_file.relative_to(folder).with_suffix("").parts)
        return importlib.import_module(f"{package}.{dotted}")
    except BaseException:
        for name in [n for n in sys.modules if n == package or n.startswith(package + ".")]:
            del sys.modules[name]
        raise


def _ensure_namespace(name: str) -> None:
    """Empty parent packages (``tda_context_modules``, ``tda_context_modules.user``) for the module packages."""
    parts = name.split(".")
    for i in range(1, len(parts) + 1):
        dotted = ".".join(parts[:i])
        if dotted not in sys.modules:
            spec = importlib.machinery.ModuleSpec(dotted, None, is_package=True)
            spec.submodule_search_locations = []
            sys.modules[dotted] = importlib.util.module_from_spec(spec)


def _module_class(code: Any, manifest: ModuleManifest) -> type[ContextModule]:
    assert manifest.handler is not None
    cls = getattr(code, manifest.handler.class_, None)
    if not (isinstance(cls, type) and issubclass(cls, ContextModule)):
        raise ModuleLoadError(
            f"{manifest.module_id}: {manifest.handler.file} defines no ContextModule subclass "
            f"named {manifest.handler.class_!r}"
        )
    return cls


def _first_errors(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(map(str, e['loc'])) or 'manifest'}: {e['msg']}" for e in exc.errors()[:5])


def _module_dirs(folder: Path) -> Iterator[Path]:
    """``folder`` itself if it is a module, else its sub-folders that look like modules."""
    if (folder / "manifest.json").is_file():
        yield folder
    elif folder.is_dir():
        for child in sorted(folder.iterdir()):
            if child.is_dir() and not child.name.startswith((".", "_")):
                yield child


class _FolderPlugin:
    def __init__(self, folder: Path) -> None:
        self.folder = folder

    @hookspecs.hookimpl
    def tda_module_folders(self) -> list[Path]:
        return [self.folder]


class ModuleRegistry:
    """Owns the plugin manager and the policy: which module wins, what is active, what failed."""

    def __init__(
        self,
        *,
        builtin: str | object | None = None,
        user_dir: Path | None = None,
        entry_point_group: str | None = hookspecs.ENTRY_POINT_GROUP,
        plugins: Iterable[tuple[str, object]] = (),
    ) -> None:
        self.builtin = builtin
        """The application's built-in plugin, or its import name, registered under the name ``builtin`` with the
        lowest precedence (tda passes its ``modules`` package: tda/builtins.py); ``None``: none."""
        self.user_dir = user_dir
        self.entry_point_group = entry_point_group
        self.extra_plugins = list(plugins)
        """``(name, plugin)`` pairs registered as packs (tests and embedding applications)."""
        self.definitions: dict[str, ModuleDefinition] = {}
        self.modules: dict[str, ContextModule] = {}
        self.load_errors: list[LoadError] = []
        self._inactive: set[str] = set()
        self._loaded = False
        self.builtin_ids: set[str] = set()
        """Every module id the built-in plugin offers, loaded or not (a type naming one is never a typo)."""

    @classmethod
    def from_modules(cls, modules: Iterable[ContextModule]) -> ModuleRegistry:
        """A registry over ready-made module objects (no discovery): for tests and embedding."""
        registry = cls(builtin=None, entry_point_group=None)
        for module in modules:
            registry.modules[module.module_id] = module
            registry.definitions[module.module_id] = ModuleDefinition(module.manifest, type(module), "pack")
        registry._loaded = True
        return registry

    # -- discovery -------------------------------------------------------------------------------

    def load(self) -> ModuleRegistry:
        self.load_errors = []
        pm = self._plugin_manager()
        candidates: list[ModuleDefinition] = []
        for name, source, plugin in self._plugins(pm):
            candidates.extend(self._collect(pm, name, source, plugin))
        self.builtin_ids = {d.manifest.module_id for d in candidates if d.source == "builtin"}
        self.builtin_ids |= {e.name for e in self.load_errors if e.source == "builtin"}
        chosen: dict[str, ModuleDefinition] = {}
        for definition in sorted(candidates, key=lambda d: PRECEDENCE[d.source]):
            chosen[definition.manifest.module_id] = definition  # later (higher precedence) wins
        self.definitions, self.modules = {}, {}
        for module_id, definition in sorted(chosen.items()):
            try:
                self.modules[module_id] = definition.cls(definition.manifest)
                self.definitions[module_id] = definition
            except Exception as exc:
                self.load_errors.append(LoadError(module_id, definition.source, f"constructor failed: {exc!r}"))
        self._loaded = True
        return self

    def _plugin_manager(self) -> pluggy.PluginManager:
        pm = pluggy.PluginManager(hookspecs.PROJECT)
        pm.add_hookspecs(hookspecs)
        builtin = self._builtin_plugin()
        if builtin is not None:
            pm.register(builtin, name="builtin")
        for name, plugin in self._entry_point_plugins():
            pm.register(plugin, name=f"pack:{name}")
        for name, plugin in self.extra_plugins:
            pm.register(plugin, name=f"pack:{name}")
        if self.user_dir is not None:
            pm.register(_FolderPlugin(self.user_dir), name="user")
        return pm

    def _builtin_plugin(self) -> object | None:
        if not isinstance(self.builtin, str):
            return self.builtin
        try:
            return importlib.import_module(self.builtin)
        except Exception as exc:
            self._record(LoadError(self.builtin, "builtin", f"the built-in plugin failed to load: {exc!r}"))
            return None

    def _entry_point_plugins(self) -> Iterator[tuple[str, object]]:
        if not self.entry_point_group:
            return
        for ep in importlib.metadata.entry_points(group=self.entry_point_group):
            try:
                yield ep.name, ep.load()
            except Exception as exc:
                self._record(LoadError(ep.name, "pack", f"entry point failed to load: {exc!r}"))

    def _plugins(self, pm: pluggy.PluginManager) -> Iterator[tuple[str, str, object]]:
        for name, plugin in pm.list_name_plugin():
            yield name, name.split(":", 1)[0], plugin

    def _collect(self, pm: pluggy.PluginManager, name: str, source: str, plugin: object) -> list[ModuleDefinition]:
        """Everything one plugin offers; each failure is recorded with the plugin's and module's name."""
        found: list[ModuleDefinition] = []
        for impl in pm.hook.tda_module_folders.get_hookimpls():
            if impl.plugin is plugin:
                for folder in self._call(impl, name, source) or ():
                    for module_dir in _module_dirs(Path(folder)):
                        self._try(found, name, source, lambda d=module_dir: load_folder(d, source))
        for impl in pm.hook.tda_context_modules.get_hookimpls():
            if impl.plugin is plugin:
                for manifest, cls in self._call(impl, name, source) or ():
                    self._try(found, name, source, lambda m=manifest, c=cls: _code_definition(m, c, source))
        return found

    def _call(self, impl: Any, name: str, source: str) -> Any:
        try:
            return impl.function()
        except Exception as exc:
            self._record(LoadError(name, source, f"{impl.function.__name__} failed: {exc!r}"))
            return None

    def _record(self, error: LoadError) -> None:
        if error not in self.load_errors:  # window_types() may meet the same broken plugin again
            self.load_errors.append(error)

    def _try(self, found: list[ModuleDefinition], name: str, source: str, load: Any) -> None:
        try:
            found.append(load())
        except ModuleLoadError as exc:
            self.load_errors.append(LoadError(str(exc).split(":", 1)[0], source, str(exc)))
        except Exception as exc:
            self.load_errors.append(LoadError(name, source, repr(exc)))

    def window_types(self) -> list[ContextWindowType]:
        """The window types the plugins ship (``tda_window_types``), by id, higher precedence winning; each is
        validated as a stored type is (the installed modules check it when it is saved)."""
        pm = self._plugin_manager()
        types: dict[str, ContextWindowType] = {}
        for name, source, plugin in sorted(self._plugins(pm), key=lambda p: PRECEDENCE[p[1]]):
            for impl in pm.hook.tda_window_types.get_hookimpls():
                if impl.plugin is plugin:
                    for item in self._call(impl, name, source) or ():
                        try:
                            t = ContextWindowType.model_validate(item)
                        except ValidationError as exc:
                            self._record(LoadError(name, source, f"window type invalid: {_first_errors(exc)}"))
                        else:
                            types[t.id] = t
        return list(types.values())

    def _ensure_loaded(self) -> None:
        if not self._loaded:
            self.load()

    # -- lookup (the handler's ModuleSource protocol) ----------------------------------------------

    def get(self, module_id: str) -> ContextModule | None:
        self._ensure_loaded()
        return self.modules.get(module_id)

    def is_active(self, module_id: str) -> bool:
        return module_id not in self._inactive

    def known_ids(self) -> set[str]:
        self._ensure_loaded()
        return set(self.modules)

    def validation_context(self, also_known: Iterable[str] = ()) -> dict[str, Any]:
        """What ``ContextWindowType.model_validate(data, context=...)`` needs from the installed modules to
        check a type being saved: module ids, the floor, each module's options model."""
        self._ensure_loaded()
        return {
            "known_modules": set(self.modules) | self.builtin_ids | set(also_known),
            "non_condensable": {
                m for m, module in self.modules.items() if not module.manifest.capabilities.condensable
            },
            "module_options": {m: model for m, module in self.modules.items() if (model := module.options_model)},
            "on_save": True,
        }

    def infos(self) -> list[ModuleInfo]:
        self._ensure_loaded()
        return [self.info(m) for m in sorted(self.modules)]

    def info(self, module_id: str) -> ModuleInfo:
        module, definition = self._require(module_id), self.definitions[module_id]
        m = definition.manifest
        return ModuleInfo(
            module_id=module_id,
            display_name=m.display_name,
            version=m.version,
            description=m.description,
            category=m.category,
            source=definition.source,
            active=self.is_active(module_id),
            capabilities=m.capabilities.model_dump(),
            applicability=m.applicability.model_dump(),
            defaults=m.defaults.model_dump(),
            path=str(definition.path) if definition.path else None,
            status=module.get_status(),
            options_schema=module.options_model.model_json_schema() if module.options_model else None,
        )

    # -- lifecycle -------------------------------------------------------------------------------

    def activate(self, module_id: str) -> None:
        self._require(module_id)
        self._inactive.discard(module_id)

    def deactivate(self, module_id: str) -> None:
        module = self._require(module_id)
        if module.manifest.applicability.required:
            raise ValueError(f"{module_id} is required and cannot be deactivated")
        self._inactive.add(module_id)

    async def purge(self, module_id: str, session_id: str, user_id: str) -> dict[str, Any]:
        module = self._require(module_id)
        if not module.manifest.capabilities.purgeable:
            raise ValueError(f"{module_id} keeps nothing to purge (capabilities.purgeable is false)")
        return await module.purge(session_id, user_id)

    def reload(self) -> ModuleRegistry:
        return self.load()

    def install(self, path: Path) -> ModuleInfo:
        """Copy a module folder into the user folder after checking that it loads."""
        if self.user_dir is None:
            raise ValueError("no user module folder is configured (TDA_MODULES_DIR)")
        path = Path(path)
        with tempfile.TemporaryDirectory() as scratch:  # load a copy, so a failed import leaves nothing behind
            probe = Path(scratch) / path.name
            shutil.copytree(path, probe)
            try:
                definition = load_folder(probe, "user")
            except ModuleLoadError as exc:
                raise ValueError(str(exc)) from None
        target = self.user_dir / definition.manifest.module_id
        self.user_dir.mkdir(parents=True, exist_ok=True)
        staging = target.with_name(f".{target.name}.installing")
        shutil.rmtree(staging, ignore_errors=True)
        shutil.copytree(path, staging)
        shutil.rmtree(target, ignore_errors=True)
        staging.rename(target)
        self.load()
        return self.info(definition.manifest.module_id)

    def uninstall(self, module_id: str) -> None:
        self._require(module_id)
        definition = self.definitions[module_id]
        if definition.source == "builtin":
            raise ValueError(f"{module_id} is built in and cannot be uninstalled; deactivate it instead")
        if definition.source == "pack":
            raise ValueError(f"{module_id} comes from an installed package; uninstall that package with pip")
        assert definition.path is not None
        shutil.rmtree(definition.path)
        self.load()

    def _require(self, module_id: str) -> ContextModule:
        self._ensure_loaded()
        try:
            return self.modules[module_id]
        except KeyError:
            raise KeyError(f"no module {module_id!r}; installed: {sorted(self.modules)}") from None


def _code_definition(manifest: Any, cls: type, source: str) -> ModuleDefinition:
    try:
        validated = manifest if isinstance(manifest, ModuleManifest) else ModuleManifest.model_validate(manifest)
    except ValidationError as exc:
        name = manifest.get("module_id", "?") if isinstance(manifest, dict) else "?"
        raise ModuleLoadError(f"{name}: {_first_errors(exc)}") from None
    if not (isinstance(cls, type) and issubclass(cls, ContextModule)):
        raise ModuleLoadError(f"{validated.module_id}: {cls!r} is not a ContextModule subclass")
    return ModuleDefinition(validated, cls, source)
