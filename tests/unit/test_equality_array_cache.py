"""The cache of packed equality arrays: kept by key, None kept too, evicted oldest-used first."""

from __future__ import annotations

from floe.spark.scan.equality_array_cache import ArrayCache


def test_packs_once_per_key_and_keeps_none() -> None:
    cache: ArrayCache[str] = ArrayCache(max_bytes=100)
    calls: list[str] = []

    def pack(value: str | None) -> tuple[str | None, int, bool]:
        calls.append(str(value))
        return value, 10, True

    assert cache.get_or_pack("a", lambda: pack("A")) == "A"
    assert cache.get_or_pack("a", lambda: pack("other")) == "A"
    assert cache.get_or_pack("n", lambda: pack(None)) is None
    assert cache.get_or_pack("n", lambda: pack("late")) is None
    assert calls == ["A", "None"]


def test_values_it_may_not_keep_are_packed_every_time() -> None:
    cache: ArrayCache[int] = ArrayCache(max_bytes=100)
    assert cache.get_or_pack("k", lambda: (1, 10, False)) == 1
    assert cache.get_or_pack("k", lambda: (2, 10, False)) == 2
    assert cache.get_or_pack("big", lambda: (3, 101, True)) == 3  # larger than the whole cache
    assert cache.get_or_pack("big", lambda: (4, 10, True)) == 4


def test_least_recently_used_goes_first_past_the_limit() -> None:
    cache: ArrayCache[int] = ArrayCache(max_bytes=30)
    for k in ("a", "b", "c"):
        cache.get_or_pack(k, lambda k=k: (ord(k), 10, True))  # type: ignore[misc]
    cache.get_or_pack("a", lambda: (0, 10, True))  # used again: now the newest
    cache.get_or_pack("d", lambda: (ord("d"), 10, True))  # evicts b
    assert cache.get_or_pack("a", lambda: (-1, 10, True)) == ord("a")
    assert cache.get_or_pack("c", lambda: (-1, 10, True)) == ord("c")
    assert cache.get_or_pack("b", lambda: (-1, 10, True)) == -1
