"""floe.spark.runtime.call_sites: PySpark's call-site capture is off inside Floe's blocks and back after."""

from __future__ import annotations

import threading

import pytest
from pyspark.errors import utils as pyspark_error_utils

from floe.spark.runtime.call_sites import without_call_sites


def test_the_setting_pyspark_reads_exists() -> None:
    # If a PySpark release renames it, the switch silently does nothing: this says so.
    assert hasattr(pyspark_error_utils, "_enable_debugging_cache")


def test_capture_is_off_inside_and_restored_after(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pyspark_error_utils, "_enable_debugging_cache", True)
    with without_call_sites():
        assert pyspark_error_utils.is_debugging_enabled() is False
        with without_call_sites():
            assert pyspark_error_utils._enable_debugging_cache is False
        assert pyspark_error_utils._enable_debugging_cache is False  # the outer block still runs
    assert pyspark_error_utils._enable_debugging_cache is True


def test_restored_after_an_error_and_as_a_decorator(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pyspark_error_utils, "_enable_debugging_cache", None)

    @without_call_sites()
    def build() -> object:
        return pyspark_error_utils._enable_debugging_cache

    assert build() is False
    try:
        with without_call_sites():
            raise RuntimeError("boom")
    except RuntimeError:
        pass
    assert pyspark_error_utils._enable_debugging_cache is None  # unread yet: PySpark reads the conf later


def test_overlapping_blocks_in_two_threads_restore_the_setting_once_both_end(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pyspark_error_utils, "_enable_debugging_cache", True)
    inside, release = threading.Event(), threading.Event()

    def other() -> None:
        with without_call_sites():
            inside.set()
            release.wait(5)

    t = threading.Thread(target=other)
    t.start()
    inside.wait(5)
    with without_call_sites():
        pass
    assert pyspark_error_utils._enable_debugging_cache is False  # the other thread's block still runs
    release.set()
    t.join(5)
    assert pyspark_error_utils._enable_debugging_cache is True
