"""The one layout every entry point shares (`agents.run`, `agents.collect`, `agents.train`, `prm.train`,
`prm.search`, `prm.dense`, `societies.run`).

`main = hydra_command(config_path, config_name, job, model=...)`: Hydra composes `key=value` overrides, `job`
gets the plain dict and returns an exit code. A user mistake (`ConfigError`, `BrainError`, `ValueError`, a
missing file) is one `error: ...` message on stderr and exit code 2; no traceback.

Unknown keys are ours to report, not Hydra's: every `key=value` (with or without `+`) is passed to Hydra as
`++key=value` (add or override), so a typo reaches the composed config, where `check_keys` walks it against the
command's pydantic model (the source of truth) and names the key, the valid keys at that level and the closest
match. A config group (`env=`, `brain=`, `memory=`) must name one of its presets; a `+`-joined value that is not a
preset (`memory=working+facts`) sets the group's `name` instead.
"""

from __future__ import annotations

import difflib
import logging
import re
import sys
import types
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

if TYPE_CHECKING:
    from envs.plugins import PartSpec

log = logging.getLogger("agents.cli")

Job = Callable[[dict[str, Any]], int]
# Hydra's own flags that take a value (`--cfg job`): the value is not an override
HYDRA_FLAGS_WITH_VALUE = (
    *("--cfg", "-c", "--config-path", "-cp", "--config-name", "-cn", "--config-dir", "-cd"),
    *("--package", "-p", "--info", "-i", "--experimental-rerun", "--shell-completion", "-sc"),
)
_OVERRIDE = re.compile(
    r"^(?P<prefix>\+{0,2}|~)(?P<key>[A-Za-z_][\w.\-]*)(?P<pkg>@[\w.\-]*)?(?P<eq>=?)(?P<value>.*)$", re.S
)
_OPTION = re.compile(r"^[\w.\-+]+$")  # a plain preset name, as opposed to a quoted, list or interpolated value


class UsageError(ValueError):
    """A mistake in how a command was called; exit code 2."""


def user_errors() -> tuple[type[BaseException], ...]:
    """Exceptions that mean the user asked for something wrong (exit 2), not that the program broke."""
    from agents.brains.base import BrainError
    from agents.config import ConfigError

    return (ConfigError, BrainError, UsageError, ValidationError, ValueError, FileNotFoundError)


# -- the valid keys at each level of a command's config ---------------------------------------------------------


@dataclass
class Level:
    """The keys valid at one level of a config: each with the level below it (None: a value, or keys of the
    user's own choosing, as `env.kwargs`). `note` says what chose them (`brain=local`)."""

    keys: dict[str, Level | None] = field(default_factory=dict)
    note: str = ""
    moved: dict[str, str] = field(default_factory=dict)  # old key -> where it lives now (a model's `moved_keys`)


def closest(key: str, valid: Iterable[str], cutoff: float = 0.6) -> str | None:
    """The valid key `key` was most likely meant to be, or None when nothing is close: difflib's ratio against the
    whole key or one of its `_`-separated words (`budjet` -> `budget_tokens`)."""

    def score(candidate: str) -> float:
        words = [candidate, *candidate.split("_")] if "_" in candidate else [candidate]
        return max(difflib.SequenceMatcher(None, key.lower(), w.lower()).ratio() for w in words)

    scored = sorted(((score(c), c) for c in valid), key=lambda sc: (-sc[0], sc[1]))
    return scored[0][1] if scored and scored[0][0] >= cutoff else None


def unknown_key_message(path: list[str], key: str, level: Level) -> str:
    """`unknown key 'brain.temprature' (brain=local); did you mean 'brain.temperature'? valid keys under ...`."""
    dotted = ".".join([*path, key])
    where = f"under {'.'.join(path)!r}" if path else "at the top level"
    note = f" ({level.note})" if level.note else ""
    guess = closest(key, level.keys)
    hint = f"; did you mean {'.'.join([*path, guess])!r}?" if guess else "; no valid key is close to it."
    return f"unknown key {dotted!r}{note}{hint}\n  valid keys {where}: {', '.join(sorted(level.keys))}"


