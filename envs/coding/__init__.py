"""Backend coding environment (issue 14; docs/coding.md).

- `envs.coding.sandbox`: one `Sandbox` interface with bubblewrap, Docker and local backends;
- `envs.coding.tasks`: the `CodingTask` model and the Harbor / Terminal-Bench 1 loader, shipped tasks;
- `envs.coding.deps`: per-requirement-set venvs / node_modules, cached outside the sandbox;
- `envs.coding.grading`: start the service, wait for its port, run the hidden tests, per-test results;
- `envs.coding.tools`: the text actions, their parser and OpenAI tool schemas;
- `envs.coding.env`: `agentsim/Coding-v0` (`CodingEnv`), with the scripted expert (`envs.coding.expert`).
"""
