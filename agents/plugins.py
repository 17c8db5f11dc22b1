"""The entry-point groups of the agent's parts; the registry itself is `envs.plugins` (the ground floor).

    [project.entry-points."agentsim.brains"]      # a brain class (or factory), options as keywords
    echo = "my_pkg.brains:EchoBrain"
    [project.entry-points."agentsim.memories"]    # a memory class (or factory); gets brain= if it takes one
    notes = "my_pkg.memory:NotesMemory"
    [project.entry-points."agentsim.envs"]        # a gymnasium env class; see envs.registry
    counter = "my_pkg.env:CounterEnv"

A plugin's class may declare its facts with the kind's decorator (`register_brain`, `register_memory`,
`register_env`), exactly as the project's own parts do; one it does not decorate gets the defaults.
"""

from __future__ import annotations

from envs.plugins import PartSpec, PluginError, Registry

__all__ = ["BRAIN_GROUP", "MEMORY_GROUP", "PartSpec", "PluginError", "Registry"]

BRAIN_GROUP = "agentsim.brains"
MEMORY_GROUP = "agentsim.memories"
