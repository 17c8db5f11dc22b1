"""Backend coding environment (issue 14).

So far only its foundation lives here: `envs.coding.sandbox`, one `Sandbox` interface with
bubblewrap, Docker and local backends (see docs/coding.md). The Gymnasium env, the Harbor /
Terminal-Bench task loader and the task suite build on it.
"""
