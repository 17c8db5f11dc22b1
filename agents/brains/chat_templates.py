"""Chat prompt formats for the embedded GGUF models (the Gemma GGUF ships no template).

The prompt text ends where the assistant's reply starts, so a `prefix` such as "Action:"
can be appended and candidate continuations scored after it.
"""

from __future__ import annotations

from agents.brains.base import Message


def gemma(messages: list[Message]) -> str:
    """Gemma 3 turns; the system prompt is folded into the first user turn (Gemma has no system role)."""
    out = ["<bos>"]
    system = "\n\n".join(str(m.get("content") or "") for m in messages if m["role"] == "system")
    first_user = True
    for m in messages:
        role = m["role"]
        if role == "system":
            continue
        content = str(m.get("content") or "")
        if role == "user" and first_user and system:
            content = f"{system}\n\n{content}"
            first_user = False
        turn = "model" if role == "assistant" else "user"
        out.append(f"<start_of_turn>{turn}\n{content}<end_of_turn>\n")
    out.append("<start_of_turn>model\n")
    return "".join(out)


def chatml(messages: list[Message]) -> str:
    """ChatML (SmolLM2, Qwen, ...)."""
    out = []
    for m in messages:
        role = "assistant" if m["role"] == "assistant" else m["role"]
        if role == "tool":
            role = "user"
        out.append(f"<|im_start|>{role}\n{m.get('content') or ''}<|im_end|>\n")
    out.append("<|im_start|>assistant\n")
    return "".join(out)


TEMPLATES = {"gemma": (gemma, ["<end_of_turn>", "<start_of_turn>"]), "chatml": (chatml, ["<|im_end|>", "<|im_start|>"])}


def template_for(model_path: str, architecture: str = "") -> str:
    """Pick the chat format for a GGUF by its file name or architecture (Gemma, else ChatML)."""
    name = model_path.lower()
    if "gemma" in name or architecture.startswith("gemma"):
        return "gemma"
    return "chatml"
