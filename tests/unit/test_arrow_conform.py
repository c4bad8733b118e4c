"""conform: rows from Spark (uuids as strings, at any depth) laid out as the table's file schema."""

from __future__ import annotations

import uuid

import pyarrow as pa
import pytest

from floe.errors import ValidationError
from floe.io.arrow_schema import schema_to_arrow
from floe.spec.schema import Schema
from floe.spec.types import ListType, LongType, MapType, NestedField, StringType, StructType, UUIDType
from floe.write.arrow_data import conform

SCHEMA = Schema(
    NestedField(1, "id", LongType(), True),
    NestedField(2, "st", StructType(NestedField(5, "uid", UUIDType(), False)), False),
    NestedField(3, "lu", ListType(6, UUIDType(), False), False),
    NestedField(4, "mp", MapType(7, StringType(), 8, UUIDType(), False), False),
)
A, B = uuid.UUID(int=1), uuid.UUID(int=2)


def _spark_rows() -> pa.Table:
    """As Spark hands them to Python workers: uuid values are strings."""
    return pa.table({
        "id": pa.array([1, 2, 3, 4], pa.int64()),
        "st": pa.array([{"uid": str(A)}, None, {"uid": None}, {"uid": str(B)}], pa.struct([("uid", pa.string())])),
        "lu": pa.array([[str(A), None], None, [], [str(B)]], pa.list_(pa.string())),
        "mp": pa.array([[("k", str(A))], None, [("j", None)], []], pa.map_(pa.string(), pa.string())),
    })


@pytest.mark.parametrize("start", [0, 1])
def test_nested_uuid_strings_become_uuids(start: int) -> None:
    rows = _spark_rows().slice(start)
    out = conform(rows, schema_to_arrow(SCHEMA), SCHEMA, table_name="db.t").to_pylist()
    expected = [
        {"id": 1, "st": {"uid": A}, "lu": [A, None], "mp": [("k", A)]},
        {"id": 2, "st": None, "lu": None, "mp": None},
        {"id": 3, "st": {"uid": None}, "lu": [], "mp": [("j", None)]},
        {"id": 4, "st": {"uid": B}, "lu": [B], "mp": []},
    ][start:]
    assert out == expected


def test_a_nested_value_that_is_no_uuid_is_refused_naming_its_path() -> None:
    rows = _spark_rows().set_column(2, "lu", pa.array([["nope"], None, [], []], pa.list_(pa.string())))
    with pytest.raises(ValidationError, match=r"'nope' to uuid column 'lu.element' of table db.t"):
        conform(rows, schema_to_arrow(SCHEMA), SCHEMA, table_name="db.t")