def check_keys(cfg: dict[str, Any], model: type[BaseModel]) -> None:
    """Raise UsageError naming every key of `cfg` (at any depth) that `model` does not have."""
    problems: list[str] = []
    cfg = {k: v for k, v in cfg.items() if k != "hydra"}
    _walk(cfg, level_of(model, cfg), [], problems)
    if problems:
        raise UsageError("\n".join(problems))


def _walk(value: Any, level: Level | None, path: list[str], problems: list[str]) -> None:
    if level is None or not isinstance(value, dict):
        return
    for key, sub in value.items():
        if key in level.moved:
            problems.append(f"{'.'.join([*path, str(key)])} moved to {level.moved[key]}")
        elif key not in level.keys:
            problems.append(unknown_key_message(path, str(key), level))
        else:
            _walk(sub, level.keys[key], [*path, str(key)], problems)


def level_of(model: type[BaseModel], value: Any = None) -> Level | None:
    """The keys `model` accepts; an open model (brain, memory) asks the part its name selects."""
    opener = open_models().get(model) if model.model_config.get("extra") == "allow" else None
    if model.model_config.get("extra") == "allow" and opener is None:
        return None  # keys of the user's choosing
    keys: dict[str, Level | None] = {}
    for name, info in model.model_fields.items():
        sub = value.get(name) if isinstance(value, dict) else None
        nested = _model_in(info.annotation)
        keys[name] = level_of(nested, sub) if nested is not None else None
        if info.alias:
            keys[info.alias] = keys[name]
    extra_fields = getattr(model, "extra_fields", None)  # keys a model takes from its registered parts
    for name, nested_model in (extra_fields() if callable(extra_fields) else {}).items():
        keys[name] = level_of(nested_model, value.get(name) if isinstance(value, dict) else None)
    if opener is None:
        return Level(keys, moved=dict(getattr(model, "moved_keys", {})))
    options = opener(value if isinstance(value, dict) else {})
    if options is None:
        return None
    return Level({**keys, **options.keys}, options.note, dict(getattr(model, "moved_keys", {})))


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The pydantic model a field holds (also inside `X | None`), else None."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        models = [m for m in map(_model_in, typing.get_args(annotation)) if m is not None]
        return models[0] if len(models) == 1 else None
    return None


def _options(spec: PartSpec) -> dict[str, Level | None] | None:
    """A part's options as keys, from its registered options model; None when it takes any (**kwargs)."""
    model = spec.options_model()
    if model.model_config.get("extra") == "allow":
        return None
    return {name: None for name in model.model_fields}


def _brain_options(value: dict[str, Any]) -> Level | None:
    """`brain.*`: the selected brain's constructor options (None, unchecked here, for a name the registry lacks)."""
    from agents.brains.registry import BRAIN_REGISTRY

    name = str(value.get("name", ""))
    try:
        params = _options(BRAIN_REGISTRY.get(name))
    except ValueError:  # unknown or broken brain: building it says so
        return None
    return None if params is None else Level(params, f"brain={name}")


def _memory_options(value: dict[str, Any]) -> Level | None:
    """`memory.*`: the selected memory's options; a composite (`a+b`) takes one mapping per part and `weights`."""
    from agents.memory.registry import MEMORY_REGISTRY

    name = str(value.get("name", "none"))
    parts = [p.strip() for p in name.split("+") if p.strip() and p.strip() != "none"]
    levels: dict[str, Level | None] = {}
    try:
        for part in parts:
            params = _options(MEMORY_REGISTRY.get(part))
            levels[part] = None if params is None else Level(params, f"memory={part}")
    except ValueError:  # unknown or broken memory: building it says so
        return None
    if len(parts) == 1:  # a single memory's options, flat (or nested under its name)
        own = levels[parts[0]]
        return None if own is None else Level({**own.keys, parts[0]: own}, f"memory={name}")
    return Level({**levels, "weights": None}, f"memory={name}") if parts else Level({}, "memory=none")


