"""The process's BLAS thread count: set by whichever thread needs it, restored by the last one out."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from vaultlens.embedding.blas import blas_threads


def blas_count() -> int:
    counts = {lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"}
    assert len(counts) == 1
    return counts.pop()


@pytest.fixture
def two_threads_first() -> Iterator[None]:
    """The count at 2 (this thread, the test's, is then the one threadpoolctl lets change it)."""
    before = threadpool_limits(limits=2, user_api="blas")
    try:
        yield
    finally:
        before.restore_original_limits()


def in_thread(fn: Callable[[], None]) -> None:
    failed: list[BaseException] = []

    def run() -> None:
        try:
            fn()
        except BaseException as exc:  # noqa: BLE001 - re-raised in the test's thread
            failed.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(30)
    assert not thread.is_alive()
    if failed:
        raise failed[0]


def test_another_thread_sets_the_count_and_restores_it(two_threads_first: None) -> None:
    """threadpoolctl 3.8 ignores a limit set by any thread but the first that set one: the model's
    calls run on the indexer's and the server's threads, so the limit must take effect there."""
    seen: list[int] = []

    def call() -> None:
        with blas_threads(1):
            seen.append(blas_count())
        seen.append(blas_count())

    in_thread(call)
    assert seen == [1, 2]
    assert blas_count() == 2


def test_overlapping_calls_keep_the_count_until_the_last_one_leaves(two_threads_first: None) -> None:
    """Two calls in flight: the first one out must not give the other's workers a full pool each."""
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()
    seen: dict[str, int] = {}

    def first() -> None:
        with blas_threads(1):
            first_in.set()
            assert second_in.wait(10)
        first_out.set()

    def second() -> None:
        assert first_in.wait(10)
        with blas_threads(1):
            second_in.set()
            assert first_out.wait(10)
            seen["second, after the first left"] = blas_count()
        seen["after both"] = blas_count()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert seen == {"second, after the first left": 1, "after both": 2}


def test_the_count_is_restored_when_the_call_fails(two_threads_first: None) -> None:
    def call() -> None:
        with pytest.raises(RuntimeError), blas_threads(1):
            raise RuntimeError("the model failed")

    in_thread(call)
    assert blas_count() == 2
