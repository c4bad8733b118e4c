"""Metadata file names: one grammar for both layouts (Hadoop ``v<N>``, metastore ``<NNNNN>-<uuid>``)."""

from __future__ import annotations

import uuid

import pytest

from floe.serde.metadata_names import (
    GZIP_METADATA_SUFFIX,
    MetadataFileName,
    hadoop_metadata_file_name,
    is_metadata_file,
    metadata_version,
    parse_metadata_file_name,
    versioned_metadata_file_name,
)


@pytest.mark.parametrize(
    ("name", "parsed"),
    [
        ("v3.metadata.json", MetadataFileName(3, True, False, False)),
        ("v12.gz.metadata.json", MetadataFileName(12, True, True, False)),
        ("v2.metadata.json.gz", MetadataFileName(2, True, True, True)),
        ("00007-19739cda-f528-4429-84cc-377ffdd24c75.metadata.json", MetadataFileName(7, False, False, False)),
        ("00001-bb.gz.metadata.json", MetadataFileName(1, False, True, False)),
        ("s3://b/t/metadata/v4.metadata.json", MetadataFileName(4, True, False, False)),
        ("v3.1.metadata.json", None),
        ("3.metadata.json", None),
        ("00001-bb.metadata.json.gz", None),
        ("snap-1-1-abc.avro", None),
        ("version-hint.text", None),
    ],
)
def test_parse_metadata_file_name_known_forms_parse(name: str, parsed: MetadataFileName | None) -> None:
    assert parse_metadata_file_name(name) == parsed
    assert metadata_version(name) == (None if parsed is None else parsed.version)


def test_metadata_file_names_format_and_parse_back() -> None:
    token = uuid.UUID("19739cda-f528-4429-84cc-377ffdd24c75")
    name = versioned_metadata_file_name(12, GZIP_METADATA_SUFFIX, token)
    assert name == "00012-19739cda-f528-4429-84cc-377ffdd24c75.gz.metadata.json"
    assert parse_metadata_file_name(name) == MetadataFileName(12, False, True, False)
    assert hadoop_metadata_file_name(3) == "v3.metadata.json"
    assert metadata_version(versioned_metadata_file_name(0)) == 0
    assert is_metadata_file("/t/metadata/v3.metadata.json")
    assert not is_metadata_file("/t/metadata")
