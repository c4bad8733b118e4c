"""Opening a table from a folder: choosing the metadata file and mapping recorded paths."""

from __future__ import annotations

from pathlib import Path

import pytest

from floe.errors import NoSuchTableError
from floe.io.table_folder import PathMapper, find_metadata_file, find_table_root, metadata_version


def _table(tmp_path: Path, names: list[str], hint: str | None = None) -> Path:
    md = tmp_path / "t" / "metadata"
    md.mkdir(parents=True)
    for n in names:
        (md / n).write_text("{}")
    if hint is not None:
        (md / "version-hint.text").write_text(hint + "\n")
    return tmp_path / "t"


@pytest.mark.parametrize(
    ("name", "version"),
    [
        ("v3.metadata.json", 3),
        ("v12.gz.metadata.json", 12),
        ("v2.metadata.json.gz", 2),
        ("00007-19739cda-f528-4429-84cc-377ffdd24c75.metadata.json", 7),
        ("v3.1.metadata.json", None),
        ("snap-1-1-abc.avro", None),
        ("version-hint.text", None),
    ],
)
def test_metadata_version_parses_known_names(name: str, version: int | None) -> None:
    assert metadata_version(name) == version


def test_find_metadata_file_follows_hint(tmp_path: Path) -> None:
    root = _table(tmp_path, ["v1.metadata.json", "v2.metadata.json"], hint="2")
    assert find_metadata_file(root).name == "v2.metadata.json"


def test_find_metadata_file_stale_hint_moves_to_newest(tmp_path: Path) -> None:
    root = _table(tmp_path, ["v1.metadata.json", "v2.metadata.json", "v3.metadata.json"], hint="1")
    assert find_metadata_file(root).name == "v3.metadata.json"


def test_find_metadata_file_hint_naming_a_file(tmp_path: Path) -> None:
    names = ["00000-aa.metadata.json", "00001-bb.metadata.json"]
    root = _table(tmp_path, names, hint="00001-bb")
    assert find_metadata_file(root).name == "00001-bb.metadata.json"


def test_find_metadata_file_without_hint_takes_highest_ignoring_variants(tmp_path: Path) -> None:
    root = _table(tmp_path, ["v1.gz.metadata.json", "v2.gz.metadata.json", "v2.1.metadata.json"])
    assert find_metadata_file(root).name == "v2.gz.metadata.json"


def test_find_metadata_file_hint_to_missing_version_takes_highest(tmp_path: Path) -> None:
    root = _table(tmp_path, ["v1.metadata.json", "v2.metadata.json"], hint="9")
    assert find_metadata_file(root).name == "v2.metadata.json"


def test_find_table_root_descends_into_single_child(tmp_path: Path) -> None:
    _table(tmp_path, ["v1.metadata.json"])
    assert find_table_root(tmp_path) == tmp_path / "t"


def test_find_metadata_file_no_table_raises(tmp_path: Path) -> None:
    with pytest.raises(NoSuchTableError, match="No Iceberg table"):
        find_metadata_file(tmp_path)
    (tmp_path / "metadata").mkdir()
    with pytest.raises(NoSuchTableError, match="No metadata files"):
        find_metadata_file(tmp_path)


@pytest.mark.parametrize(
    ("location", "recorded"),
    [
        ("/tmp/iceberg/t1", "/tmp/iceberg/t1/data/a.parquet"),
        ("file:/tmp/iceberg/t1", "file:///tmp/iceberg/t1/data/a.parquet"),
        ("file:///tmp/iceberg/t1", "/tmp/iceberg/t1/data/a.parquet"),
        ("hdfs://localhost:20500/wh/t1", "hdfs://localhost:20500/wh/t1/data/a.parquet"),
        ("s3://bucket/wh/t1", "s3a://bucket/wh/t1/data/a.parquet"),
        ("./lineitem", "lineitem/data/a.parquet"),
        ("data/persistent/t1", "data/persistent/t1/data/a.parquet"),
    ],
)
def test_path_mapper_replaces_recorded_location(tmp_path: Path, location: str, recorded: str) -> None:
    assert PathMapper(location, tmp_path).map(recorded) == tmp_path / "data" / "a.parquet"


def test_path_mapper_extra_prefixes_and_suffix_fallback(tmp_path: Path) -> None:
    (tmp_path / "metadata").mkdir()
    (tmp_path / "metadata" / "m.avro").write_bytes(b"")
    mapper = PathMapper("/wh/t", tmp_path, ("/old/place",))
    assert mapper.map("/old/place/data/x.parquet") == tmp_path / "data" / "x.parquet"
    # an unrelated prefix: found by its metadata/ suffix
    assert mapper.map("s3://elsewhere/t/metadata/m.avro") == tmp_path / "metadata" / "m.avro"
    # a doubled table folder under the location
    assert mapper.map("/wh/t/t/metadata/m.avro") == tmp_path / "metadata" / "m.avro"
