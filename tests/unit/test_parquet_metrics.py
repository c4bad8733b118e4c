"""Parquet footer metrics: counts, bounds, truncation, metrics modes and NaN counts."""

from __future__ import annotations

import datetime
import math
import uuid
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from floe.errors import ValidationError
from floe.io.arrow_schema import schema_to_arrow
from floe.io.parquet_metrics import (
    MetricsConfig,
    MetricsMode,
    NanCounter,
    ParquetMetrics,
    footer_metrics,
    nan_value_counts,
    parse_metrics_mode,
    truncate_lower_bound,
    truncate_upper_bound,
)
from floe.serde.single_value import from_bytes
from floe.spec.schema import Schema
from floe.spec.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestampType,
    TimestamptzType,
    UUIDType,
)

SCHEMA = Schema(
    NestedField(1, "id", LongType(), True),
    NestedField(2, "flag", BooleanType()),
    NestedField(3, "name", StringType()),
    NestedField(4, "price", DecimalType(38, 4)),
    NestedField(5, "day", DateType()),
    NestedField(6, "ts", TimestampType()),
    NestedField(7, "tstz", TimestamptzType()),
    NestedField(8, "u", UUIDType()),
    NestedField(9, "blob", BinaryType()),
    NestedField(10, "score", DoubleType()),
    NestedField(
        11, "loc", StructType(NestedField(12, "lat", FloatType()), NestedField(13, "city", StringType()))
    ),
    NestedField(14, "tags", ListType(15, StringType(), False)),
    NestedField(16, "props", MapType(17, StringType(), 18, IntegerType(), False)),
)

U1 = uuid.UUID("00000000-0000-0000-0000-000000000001")
U2 = uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7")
ROWS = [
    {
        "id": 3,
        "flag": True,
        "name": "banana",
        "price": Decimal("12345678901234567890123456789012.3456"),
        "day": datetime.date(2024, 5, 1),
        "ts": datetime.datetime(2024, 5, 1, 12, 0, 0, 1),
        "tstz": datetime.datetime(2024, 5, 1, tzinfo=datetime.timezone.utc),
        "u": U2,
        "blob": b"\x01\x02",
        "score": float("nan"),
        "loc": {"lat": 1.5, "city": "Oslo"},
        "tags": ["x", None, "y"],
        "props": [("a", 1), ("b", 2)],
    },
    {
        "id": -7,
        "flag": None,
        "name": "apple",
        "price": Decimal("-1.0000"),
        "day": datetime.date(1969, 12, 31),
        "ts": None,
        "tstz": datetime.datetime(2020, 1, 1, tzinfo=datetime.timezone.utc),
        "u": U1,
        "blob": None,
        "score": 2.5,
        "loc": None,
        "tags": [],
        "props": None,
    },
    {
        "id": 10,
        "flag": False,
        "name": None,
        "price": None,
        "day": None,
        "ts": datetime.datetime(1999, 1, 1),
        "tstz": None,
        "u": None,
        "blob": b"\xff",
        "score": -0.5,
        "loc": {"lat": None, "city": "Bergen"},
        "tags": None,
        "props": [("c", None)],
    },
]


def _write(
    tmp_path: Path, rows: list[dict[str, object]], schema: Schema = SCHEMA, **kw: object
) -> pq.FileMetaData:
    path = tmp_path / "f.parquet"
    pq.write_table(pa.Table.from_pylist(rows, schema=schema_to_arrow(schema)), path, **kw)  # type: ignore[arg-type]
    return pq.ParquetFile(path).metadata


def _bounds(m: ParquetMetrics, schema: Schema = SCHEMA) -> dict[str, tuple[object, object]]:
    out = {}
    for fid, lo in m.lower_bounds.items():
        t = schema.find_type(fid)
        hi = m.upper_bounds.get(fid)
        out[schema.find_column_name(fid)] = (from_bytes(t, lo), from_bytes(t, hi) if hi is not None else None)
    return out  # type: ignore[return-value]


def test_footer_metrics_counts_match_data(tmp_path: Path) -> None:
    m = footer_metrics(_write(tmp_path, ROWS, row_group_size=2), SCHEMA)
    assert m.record_count == 3
    assert m.value_counts[1] == 3
    assert m.null_value_counts[1] == 0
    assert m.null_value_counts[2] == 1
    assert m.null_value_counts[3] == 1
    assert m.null_value_counts[12] == 2
    # repeated columns count element slots: [x, None, y], [] and None -> 3 values + 2 level entries
    assert m.value_counts[15] == 5
    assert m.null_value_counts[15] == 3
    assert m.value_counts[17] == 4
    assert m.null_value_counts[18] == 2
    assert set(m.column_sizes) == {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 13, 15, 17, 18}
    assert all(size > 0 for size in m.column_sizes.values())
    assert m.nan_value_counts == {}


