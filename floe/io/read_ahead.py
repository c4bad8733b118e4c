"""A function's results over items, computed by a few threads a bounded window ahead of their consumer.

For reads whose native part lets go of the GIL (pyarrow's Parquet decoding): the next files decode on the
other cores while the consumer works on the current one, and at most ``window`` results wait in memory.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

__all__ = ["read_ahead"]

T = TypeVar("T")
R = TypeVar("R")


def read_ahead(fn: Callable[[T], R], items: Iterable[T], *, threads: int, window: int | None = None) -> Iterator[R]:
    """``fn(item)`` for each item, in order; up to ``window`` (default twice ``threads``) computed ahead. The
    first error is raised where its result would have been yielded; the others are cancelled."""
    if threads <= 1:
        yield from map(fn, items)
        return
    ahead = max(1, window or 2 * threads)
    with ThreadPoolExecutor(threads, thread_name_prefix="floe-read-ahead") as pool:
        pending: deque[Future[R]] = deque()
        it = iter(items)
        try:
            for item in it:
                pending.append(pool.submit(fn, item))
                if len(pending) >= ahead:
                    break
            while pending:
                current = pending.popleft()
                nxt = next(it, _END)
                if nxt is not _END:  # the window refills before the wait: the pool never idles for the consumer
                    pending.append(pool.submit(fn, nxt))  # type: ignore[arg-type]
                yield current.result()
        finally:
            for f in pending:
                f.cancel()


_END = object()
