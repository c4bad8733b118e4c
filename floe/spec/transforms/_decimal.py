"""Exact conversions between Decimal values and unscaled integers (no 28-digit context rounding)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

__all__ = ["decimal_from_unscaled", "unscaled_of"]


def unscaled_of(value: Any, scale: int) -> int:
    """The integer ``value * 10**scale`` exactly (extra fraction digits are truncated toward zero)."""
    dec = Decimal(value)
    if not dec.is_finite():
        raise ValueError(f"Cannot store non-finite decimal {value!r}")
    sign, digits, exponent = dec.as_tuple()
    assert isinstance(exponent, int)  # finite decimals have an integer exponent
    magnitude = int("".join(map(str, digits)) or "0")
    shift = exponent + scale
    magnitude = magnitude * pow(10, shift) if shift >= 0 else magnitude // pow(10, -shift)
    return int(-magnitude if sign else magnitude)


def decimal_from_unscaled(unscaled: int, scale: int) -> Decimal:
    """A Decimal with exactly ``scale`` fraction digits for an unscaled integer."""
    digits = tuple(int(c) for c in str(abs(unscaled)))
    return Decimal((1 if unscaled < 0 else 0, digits, -scale))