def open_models() -> dict[type[BaseModel], Callable[[dict[str, Any]], Level | None]]:
    """Open models (extra="allow") whose keys depend on the part their `name` selects."""
    from agents.config import BrainConfig, MemoryConfig

    return {BrainConfig: _brain_options, MemoryConfig: _memory_options}


# -- the command line, before Hydra -----------------------------------------------------------------------------


@dataclass
class Groups:
    """The config groups a command's primary YAML selects (`env: webshop` in its defaults) and their presets;
    `others`: groups on the search path the command does not use (`env` for societies.run), so not its keys."""

    options: dict[str, list[str]]
    others: set[str] = field(default_factory=set)

    @classmethod
    def find(cls, config_dirs: list[Path], config_name: str) -> Groups:
        import yaml
        from hydra.core.config_store import ConfigStore

        primary = yaml.safe_load((config_dirs[0] / f"{config_name}.yaml").read_text(encoding="utf-8")) or {}
        names = []
        for entry in primary.get("defaults", []):
            if isinstance(entry, dict):
                names += [str(k).removeprefix("override ").removeprefix("optional ").strip() for k in entry]
        stored = ConfigStore.instance().repo
        everywhere = {p.name for d in config_dirs for p in d.iterdir() if p.is_dir()}
        everywhere |= {k for k, v in stored.items() if isinstance(v, dict)}
        options = {}
        for group in names:
            found = {p.stem for d in config_dirs for p in (d / group).glob("*.yaml")}
            found |= {k.removesuffix(".yaml") for k in stored.get(group, {}) if isinstance(k, str)}
            options[group] = sorted(found)
        return cls(options, everywhere - set(options))


def prepare_overrides(args: list[str], groups: Groups, model: type[BaseModel]) -> list[str]:
    """The command line for Hydra: config keys as `++key=value`, group choices checked against the presets."""
    out, after_flag = [], False
    for arg in args:
        if after_flag or arg.startswith("-"):
            after_flag = arg in HYDRA_FLAGS_WITH_VALUE
            out.append(arg)
            continue
        m = _OVERRIDE.match(arg)
        if m is None or not m["eq"] or m["prefix"] == "~" or m["key"].split(".")[0] == "hydra":
            out.append(arg)  # Hydra's own grammar and keys: it reports them
            continue
        key, value = m["key"], m["value"]
        if key in groups.options and not m["pkg"]:
            out.append(_group_choice(key, value, groups.options[key]))
        elif key in groups.others:  # Hydra would take it for a group; to this command it is an unknown key
            top = level_of(model) or Level()
            raise UsageError(unknown_key_message([], key, top))
        else:
            out.append(f"++{key}{m['pkg'] or ''}={value}")
    return out


def _group_choice(group: str, value: str, options: list[str]) -> str:
    """`group=value` (also for `+group=`: the group is in the defaults already) when `value` is a preset."""
    if not _OPTION.match(value) or value in options:
        return f"{group}={value}"
    parts = [p for p in value.split("+") if p]
    if len(parts) > 1 and all(p in options for p in parts):  # memory=working+facts: a composite of presets
        return f"++{group}.name={value}"
    guess = closest(value, options)
    hint = f"; did you mean {group}={guess}?" if guess else ""
    raise UsageError(f"unknown {group} {value!r}{hint}\n  valid {group} presets: {', '.join(options)}")


# -- the command ------------------------------------------------------------------------------------------------