def test_footer_metrics_bounds_decode_to_data_across_row_groups(tmp_path: Path) -> None:
    meta = _write(tmp_path, ROWS, row_group_size=2)
    assert meta.num_row_groups == 2
    m = footer_metrics(meta, SCHEMA, properties={"write.metadata.metrics.default": "full"})
    b = _bounds(m)
    assert b["id"] == (-7, 10)
    assert b["flag"] == (False, True)
    assert b["name"] == ("apple", "banana")
    assert b["price"] == (Decimal("-1.0000"), Decimal("12345678901234567890123456789012.3456"))
    assert b["day"] == (-1, 19844)
    assert b["ts"] == (915148800000000, 1714564800000001)
    assert b["tstz"] == (1577836800000000, 1714521600000000)
    assert b["u"] == (U1, U2)
    assert b["blob"] == (b"\x01\x02", b"\xff")
    assert b["score"] == (-0.5, 2.5)  # NaN is excluded from bounds
    assert b["loc.lat"] == (1.5, 1.5)
    assert b["loc.city"] == ("Bergen", "Oslo")
    # no bounds for list elements or map keys/values
    assert not {15, 17, 18} & (set(m.lower_bounds) | set(m.upper_bounds))


def test_footer_metrics_default_truncates_long_strings_with_incremented_upper(tmp_path: Path) -> None:
    schema = Schema(NestedField(1, "s", StringType()), NestedField(2, "b", BinaryType()))
    rows = [
        {"s": "aaaaaaaaaaaaaaaaaaaa-long", "b": b"\x00" * 20},
        {"s": "zzzzzzzzzzzzzzzzzzzz-long", "b": b"\x01" * 15 + b"\xff\xff\xff"},
    ]
    m = footer_metrics(_write(tmp_path, rows, schema), schema)  # default truncate(16)
    b = _bounds(m, schema)
    assert b["s"] == ("a" * 16, "z" * 15 + "{")
    assert b["b"] == (b"\x00" * 16, b"\x01" * 14 + b"\x02")


def test_footer_metrics_fixed_longer_than_truncation_keeps_short_bounds(tmp_path: Path) -> None:
    # Iceberg Java truncates fixed bounds like binary ones and writes them shorter than the type.
    schema = Schema(NestedField(1, "f", FixedType(25)))
    rows = [{"f": b"a" * 25}, {"f": b"b" * 25}]
    m = footer_metrics(_write(tmp_path, rows, schema), schema)
    assert (m.lower_bounds[1], m.upper_bounds[1]) == (b"a" * 16, b"b" * 15 + b"c")


def test_truncate_upper_bound_unicode_increments_code_point() -> None:
    assert truncate_upper_bound("héllo wörld", 4) == "hélm"
    assert truncate_upper_bound("ab\U0010ffffcd", 3) == "ac"  # max code point dropped, previous incremented
    assert truncate_upper_bound("\U0010ffff\U0010ffffx", 2) is None  # no upper bound possible
    assert truncate_upper_bound("a\ud7ffb", 2) == "a\ue000"  # skips the surrogate range
    assert truncate_upper_bound("short", 16) == "short"
    assert truncate_lower_bound("日本語テキスト", 2) == "日本"


def test_truncate_upper_bound_binary_carries_past_ff() -> None:
    assert truncate_upper_bound(b"\x01\xff\x05", 2) == b"\x02"
    assert truncate_upper_bound(b"\xff\xff\x00", 2) is None
    assert truncate_upper_bound(b"\x01\x02", 2) == b"\x01\x02"


def test_footer_metrics_unicode_strings_truncate_by_code_points(tmp_path: Path) -> None:
    schema = Schema(NestedField(1, "s", StringType()))
    m = footer_metrics(
        _write(tmp_path, [{"s": "日本語のテキストです"}], schema),
        schema,
        properties={"write.metadata.metrics.default": "truncate(3)"},
    )
    assert _bounds(m, schema)["s"] == ("日本語", "日本" + chr(ord("語") + 1))


