"""One registry pattern for every kind of part: envs, brains, memories, society scenarios, recommenders.

A part declares itself where it is defined, with its kind's decorator (as inspect_ai's `@solver`):

    @register_brain("echo", in_process=False)
    class EchoBrain: ...

The decorator records a *spec*: the name, what builds the part (`target`), its options model and the
facts generic code needs (a brain runs in this process, a memory carries state across episodes, an env's
step limit and what a server client may set). Generic code asks the spec, never a tuple of names.

Where registrations come from, all through the same decorators:
- the project's own parts: the modules of the kind's packages that use the decorator are imported on
  first use (so adding a part is one new module, no list to edit);
- any module imported by the process (a test module, a notebook);
- third-party packages, through one entry-point group per kind (`agentsim.brains`, ...). The entry
  point names the part's class or function; if it is not decorated, it is registered with the kind's
  default facts. Entry points are listed without importing the plugins, again whenever a name is not
  found, so a plugin installed while a process runs is seen. A plugin cannot take a built-in name:
  the built-in wins and a warning names the plugin.

This module sits at the ground floor (envs import nothing above it), so every layer can use it.
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib
import importlib.util
import inspect
import logging
import pkgutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, create_model

log = logging.getLogger(__name__)


class PluginError(ValueError):
    """An unknown name, or a plugin that failed to load; the message lists the known names or names the plugin."""


@dataclass(frozen=True)
class PartSpec:
    """One registration: the part's name, what builds it, and its options model (None: the target's parameters)."""

    name: str
    target: Any
    options: type[BaseModel] | None = None

    @property
    def where(self) -> str:
        """`module:qualname` of the target (what a Gymnasium entry point or an error message names)."""
        t = self.target
        return f"{getattr(t, '__module__', '?')}:{getattr(t, '__qualname__', type(t).__name__)}"

    def options_model(self) -> type[BaseModel]:
        """The options model: the declared one, else one made from the target's keyword parameters."""
        return self.options if self.options is not None else signature_model(self.target)

    def option_defaults(self) -> dict[str, Any]:
        """The options' defaults, JSON-able (what a config preset for this part holds)."""
        model = self.options_model()
        return {
            k: f.get_default(call_default_factory=True)
            for k, f in model.model_fields.items()
            if not f.is_required() and _plain(f.get_default(call_default_factory=True))
        }


def _plain(v: Any) -> bool:
    return (
        v is None
        or isinstance(v, (str, int, float, bool))
        or (isinstance(v, (list, dict)) and all(_plain(x) for x in (v.values() if isinstance(v, dict) else v)))
    )


def signature_model(target: Any) -> type[BaseModel]:
    """A model with one field per keyword parameter of `target` (values unchecked: the target checks them)."""
    try:
        params = inspect.signature(target).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature: nothing to name
        params = []  # type: ignore[assignment]
    fields: dict[str, Any] = {}
    for p in params:
        if p.kind in (p.POSITIONAL_ONLY, p.VAR_POSITIONAL, p.VAR_KEYWORD) or p.name in ("self", "brain"):
            continue
        fields[p.name] = (Any, ... if p.default is p.empty else p.default)
    takes_any = any(p.kind is p.VAR_KEYWORD for p in params)
    config = ConfigDict(extra="allow" if takes_any else "forbid", arbitrary_types_allowed=True)
    return create_model(f"{getattr(target, '__name__', 'Part')}Options", __config__=config, **fields)


def closest(name: str, valid: list[str]) -> str:
    """` (did you mean 'x'?)` when one valid name is close to `name`, else ''."""
    match = difflib.get_close_matches(name, valid, n=1)
    return f" (did you mean {match[0]!r}?)" if match else ""


def _dist_name(ep: EntryPoint) -> str:
    dist = getattr(ep, "dist", None)
    return f"{dist.name} {dist.version}" if dist is not None else "an installed package"


S = TypeVar("S", bound=PartSpec)


