"""Dataset of diagnosis entries: (tree, hidden root causes), split train/dev/test by tree.

Every entry is a pure function of (base_seed, split, index), so the env can generate any entry
on the fly with no files, and `build_dataset` writes exactly the same entries to disk.
Splits never share a tree: tree seeds are derived from the split name and the builder checks
tree fingerprints across splits. Layout written by `build_dataset(out_dir)`::

    out_dir/manifest.json       counts, seed, format, split sizes, build time
    out_dir/trees.jsonl         {"tree_id", "split", "tree": <faulttree/1 JSON>}
    out_dir/{train,dev,test}.jsonl   one `Entry` a line

Run `python -m envs.faulttree.dataset OUT_DIR [--entries 3130] [--seed 0]`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import random
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from pydantic import BaseModel, Field

from envs.faulttree.domains import DOMAINS
from envs.faulttree.generator import generate_tree, stable_seed
from envs.faulttree.model import FaultTree
from envs.faulttree.scenario import sample_scenario
from envs.faulttree.schema import dump_tree, parse_tree, to_spec

log = logging.getLogger(__name__)

DEFAULT_ENTRIES = 3130
SPLIT_FRACTIONS = {"train": 0.8, "dev": 0.1, "test": 0.1}
ENTRIES_PER_TREE = 5
DOMAIN_NAMES = tuple(DOMAINS)


class Entry(BaseModel):
    id: str
    split: str
    index: int = Field(ge=0)
    domain: str
    tree_id: str
    causes: list[str] = Field(min_length=1, description="Hidden root causes (basic event ids).")
    symptom: str


def split_sizes(n_entries: int = DEFAULT_ENTRIES) -> dict[str, int]:
    """Entries per split; rounding leftovers go to train so the total is exact."""
    sizes = {s: int(n_entries * f) for s, f in SPLIT_FRACTIONS.items()}
    sizes["train"] += n_entries - sum(sizes.values())
    return sizes


def tree_id_for(split: str, tree_index: int, domain: str) -> str:
    return f"{split}-{tree_index:04d}-{domain}"


@lru_cache(maxsize=256)
def tree_for(split: str, tree_index: int, base_seed: int = 0, domain: str | None = None) -> tuple[str, FaultTree]:
    """The tree behind entries [tree_index*5, tree_index*5+5) of a split (cached per process)."""
    if split not in SPLIT_FRACTIONS:
        raise ValueError(f"unknown split {split!r}; choose from {list(SPLIT_FRACTIONS)}")
    dom = domain or DOMAIN_NAMES[tree_index % len(DOMAIN_NAMES)]
    seed = stable_seed(base_seed, split, tree_index, dom) % (2**31)
    return tree_id_for(split, tree_index, dom), generate_tree(dom, seed)


def make_entry(split: str, index: int, base_seed: int = 0, domain: str | None = None) -> tuple[Entry, FaultTree]:
    tree_index = index // ENTRIES_PER_TREE
    tree_id, tree = tree_for(split, tree_index, base_seed, domain)
    rng = random.Random(stable_seed(base_seed, split, "entry", index, domain or ""))
    causes = sample_scenario(tree, rng)
    entry = Entry(
        id=f"{split}-{index:05d}",
        split=split,
        index=index,
        domain=tree.domain,
        tree_id=tree_id,
        causes=sorted(causes, key=tree.index.__getitem__),
        symptom=tree.symptom,
    )
    return entry, tree


def fingerprint(tree: FaultTree) -> str:
    """Content hash that ignores the tree's name (which embeds its seed)."""
    spec = to_spec(tree).model_dump(exclude={"name"})
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()


def build_dataset(out_dir: str | Path, n_entries: int = DEFAULT_ENTRIES, base_seed: int = 0) -> dict:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    sizes = split_sizes(n_entries)
    prints: dict[str, str] = {}
    n_trees = 0
    with (out / "trees.jsonl").open("w", encoding="utf-8") as trees_f:
        for split, size in sizes.items():
            written: set[str] = set()
            with (out / f"{split}.jsonl").open("w", encoding="utf-8") as f:
                for i in range(size):
                    entry, tree = make_entry(split, i, base_seed)
                    if entry.tree_id not in written:
                        fp = fingerprint(tree)
                        if fp in prints and prints[fp] != split:
                            raise RuntimeError(f"tree {entry.tree_id} also appears in split {prints[fp]}")
                        prints[fp] = split
                        trees_f.write(
                            json.dumps(
                                {
                                    "tree_id": entry.tree_id,
                                    "split": split,
                                    "tree": json.loads(dump_tree(tree, indent=None)),
                                }
                            )
                            + "\n"
                        )
                        written.add(entry.tree_id)
                        n_trees += 1
                    f.write(entry.model_dump_json() + "\n")
            log.info("split %s: %d entries, %d trees", split, size, len(written))
    manifest = {
        "format": "faulttree-dataset/1",
        "entries": n_entries,
        "trees": n_trees,
        "base_seed": base_seed,
        "splits": sizes,
        "entries_per_tree": ENTRIES_PER_TREE,
        "build_seconds": round(time.perf_counter() - start, 3),
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


@dataclass
class Dataset:
    entries: dict[str, list[Entry]]
    trees: dict[str, FaultTree]


@lru_cache(maxsize=4)
def load_dataset(path: str) -> Dataset:
    """Load once per process and share across env instances."""
    root = Path(path)
    trees = {}
    with (root / "trees.jsonl").open(encoding="utf-8") as f:
        for line in f:
            rec = json.loads(line)
            trees[rec["tree_id"]] = parse_tree(rec["tree"])
    entries = {}
    for split in SPLIT_FRACTIONS:
        file = root / f"{split}.jsonl"
        if file.exists():
            with file.open(encoding="utf-8") as f:
                entries[split] = [Entry.model_validate_json(line) for line in f if line.strip()]
    return Dataset(entries=entries, trees=trees)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir")
    parser.add_argument("--entries", type=int, default=DEFAULT_ENTRIES)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    manifest = build_dataset(args.out_dir, args.entries, args.seed)
    log.info("%s", json.dumps(manifest))


if __name__ == "__main__":
    main()
