"""One small shopping prompt and its candidate actions, shared by the embedded-brain tests."""

from __future__ import annotations

MSGS = [
    {"role": "system", "content": "You are a shopping agent. Reply with one action."},
    {
        "role": "user",
        "content": "Task: buy a red cotton t-shirt under 20 dollars.\nObservation: [B01] Red cotton "
        "T-shirt $12; [B02] Blue denim jeans $40.\nAvailable actions:\n- click[B01]\n- click[B02]",
    },
]
CANDS = ["click[B01]", "click[B02]", "click[next >]", "click[back to search]"]
