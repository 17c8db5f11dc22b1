"""Name -> factory registries that third-party packages extend through Python entry points.

Three groups, one per kind of part:

    [project.entry-points."agentsim.brains"]      # called as factory(**brain_cfg) -> Brain
    echo = "my_pkg.brains:EchoBrain"
    [project.entry-points."agentsim.memories"]    # called as factory(**opts), plus brain= if it takes one
    notes = "my_pkg.memory:NotesMemory"
    [project.entry-points."agentsim.envs"]        # a gymnasium env class; see envs.registry
    counter = "my_pkg.env:CounterEnv"

Built-ins are registered as "module:attr" strings too, so nothing is imported until a name is
used. Entry points are listed without importing the plugins, again whenever a name is not
found or the names are listed, so a plugin installed while a process runs is seen.
A plugin cannot replace a built-in name: the built-in wins and a warning names the plugin.
"""

from __future__ import annotations

import logging
import pkgutil
from collections.abc import Callable, Iterator
from importlib.metadata import EntryPoint, entry_points
from typing import Generic, TypeVar

log = logging.getLogger(__name__)

BRAIN_GROUP = "agentsim.brains"
MEMORY_GROUP = "agentsim.memories"
# envs: group "agentsim.envs", loaded by `envs.registry` (envs do not import agents)

T = TypeVar("T")
Target = Callable[..., T] | str  # a factory, or "module:attr" naming one (resolved on first use)


class PluginError(ValueError):
    """An unknown name, or a plugin that failed to load; the message lists the known names or names the plugin."""


def plugin_entry_points(group: str) -> list[EntryPoint]:
    """The entry points installed for `group`, without importing them."""
    return list(entry_points(group=group))


def _dist_name(ep: EntryPoint) -> str:
    dist = getattr(ep, "dist", None)
    return f"{dist.name} {dist.version}" if dist is not None else "an installed package"


class Registry(Generic[T]):
    """Factories by name: built-ins registered in code, plugins found through one entry-point group."""

    def __init__(self, kind: str, group: str) -> None:
        self.kind, self.group = kind, group
        self._builtin: dict[str, Target[T]] = {}
        self._plugins: dict[str, EntryPoint] = {}
        self._loaded: dict[str, Callable[..., T]] = {}
        self._scanned = False
        self._warned: set[str] = set()  # each conflict is reported once per process

    def _warn_once(self, key: str, msg: str, *args: object) -> None:
        if key not in self._warned:
            self._warned.add(key)
            log.warning(msg, *args)

    def register(self, name: str, target: Target[T]) -> None:
        """Add a built-in (or, from code, any) factory under `name`; a string target is imported on first use."""
        self._builtin[name] = target
        self._loaded.pop(name, None)

    def unregister(self, name: str) -> None:
        """Remove a name registered in code (plugins come and go with their installed packages)."""
        self._builtin.pop(name, None)
        self._loaded.pop(name, None)

    def refresh(self) -> None:
        """Re-list the entry points (after a plugin was installed or its dist-info put on sys.path)."""
        found: dict[str, EntryPoint] = {}
        for ep in plugin_entry_points(self.group):
            if ep.name in self._builtin:
                self._warn_once(
                    f"builtin:{ep.name}={ep.value}",
                    "%s plugin %r from %s ignored: the name is built in",
                    self.kind,
                    ep.name,
                    _dist_name(ep),
                )
            elif ep.name in found and found[ep.name].value != ep.value:
                self._warn_once(
                    f"twice:{ep.name}={ep.value}",
                    "%s plugin %r defined twice (%s, %s); using the first",
                    self.kind,
                    ep.name,
                    found[ep.name].value,
                    ep.value,
                )
            else:
                found.setdefault(ep.name, ep)
        stale = set(self._plugins) - set(found) | {
            n for n in found if n in self._plugins and found[n] != self._plugins[n]
        }
        for name in stale:
            self._loaded.pop(name, None)
        self._plugins, self._scanned = found, True

    def names(self) -> list[str]:
        """Every known name: built-ins in registration order, then the plugins installed now, sorted."""
        self.refresh()
        return list(self._builtin) + sorted(self._plugins)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and (name in self._builtin or name in self._plugin_names())

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def _plugin_names(self) -> dict[str, EntryPoint]:
        if not self._scanned:
            self.refresh()
        return self._plugins

    def get(self, name: str) -> Callable[..., T]:
        """The factory for `name`; PluginError listing the known names if there is none."""
        if name in self._loaded:
            return self._loaded[name]
        target = self._builtin.get(name)
        if target is None:
            if name not in self._plugin_names():
                self.refresh()  # installed since we last looked?
            ep = self._plugins.get(name)
            if ep is None:
                raise PluginError(f"unknown {self.kind} {name!r}; valid: {', '.join(self.names())}")
            try:
                factory = ep.load()
            except Exception as e:  # any import-time failure of a third-party package
                raise PluginError(
                    f"{self.kind} plugin {name!r} ({ep.value}, from {_dist_name(ep)}) failed to load: "
                    f"{type(e).__name__}: {e}"
                ) from e
        else:
            factory = pkgutil.resolve_name(target) if isinstance(target, str) else target
        if not callable(factory):
            raise PluginError(f"{self.kind} {name!r} is not callable: {factory!r}")
        self._loaded[name] = factory
        return factory
