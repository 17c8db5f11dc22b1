"""BM25 search over the catalog, built once per catalog hash and cached on disk.

Backend: tantivy (Rust, on-disk, memory-mapped). Measured on this machine at 100k synthetic
products: tantivy build 1.1 s and query p50 0.24 ms vs bm25s build 2.9 s and p50 2.9 ms, with
half the RSS, so tantivy is the default; bm25s stays available (`backend="bm25s"`) for
installs without tantivy. Both score BM25 over title, description, first bullet and options.
Results are ranked by (score desc, product index asc) so ties are deterministic.
"""

from __future__ import annotations

import logging
import re
import shutil
import time
import uuid
from collections import OrderedDict
from pathlib import Path
from threading import Lock
from typing import Literal, Protocol

from .catalog import Catalog
from .paths import cache_dir

log = logging.getLogger(__name__)

Backend = Literal["tantivy", "bm25s"]
MAX_RESULTS = 50
MAX_QUERY_TERMS = 64
_TERM = re.compile(r"[a-z0-9]+")


def query_terms(query: str) -> list[str]:
    """The words a query is searched by (lower-case alphanumeric runs, at most 64)."""
    return _TERM.findall(query.lower())[:MAX_QUERY_TERMS]


class SearchIndex(Protocol):
    backend: str

    def search(self, query: str, k: int = MAX_RESULTS) -> list[int]: ...


class _Cached:
    """A small LRU in front of an index: repeated queries (expert episodes, people) cost nothing."""

    def __init__(self, size: int = 4096) -> None:
        self._cache: OrderedDict[tuple, list[int]] = OrderedDict()
        self._size = size
        self._lock = Lock()

    def get_or(self, key: tuple, compute) -> list[int]:
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None:
                self._cache.move_to_end(key)
                return hit
        value = compute()
        with self._lock:
            self._cache[key] = value
            if len(self._cache) > self._size:
                self._cache.popitem(last=False)
        return value


def _build_atomically(final: Path, build) -> None:
    """Build into a temp dir beside `final`, then rename: concurrent builders never see half an index."""
    tmp = final.with_name(f"{final.name}.tmp-{uuid.uuid4().hex[:8]}")
    tmp.mkdir(parents=True)
    try:
        build(tmp)
        (tmp / "COMPLETE").write_text("ok")
        try:
            tmp.rename(final)
        except OSError:  # another process won the race; use theirs
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


class _QueryCachedIndex:
    """Normalises the query and memoises results; backends implement `_search(terms, k)`."""

    _cache: _Cached

    def search(self, query: str, k: int = MAX_RESULTS) -> list[int]:
        terms = query_terms(query)
        if not terms:
            return []
        return self._cache.get_or((tuple(terms), k), lambda: self._search(terms, k))

    def _search(self, terms: list[str], k: int) -> list[int]:
        raise NotImplementedError


class TantivyIndex(_QueryCachedIndex):
    backend = "tantivy"

    def __init__(self, path: Path) -> None:
        import tantivy

        self._index = tantivy.Index.open(str(path))
        self._index.reload()
        self._searcher = self._index.searcher()
        self._cache = _Cached()

    @staticmethod
    def build(catalog: Catalog, path: Path, heap_bytes: int = 256_000_000) -> None:
        import tantivy

        sb = tantivy.SchemaBuilder()
        sb.add_text_field("body", stored=False, tokenizer_name="en_stem")
        sb.add_unsigned_field("id", stored=True, indexed=False)
        index = tantivy.Index(sb.build(), path=str(path))
        writer = index.writer(heap_size=heap_bytes, num_threads=1)
        i = 0
        for batch in catalog.iter_search_texts():
            for text in batch:
                doc = tantivy.Document()
                doc.add_text("body", text)
                doc.add_unsigned("id", i)
                writer.add_document(doc)
                i += 1
        writer.commit()
        writer.wait_merging_threads()

    def _search(self, terms: list[str], k: int) -> list[int]:
        q = self._index.parse_query(" ".join(terms), ["body"])
        hits = self._searcher.search(q, k).hits
        scored = [(-score, self._searcher.doc(addr)["id"][0]) for score, addr in hits]
        return [int(i) for _, i in sorted(scored)]


class Bm25sIndex(_QueryCachedIndex):
    backend = "bm25s"

    def __init__(self, path: Path) -> None:
        import bm25s

        self._bm25s = bm25s
        self._retriever = bm25s.BM25.load(str(path), mmap=True)
        self._cache = _Cached()

    @staticmethod
    def build(catalog: Catalog, path: Path) -> None:
        import bm25s

        texts = [t for batch in catalog.iter_search_texts() for t in batch]
        tokens = bm25s.tokenize(texts, stopwords="en", show_progress=False)
        del texts
        retriever = bm25s.BM25()
        retriever.index(tokens, show_progress=False)
        retriever.save(str(path))

    def _search(self, terms: list[str], k: int) -> list[int]:
        known = [t for t in terms if t in self._retriever.vocab_dict]
        if not known:
            return []
        k = min(k, self._retriever.scores["num_docs"])
        docs, scores = self._retriever.retrieve([known], k=k, show_progress=False, n_threads=1)
        ranked = sorted((-float(s), int(d)) for d, s in zip(docs[0], scores[0]) if s > 0)
        return [d for _, d in ranked]


_BACKENDS: dict[str, type[TantivyIndex] | type[Bm25sIndex]] = {"tantivy": TantivyIndex, "bm25s": Bm25sIndex}


def default_backend() -> Backend:
    try:
        import tantivy  # noqa: F401
    except ImportError:
        return "bm25s"
    return "tantivy"


def open_index(catalog: Catalog, backend: Backend | None = None) -> SearchIndex:
    """Open the cached index for `catalog`, building it first if this catalog has none yet."""
    backend = backend or default_backend()
    cls = _BACKENDS[backend]
    path = cache_dir(catalog.hash) / f"index-{backend}"
    if not (path / "COMPLETE").exists():
        if path.exists():
            shutil.rmtree(path, ignore_errors=True)
        t0 = time.perf_counter()
        _build_atomically(path, lambda p: cls.build(catalog, p))
        log.info("built %s index for %d products in %.1fs at %s", backend, len(catalog), time.perf_counter() - t0, path)
    return cls(path)