class Registry(Generic[S]):
    """Specs by name: the project's (found in `packages` by their `marker`), any registered in code, and
    plugins found through one entry-point group."""

    def __init__(
        self, kind: str, group: str, packages: tuple[str, ...], marker: str, default_spec: Callable[[str, Any], S]
    ) -> None:
        self.kind, self.group, self.packages, self.marker = kind, group, packages, marker
        self.default_spec = default_spec  # the spec of a plugin target that did not declare itself
        self._specs: dict[str, S] = {}
        self._plugins: dict[str, EntryPoint] = {}
        self._discovered = self._scanned = False
        self._warned: set[str] = set()  # each conflict is reported once per process

    # -- registering
    def add(self, spec: S) -> S:
        """Register `spec`; a name already taken by another target keeps its first owner (with a warning)."""
        old = self._specs.get(spec.name)
        if old is not None and old.where != spec.where:
            self._warn_once(
                f"taken:{spec.name}={spec.where}",
                "%s %r from %s ignored: the name is taken by %s",
                self.kind,
                spec.name,
                spec.where,
                old.where,
            )
            return old
        self._specs[spec.name] = spec
        return spec

    def remove(self, name: str) -> None:
        """Forget a name registered in code (plugins come and go with their installed packages)."""
        self._specs.pop(name, None)

    def register(self, name: str, target: Any) -> S:
        """Register a target that does not declare itself (a class, a function, or "module:attr"), default facts."""
        obj = pkgutil.resolve_name(target) if isinstance(target, str) else target
        self.discover()
        return self.add(self.default_spec(name, obj))

    unregister = remove

    def _warn_once(self, key: str, msg: str, *args: object) -> None:
        if key not in self._warned:
            self._warned.add(key)
            log.warning(msg, *args)

    # -- finding the project's parts
    def discover(self) -> None:
        """Import, once, the modules of this kind's packages that declare a part (their source uses `marker`)."""
        if self._discovered:
            return
        self._discovered = True
        for package in self.packages:
            spec = importlib.util.find_spec(package)
            for root in (spec.submodule_search_locations or []) if spec else []:
                for module in _declaring_modules(Path(root), package, self.marker):
                    importlib.import_module(module)

    # -- plugins
    def refresh(self) -> None:
        """Re-list the entry points (after a plugin was installed or its dist-info put on sys.path)."""
        self.discover()
        found: dict[str, EntryPoint] = {}
        for ep in entry_points(group=self.group):
            taken = self._specs.get(ep.name)
            if taken is not None and taken.where != ep.value:
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
            elif taken is None:
                found.setdefault(ep.name, ep)
        self._plugins, self._scanned = found, True

    def _load(self, ep: EntryPoint) -> S:
        try:
            target = ep.load()  # a decorated target registers itself here
        except Exception as e:  # any import-time failure of a third-party package
            raise PluginError(
                f"{self.kind} plugin {ep.name!r} ({ep.value}, from {_dist_name(ep)}) failed to load: "
                f"{type(e).__name__}: {e}"
            ) from e
        declared = self._specs.get(ep.name) or next((s for s in self._specs.values() if s.target is target), None)
        spec = dataclasses.replace(declared, name=ep.name) if declared else self.default_spec(ep.name, target)
        if not callable(spec.target):
            raise PluginError(f"{self.kind} {ep.name!r} is not callable: {spec.target!r}")
        self._plugins.pop(ep.name, None)
        return self.add(spec)

    # -- asking
    def names(self) -> list[str]:
        """Every known name: the project's (sorted), those registered in code elsewhere (in order), then
        installed plugins (sorted)."""
        self.refresh()
        own = sorted(n for n, spec in self._specs.items() if self._is_project(spec))
        others = [n for n, spec in self._specs.items() if not self._is_project(spec)]
        return own + others + sorted(self._plugins)

    def _is_project(self, spec: S) -> bool:
        module = str(getattr(spec.target, "__module__", ""))
        return any(module == p or module.startswith(p + ".") for p in self.packages)

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        self.discover()
        if name in self._specs:
            return True
        if not self._scanned:
            self.refresh()
        return name in self._plugins

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def get(self, name: str) -> S:
        """The spec of `name` (loading its plugin if need be); PluginError listing the known names if there is none."""
        self.discover()
        spec = self._specs.get(name)
        if spec is not None:
            return spec
        if name not in self._plugins:
            self.refresh()  # installed since we last looked?
        ep = self._plugins.get(name)
        if ep is None:
            names = self.names()
            raise PluginError(f"unknown {self.kind} {name!r}{closest(name, names)}; valid: {', '.join(names)}")
        return self._load(ep)

    def loaded(self) -> dict[str, S]:
        """The specs registered so far (the project's, code's, plugins already loaded), without loading more."""
        self.discover()
        return dict(self._specs)

    def specs(self) -> list[S]:
        """Every spec, plugins loaded."""
        return [self.get(n) for n in self.names()]


def _declaring_modules(root: Path, package: str, marker: str) -> list[str]:
    """Modules under `root` (and its direct subpackages) whose source contains `marker`, by dotted name, sorted."""
    out = []
    files = sorted(root.glob("*.py")) + sorted(p for p in root.glob("*/*.py") if (p.parent / "__init__.py").exists())
    for path in files:
        try:
            if marker not in path.read_text(encoding="utf-8"):
                continue
        except OSError:
            continue
        rel = path.relative_to(root).with_suffix("").parts
        out.append(".".join((package, *rel[:-1])) if rel[-1] == "__init__" else ".".join((package, *rel)))
    return out
