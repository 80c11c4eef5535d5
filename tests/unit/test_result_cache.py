"""The MCP server's result cache: keyed by index version, bounded in entries and in bytes."""

from __future__ import annotations

import threading

from services.mcp_server.cache import ResultCache, answer_bytes
from services.mcp_server.schemas import SearchHit, SearchHits


def hits(n: int = 3, text: str = "abstract") -> SearchHits:
    return tuple(
        SearchHit(doc_id=f"MED-{i}", score=1.0 / (i + 1), title="t", text=text) for i in range(n)
    )


def test_an_answer_comes_back_only_for_its_own_key() -> None:
    cache = ResultCache(10, 1 << 20)
    answer = hits()
    cache.put(("v1", "green tea", 5, True), answer)
    assert cache.get(("v1", "green tea", 5, True)) is answer
    for other in (
        ("v1", "green tea", 6, True),
        ("v1", "green tea", 5, False),
        ("v1", "Green tea", 5, True),
        ("v2", "green tea", 5, True),
    ):
        assert cache.get(other) is None


def test_a_new_index_version_drops_the_old_answers() -> None:
    cache = ResultCache(10, 1 << 20)
    cache.put(("v1", "a", 5, True), hits())
    cache.put(("v1", "b", 5, True), hits())
    cache.put(("v2", "a", 5, True), hits())
    assert cache.entries == 1 and cache.get(("v1", "b", 5, True)) is None
    assert cache.bytes == answer_bytes("a", hits())
    cache.retain("v3")  # readiness saw the alias move: nothing of v2 is asked for again
    assert cache.entries == 0 and cache.bytes == 0
    cache.retain("v3")
    cache.put(("v3", "a", 5, True), hits())
    cache.retain("v3")
    assert cache.entries == 1


def test_the_least_recently_used_answer_goes_first() -> None:
    cache = ResultCache(2, 1 << 20)
    cache.put(("v", "a", 5, True), hits())
    cache.put(("v", "b", 5, True), hits())
    assert cache.get(("v", "a", 5, True)) is not None  # a is now the most recent
    cache.put(("v", "c", 5, True), hits())
    assert cache.get(("v", "b", 5, True)) is None
    assert cache.get(("v", "a", 5, True)) is not None and cache.get(("v", "c", 5, True))
    assert cache.entries == 2


def test_bytes_bound_the_cache_too() -> None:
    long = hits(10, text="x" * 5_000)
    size = answer_bytes("q0", long)
    cache = ResultCache(1_000, 3 * size)
    for i in range(5):
        cache.put(("v", f"q{i}", 10, True), long)
    assert cache.entries == 3 and cache.bytes == 3 * size <= cache.max_bytes
    assert cache.get(("v", "q0", 10, True)) is None and cache.get(("v", "q4", 10, True))
    # An answer larger than the whole budget is not kept (and evicts nothing).
    cache.put(("v", "huge", 100, True), hits(100, text="x" * 20_000))
    assert cache.get(("v", "huge", 100, True)) is None and cache.entries == 3


def test_storing_a_key_again_replaces_its_answer() -> None:
    cache = ResultCache(10, 1 << 20)
    cache.put(("v", "a", 5, True), hits(5))
    cache.put(("v", "a", 5, True), hits(2))
    assert cache.entries == 1 and cache.bytes == answer_bytes("a", hits(2))


def test_zero_entries_switches_it_off() -> None:
    cache = ResultCache(0, 1 << 20)
    cache.put(("v", "a", 5, True), hits())
    assert not cache.enabled and cache.entries == 0 and cache.get(("v", "a", 5, True)) is None


def test_the_estimate_follows_what_an_answer_holds() -> None:
    empty = answer_bytes("q", ())
    assert answer_bytes("q", hits(1, text="")) > empty
    assert answer_bytes("q", hits(1, text="x" * 1000)) - answer_bytes("q", hits(1, text="")) == 1000


def test_threads_storing_and_reading_at_once_keep_the_bounds() -> None:
    cache = ResultCache(50, 40 * answer_bytes("q-0-00", hits()))
    errors: list[BaseException] = []

    def work(worker: int) -> None:
        try:
            for i in range(2_000):
                key = ("v", f"q-{worker}-{i % 97:02d}", 5, True)
                found = cache.get(key)
                assert found is None or found[0]["doc_id"] == "MED-0"
                cache.put(key, hits())
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert 0 < cache.entries <= 40
    assert cache.bytes == sum(answer_bytes(k[1], v[0]) for k, v in cache._answers.items())
