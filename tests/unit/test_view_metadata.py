"""View metadata: Java / Rust / Go fixtures, eager validation, JSON round trips."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from floe.errors import InvalidMetadataError
from floe.serde.view_json import (
    view_metadata_from_dict,
    view_metadata_from_json,
    view_metadata_to_dict,
    view_metadata_to_json,
)
from floe.spec.view_metadata import SQLViewRepresentation

FIXTURES = Path("/work/shared/fixtures/metadata")
JAVA = "apache-iceberg/org/apache/iceberg/view"
RUST = "iceberg-rust/crates/iceberg/testdata/view_metadata"

VALID = [
    f"{JAVA}/ValidViewMetadata.json",
    f"{RUST}/ViewMetadataV1Valid.json",
    "iceberg-go/view/testdata/view-metadata.json",
]

INVALID = [
    (f"{JAVA}/ViewMetadataMissingLocation.json", "Cannot parse missing string: location"),
    (f"{JAVA}/ViewMetadataMissingCurrentVersion.json", "Cannot parse missing int: current-version-id"),
    (
        f"{JAVA}/ViewMetadataInvalidCurrentSchema.json",
        "Cannot find current schema with id 1234 in schemas: [1]",
    ),
    (
        f"{JAVA}/ViewMetadataInvalidCurrentVersion.json",
        "Cannot find current version 1234 in view versions: [1, 2]",
    ),
    (f"{JAVA}/ViewMetadataMultipleSQLsForDialect.json", "Cannot add multiple queries for dialect spark-sql"),
    (f"{RUST}/ViewMetadataUnsupportedVersion.json", "Unsupported format version: 2"),
    (
        f"{RUST}/ViewMetadataV1CurrentVersionNotFound.json",
        "Cannot find current version 2 in view versions: [1]",
    ),
    (f"{RUST}/ViewMetadataV1MissingCurrentVersion.json", "Cannot parse missing int: current-version-id"),
    (f"{RUST}/ViewMetadataV1MissingSchema.json", "Cannot parse missing int"),
    (f"{RUST}/ViewMetadataV1SchemaNotFound.json", "Cannot find current schema with id 2 in schemas: [1]"),
]


@pytest.mark.parametrize("rel", VALID, ids=lambda r: r.rsplit("/", 1)[-1])
def test_view_metadata_valid_fixture_round_trips(rel):
    md = view_metadata_from_json((FIXTURES / rel).read_text())
    assert view_metadata_from_json(view_metadata_to_json(md)) == md
    assert md.schema().schema_id == md.current_version().schema_id


@pytest.mark.parametrize("rel,phrase", INVALID, ids=lambda x: x.rsplit("/", 1)[-1] if "/" in x else "")
def test_view_metadata_invalid_fixture_rejected(rel, phrase):
    with pytest.raises(InvalidMetadataError) as err:
        view_metadata_from_json((FIXTURES / rel).read_text())
    assert phrase in str(err.value)


def test_view_metadata_accessors():
    md = view_metadata_from_json((FIXTURES / f"{JAVA}/ValidViewMetadata.json").read_text())
    assert md.current_version_id == 2
    assert md.current_version().sql_for("SPARK-SQL") == "select 1 id, 'abc' data"
    assert md.version_by_id(1).representations == (SQLViewRepresentation("select 'foo' foo", "spark-sql"),)
    assert md.properties == {"some-key": "some-value", "comment": "some-comment"}
    assert [e.version_id for e in md.version_log] == [1, 2]


def test_view_metadata_key_order_like_java():
    md = view_metadata_from_json((FIXTURES / f"{RUST}/ViewMetadataV1Valid.json").read_text())
    assert list(view_metadata_to_dict(md)) == [
        "view-uuid",
        "format-version",
        "location",
        "properties",
        "schemas",
        "current-version-id",
        "versions",
        "version-log",
    ]


def test_view_unknown_representation_kept():
    node = json.loads((FIXTURES / f"{RUST}/ViewMetadataV1Valid.json").read_text())
    node["versions"][0]["representations"].append({"type": "substrait", "plan": "abc"})
    md = view_metadata_from_dict(node)
    assert view_metadata_to_dict(md)["versions"][0]["representations"][-1] == {
        "type": "substrait",
        "plan": "abc",
    }
