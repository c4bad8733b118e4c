"""Commit retries with exponential backoff, configured by the table's ``commit.retry.*`` properties."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from floe.errors import CommitConflictError, CommitFailedError
from floe.spec.properties import (
    COMMIT_MAX_RETRY_WAIT_MS,
    COMMIT_MAX_RETRY_WAIT_MS_DEFAULT,
    COMMIT_MIN_RETRY_WAIT_MS,
    COMMIT_MIN_RETRY_WAIT_MS_DEFAULT,
    COMMIT_NUM_RETRIES,
    COMMIT_NUM_RETRIES_DEFAULT,
    COMMIT_TOTAL_RETRY_TIME_MS,
    COMMIT_TOTAL_RETRY_TIME_MS_DEFAULT,
    property_int,
)

__all__ = ["RetryPolicy", "run_with_retries"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often and how long to retry a commit that lost a race (Java's ``Tasks.exponentialBackoff``)."""

    num_retries: int = COMMIT_NUM_RETRIES_DEFAULT
    min_wait_ms: int = COMMIT_MIN_RETRY_WAIT_MS_DEFAULT
    max_wait_ms: int = COMMIT_MAX_RETRY_WAIT_MS_DEFAULT
    total_timeout_ms: int = COMMIT_TOTAL_RETRY_TIME_MS_DEFAULT
    scale: float = 2.0

    @staticmethod
    def from_properties(properties: Mapping[str, str]) -> RetryPolicy:
        """The policy a table's properties ask for (defaults as in Iceberg Java)."""
        return RetryPolicy(
            num_retries=max(0, property_int(properties, COMMIT_NUM_RETRIES, COMMIT_NUM_RETRIES_DEFAULT)),
            min_wait_ms=max(
                0, property_int(properties, COMMIT_MIN_RETRY_WAIT_MS, COMMIT_MIN_RETRY_WAIT_MS_DEFAULT)
            ),
            max_wait_ms=max(
                0, property_int(properties, COMMIT_MAX_RETRY_WAIT_MS, COMMIT_MAX_RETRY_WAIT_MS_DEFAULT)
            ),
            total_timeout_ms=max(
                0, property_int(properties, COMMIT_TOTAL_RETRY_TIME_MS, COMMIT_TOTAL_RETRY_TIME_MS_DEFAULT)
            ),
        )

    def delay_ms(self, attempt: int) -> float:
        """Wait before retry number ``attempt`` (1-based): min * scale^(attempt-1), capped, with 10% jitter.

        Jitter keeps writers that failed together from retrying in lock step.
        """
        base = min(self.min_wait_ms * (self.scale ** (attempt - 1)), self.max_wait_ms)
        return base + random.uniform(0, 0.1 * base)


def run_with_retries(
    attempt: Callable[[int], T],
    policy: RetryPolicy | Callable[[], RetryPolicy],
    *,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """Call ``attempt(n)`` (n = 0, 1, ...) until it returns, retrying only on :class:`CommitFailedError`.

    :class:`CommitConflictError` (a semantic conflict) and every other error propagate at once. The
    policy may be a callable so that it is re-read from the refreshed table before each retry.

    Raises:
        CommitFailedError: the last attempt's error once retries or the total timeout are exhausted.
    """
    start = time.monotonic()
    n = 0
    while True:
        try:
            return attempt(n)
        except CommitConflictError:
            raise
        except CommitFailedError:
            p = policy() if callable(policy) else policy
            n += 1
            elapsed_ms = (time.monotonic() - start) * 1000
            if n > p.num_retries or elapsed_ms >= p.total_timeout_ms:
                raise
            wait = min(p.delay_ms(n), max(0.0, p.total_timeout_ms - elapsed_ms))
            sleep(wait / 1000.0)
