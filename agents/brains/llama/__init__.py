"""The llama.cpp machinery behind `brain=local` (`agents.brains.local.LocalBrain`), one job a module:
`runtime` (the only user of llama-cpp-python's internals), `weights` (which GGUF and LoRA run),
`scoring` (continuation log-likelihoods), `ranking` (candidate actions), `slot_table` + `slots` (KV slots),
`generation` (free text and slot fills), `batching` (concurrent calls into shared decodes)."""
