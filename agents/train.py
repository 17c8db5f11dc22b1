"""`python -m agents.train`: fine-tune the embedded model's policy on trajectories (see agents/policy/train.py)."""

from agents.policy.train import main

if __name__ == "__main__":
    main()
