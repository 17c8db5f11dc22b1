"""Policy learning: fine-tune the embedded model on collected trajectories and serve the result to the local brain."""