def hydra_command(
    config_path: str,
    config_name: str,
    job: Job,
    model: type[BaseModel],
    schemas: dict[str, type[BaseModel]] | None = None,
    search_path: list[Path] | None = None,
) -> Callable[[], None]:
    """Wrap `job` as a Hydra command with the shared key checks, error handling and exit codes.

    `model` is the command's config model: every key of the composed config is checked against it before `job`.
    `schemas` (name -> pydantic model) become config nodes the YAML's defaults list names, so a model's
    defaults are the only ones (default: the run and collect schemas). `search_path` adds config folders whose
    groups the YAML may use (prm.search uses agents.run's env/brain/agent)."""
    import hydra
    from omegaconf import DictConfig, OmegaConf

    @hydra.main(version_base="1.3", config_path=config_path, config_name=config_name)
    def _main(cfg: DictConfig) -> None:
        logging.getLogger("httpx").setLevel(logging.WARNING)  # one INFO line per request would drown the log
        try:
            plain = OmegaConf.to_container(cfg, resolve=True)
            check_keys(plain, model)  # type: ignore[arg-type]
            code = job(plain)  # type: ignore[arg-type]
        except user_errors() as e:
            log.debug("user error", exc_info=True)
            _refuse(e)
        if code:
            sys.exit(code)

    def main() -> None:
        register_schemas(schemas)  # at start, so every part registered by then has its preset
        groups = Groups.find([Path(config_path), *(search_path or [])], config_name)
        try:
            args = prepare_overrides(sys.argv[1:], groups, model)
        except UsageError as e:
            _refuse(e)
        if search_path:
            args.append("hydra.searchpath=[" + ",".join(f"file://{p}" for p in search_path) + "]")
        sys.argv = [sys.argv[0], *args]
        _main()

    return main


def register_schemas(schemas: dict[str, type[BaseModel]] | None = None) -> None:
    """Put models' defaults where Hydra composes configs: `<name>` primary nodes, and the `agent/default` group."""
    from hydra.core.config_store import ConfigStore

    from agents.config import AgentConfig, CollectConfig, RunConfig, schema_defaults

    cs = ConfigStore.instance()
    for name, model in (schemas or {"run_schema": RunConfig, "collect_schema": CollectConfig}).items():
        cs.store(name=name, node=schema_defaults(model))
    cs.store(group="agent", name="default", node=AgentConfig().model_dump())
    _register_plugin_presets(cs)


def _register_plugin_presets(cs: Any) -> None:
    """`env=<name>`, `brain=<name>` and `memory=<name>` work on the command line for every registered part: a
    preset made from its registration (a brain's option defaults, an env's id), unless a YAML file holds one."""
    from agents.brains.registry import BRAIN_REGISTRY, brain_names
    from agents.config import EnvConfig
    from agents.memory.registry import memory_names
    from envs.registry import ENV_REGISTRY, env_names

    conf = Path(__file__).parent / "conf"
    presets: dict[str, dict[str, Any]] = {}
    for name in brain_names():
        presets[f"brain/{name}"] = {"name": name, **_brain_defaults(BRAIN_REGISTRY, name)}
    for name in memory_names():
        presets[f"memory/{name}"] = {"name": name}
    env_defaults = {k: f.get_default(call_default_factory=True) for k, f in EnvConfig.model_fields.items()}
    for name in env_names():
        presets[f"env/{name}"] = {**env_defaults, "name": name, "id": ENV_REGISTRY.get(name).id}
    for key, node in presets.items():
        group, name = key.split("/", 1)
        if not (conf / group / f"{name}.yaml").exists():
            cs.store(group=group, name=name, node=node)


def _brain_defaults(registry: Any, name: str) -> dict[str, Any]:
    """A brain's option defaults for its preset; none for a plugin that fails to load (it fails when used)."""
    try:
        return dict(registry.get(name).option_defaults())
    except ValueError:  # PluginError: named when the brain is built
        return {}


def _refuse(e: BaseException) -> typing.NoReturn:
    print(f"error: {e}", file=sys.stderr)
    sys.exit(2)
