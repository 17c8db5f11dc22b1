"""Backend coding environment (issue 14; docs/coding.md).

- `envs.coding.sandbox`: one `Sandbox` interface with bubblewrap, Docker and local backends;
- `envs.coding.tasks`: the `CodingTask` model and the Harbor / Terminal-Bench 1 loader, shipped tasks;
- `envs.coding.deps`: per-requirement-set venvs / node_modules, cached outside the sandbox;
- `envs.coding.grading`: kill the agent's processes, start the service, run the hidden tests in a one-shot
  verifier sandbox (`verifier_runner.py` inside it writes a signed report), per-test results (issue 43);
- `envs.coding.tools`: the text actions, their parser and OpenAI tool schemas;
- `envs.coding.env`: `agentsim/Coding-v0` (`CodingEnv`), with the scripted expert (`envs.coding.expert`).
"""
