"""Hidden partition columns for Spark's native writer, and reading the partition tuple back from paths.

Spark's ``partitionBy`` writes ``<col>=<value>`` directories. Floe partitions by hidden columns
``_floe_p<i>`` holding each partition field's value in a form whose directory name maps back to the exact
Floe value: integers as they are (bucket, temporal, int/long truncate and identity, dates as day numbers,
timestamps as epoch micros, booleans as 0/1) and everything else as ``x`` + the hex of its bytes (strings
as UTF-8, binary as is, decimals/floats/times as Spark's exact string). The ``x`` prefix keeps an empty
string distinct from null, which Spark writes as ``__HIVE_DEFAULT_PARTITION__``.
"""

from __future__ import annotations

import struct
import uuid
from decimal import Decimal
from typing import Any
from urllib.parse import unquote

from pyspark.sql import Column
from pyspark.sql import functions as F

from floe.errors import ValidationError
from floe.spark.write.transforms import epoch_micros, partition_column
from floe.spec.partitioning import PartitionSpec
from floe.spec.schema import Schema
from floe.spec.transforms import IdentityTransform
from floe.spec.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    FixedType,
    FloatType,
    IcebergType,
    IntegerType,
    LongType,
    StringType,
    TimestampType,
    TimestamptzType,
    TimeType,
    UUIDType,
)

__all__ = ["HIDDEN_PREFIX", "NULL_DIR_VALUE", "decode_partition_dirs", "hidden_partition_columns"]

HIDDEN_PREFIX = "_floe_p"
NULL_DIR_VALUE = "__HIVE_DEFAULT_PARTITION__"
_INTEGRAL = (IntegerType, LongType, DateType, TimestampType, TimestamptzType, BooleanType)


def _encode(result_type: IcebergType, value: Column, identity: bool) -> Column:
    if isinstance(result_type, (IntegerType, LongType)):
        return value
    if isinstance(result_type, DateType):
        # identity keeps a Spark date; the day transform already yields the day number
        return F.unix_date(value) if identity else value
    if isinstance(result_type, (TimestampType, TimestamptzType)):
        return epoch_micros(value, result_type)
    if isinstance(result_type, BooleanType):
        return value.cast("int")
    if isinstance(result_type, (BinaryType, FixedType)):
        return F.concat(F.lit("x"), F.hex(value))
    return F.concat(F.lit("x"), F.hex(value.cast("string")))


def hidden_partition_columns(spec: PartitionSpec, schema: Schema) -> list[tuple[str, Column]]:
    """(hidden column name, encoded partition value) per partition field, in spec order."""
    out = []
    ptype = spec.partition_type(schema)
    for i, (pf, rf) in enumerate(zip(spec.fields, ptype.fields, strict=True)):
        value = partition_column(pf, schema)
        identity = isinstance(pf.transform, IdentityTransform)
        out.append((f"{HIDDEN_PREFIX}{i}", _encode(rf.field_type, value, identity)))
    return out


def _decode(text: str, t: IcebergType) -> Any:
    if text == NULL_DIR_VALUE:
        return None
    if isinstance(t, BooleanType):
        return text == "1"
    if isinstance(t, _INTEGRAL):
        return int(text)
    if not text.startswith("x"):
        raise ValidationError(f"Unexpected partition directory value {text!r} for type {t}")
    raw = bytes.fromhex(text[1:])
    if isinstance(t, (BinaryType, FixedType)):
        return raw
    s = raw.decode("utf-8")
    if isinstance(t, StringType):
        return s
    if isinstance(t, UUIDType):
        return uuid.UUID(s)
    if isinstance(t, DecimalType):
        return Decimal(s).quantize(Decimal(1).scaleb(-t.scale))
    if isinstance(t, FloatType):
        return struct.unpack("<f", struct.pack("<f", float(s)))[0]
    if isinstance(t, TimeType):
        hh, mm, rest = s.split(":")
        sec, _, frac = rest.partition(".")
        return ((int(hh) * 60 + int(mm)) * 60 + int(sec)) * 1_000_000 + int((frac + "000000")[:6])
    return float(s)  # double


def decode_partition_dirs(relative_dir: str, spec: PartitionSpec, schema: Schema) -> tuple[Any, ...]:
    """The partition tuple of a file in ``relative_dir`` (``_floe_p0=3/_floe_p1=x6162``) under the staging dir.

    Raises:
        ValidationError: a directory does not name the expected hidden column.
    """
    ptype = spec.partition_type(schema)
    parts = [p for p in relative_dir.split("/") if p]
    if len(parts) != len(spec.fields):
        raise ValidationError(f"Expected {len(spec.fields)} partition directories in {relative_dir!r}")
    out = []
    for i, (part, f) in enumerate(zip(parts, ptype.fields, strict=True)):
        name, sep, value = part.partition("=")
        if not sep or name != f"{HIDDEN_PREFIX}{i}":
            raise ValidationError(f"Unexpected partition directory {part!r} in {relative_dir!r}")
        out.append(_decode(unquote(value), f.field_type))
    return tuple(out)