def test_footer_metrics_modes_none_counts_and_column_override(tmp_path: Path) -> None:
    props = {
        "write.metadata.metrics.default": "counts",
        "write.metadata.metrics.column.name": "full",
        "write.metadata.metrics.column.loc.city": "none",
    }
    m = footer_metrics(_write(tmp_path, ROWS), SCHEMA, properties=props)
    assert set(m.lower_bounds) == {3}
    assert 13 not in m.value_counts
    assert 13 not in m.column_sizes
    assert 13 not in m.null_value_counts
    assert m.value_counts[1] == 3
    none = footer_metrics(
        _write(tmp_path, ROWS), SCHEMA, properties={"write.metadata.metrics.default": "none"}
    )
    assert (none.column_sizes, none.value_counts, none.lower_bounds) == ({}, {}, {})
    assert none.record_count == 3


def test_metrics_config_many_columns_inferred_default_limited() -> None:
    schema = Schema(*(NestedField(i, f"c{i}", IntegerType()) for i in range(1, 106)))
    cfg = MetricsConfig.from_properties(schema, {})
    assert cfg.mode(100) == MetricsMode("truncate", 16)
    assert cfg.mode(101) == MetricsMode("none")
    explicit = MetricsConfig.from_properties(schema, {"write.metadata.metrics.default": "full"})
    assert explicit.mode(105) == MetricsMode("full")


def test_parse_metrics_mode_invalid_raises() -> None:
    assert parse_metrics_mode(" Truncate(8) ") == MetricsMode("truncate", 8)
    assert str(parse_metrics_mode("counts")) == "counts"
    for bad in ("truncate(0)", "truncate", "sometimes"):
        with pytest.raises(ValidationError, match="metrics mode"):
            parse_metrics_mode(bad)


def test_nan_value_counts_top_level_nested_and_repeated() -> None:
    schema = Schema(
        NestedField(1, "d", DoubleType()),
        NestedField(2, "s", StructType(NestedField(3, "f", FloatType()))),
        NestedField(4, "l", ListType(5, DoubleType(), False)),
        NestedField(6, "m", MapType(7, StringType(), 8, FloatType(), False)),
    )
    nan = math.nan
    table = pa.Table.from_pylist(
        [
            {"d": nan, "s": {"f": nan}, "l": [nan, 1.0, nan], "m": [("a", nan)]},
            {"d": 1.0, "s": None, "l": None, "m": [("b", 1.0), ("c", nan)]},
            {"d": None, "s": {"f": 2.0}, "l": [nan], "m": None},
        ],
        schema=schema_to_arrow(schema),
    )
    assert nan_value_counts(table, schema) == {1: 1, 3: 1, 5: 3, 8: 2}
    counter = NanCounter(schema)
    counter.update_all(table.to_batches(max_chunksize=1))
    counter.update(table.slice(1, 1))
    assert counter.counts == {1: 1, 3: 1, 5: 3, 8: 3}


def test_footer_metrics_passes_nan_counts_through_modes(tmp_path: Path) -> None:
    schema = Schema(NestedField(1, "d", DoubleType()), NestedField(2, "e", DoubleType()))
    meta = _write(tmp_path, [{"d": math.nan, "e": math.nan}], schema)
    m = footer_metrics(
        meta, schema, properties={"write.metadata.metrics.column.e": "none"}, nan_counts={1: 1, 2: 1}
    )
    assert m.nan_value_counts == {1: 1}
    assert 1 not in m.lower_bounds  # only NaN: no bounds


def test_footer_metrics_row_group_without_min_max_drops_bounds(tmp_path: Path) -> None:
    # a row group with values but no min/max (here: only NaN) makes any file-level bound unsafe
    schema = Schema(NestedField(1, "d", DoubleType()), NestedField(2, "i", LongType()))
    meta = _write(tmp_path, [{"d": math.nan, "i": 1}, {"d": 1.0, "i": 2}], schema, row_group_size=1)
    m = footer_metrics(meta, schema)
    assert 1 not in m.lower_bounds
    assert 1 not in m.upper_bounds
    assert _bounds(m, schema) == {"i": (1, 2)}


def test_footer_metrics_skips_columns_not_in_schema(tmp_path: Path) -> None:
    written = Schema(NestedField(1, "a", LongType()), NestedField(2, "gone", LongType()))
    current = Schema(NestedField(1, "renamed", LongType()))
    m = footer_metrics(_write(tmp_path, [{"a": 1, "gone": 2}], written), current)
    assert set(m.value_counts) == {1}
    assert _bounds(m, current) == {"renamed": (1, 1)}
