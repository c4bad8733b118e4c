"""Where imported files come from: a Spark session-catalog table or a Hive-style folder of data files.

Iceberg's ``add_files``, ``snapshot`` and ``migrate`` take files as they lie. A source is a location, a file
format, its partition columns and its partitions (values as the Hive-style path spells them, and a folder).
Spark's own catalog answers for tables (``DESCRIBE TABLE EXTENDED``, ``SHOW PARTITIONS``, ``SHOW
TBLPROPERTIES``); folders are walked, as Spark infers partitions: ``col=value`` directories, one level per
partition column, ``__HIVE_DEFAULT_PARTITION__`` for null.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from floe.errors import NoSuchTableError, UnsupportedError, ValidationError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.types import StructType

    from floe.io.fileio import FileIO

__all__ = [
    "FILE_FORMATS",
    "ImportSource",
    "SourcePartition",
    "SparkTableSource",
    "check_format",
    "folder_source",
    "parse_source_name",
    "spark_table_source",
]

FILE_FORMATS = ("parquet", "orc", "avro")
_NULL_DIR = "__HIVE_DEFAULT_PARTITION__"
_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")


@dataclass(frozen=True, slots=True)
class SourcePartition:
    """One partition folder: each partition column's value as text (None for null), and its location."""

    values: Mapping[str, str | None]
    location: str


@dataclass(frozen=True, slots=True)
class ImportSource:
    """Files to import: a location in one format, unpartitioned or split into partition folders."""

    name: str
    location: str
    file_format: str
    partition_columns: tuple[str, ...] = ()
    partitions: tuple[SourcePartition, ...] = ()

    def filtered(self, partition_filter: Mapping[str, str]) -> ImportSource:
        """Only the partitions whose values equal the filter's (Java compares the texts)."""
        if not partition_filter:
            return self
        keep = tuple(p for p in self.partitions
                     if all(p.values.get(k) == v for k, v in partition_filter.items()))
        return ImportSource(self.name, self.location, self.file_format, self.partition_columns, keep)


@dataclass(frozen=True, slots=True)
class SparkTableSource(ImportSource):
    """A Spark session-catalog table as a source, with what snapshot/migrate copy from it."""

    spark_name: str = ""  # spark_catalog.db.t, quoted for Spark SQL
    database: str = "default"
    table: str = ""
    schema: StructType | None = None
    properties: Mapping[str, str] = field(default_factory=dict)
    managed: bool = False
    bucketed: bool = False
    provider: str = ""


def parse_source_name(text: str) -> tuple[str, ...]:
    """The parts of a dotted name, backticks quoting (``` `parquet`.`/a/b.c` ``` is two parts)."""
    parts: list[str] = []
    cur: list[str] = []
    i, quoted, started = 0, False, False
    while i < len(text):
        ch = text[i]
        if quoted:
            if ch == "`" and i + 1 < len(text) and text[i + 1] == "`":
                cur.append("`")
                i += 1
            elif ch == "`":
                quoted = False
            else:
                cur.append(ch)
        elif ch == "`":
            quoted = started = True
        elif ch == ".":
            parts.append("".join(cur).strip() if not started else "".join(cur))
            cur, started = [], False
        else:
            cur.append(ch)
        i += 1
    if quoted:
        raise ValidationError(f"Unclosed backtick in table name {text!r}")
    parts.append("".join(cur).strip() if not started else "".join(cur))
    if any(p == "" for p in parts):
        raise ValidationError(f"Empty part in table name {text!r}")
    return tuple(parts)


def _unescape(text: str) -> str:
    return _ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), text)


def _partition_values(fragment: str) -> dict[str, str | None]:
    values: dict[str, str | None] = {}
    for segment in fragment.strip("/").split("/"):
        key, sep, raw = segment.partition("=")
        if not sep:
            raise ValidationError(f"Not a Hive-style partition folder: {segment!r} in {fragment!r}")
        values[_unescape(key)] = None if raw == _NULL_DIR else _unescape(raw)
    return values


def _quote(part: str) -> str:
    return "`" + part.replace("`", "``") + "`"


def _hidden(name: str) -> bool:
    return name.startswith(("_", "."))


# -- Spark tables -------------------------------------------------------------------------------------
def spark_table_source(spark: SparkSession, parts: tuple[str, ...], *, what: str) -> SparkTableSource:
    """Describe the Spark session-catalog table ``parts`` (``t``, ``db.t`` or ``spark_catalog.db.t``).

    Raises:
        ValidationError: the name is in another catalog, or the table is a view or has no location.
        NoSuchTableError: Spark has no such table.
    """
    if len(parts) == 3 and parts[0].lower() == "spark_catalog":
        parts = parts[1:]
    if len(parts) > 2:
        raise ValidationError(
            f"{what}: source {'.'.join(parts)} must be a table of Spark's session catalog (spark_catalog)")
    database = parts[0] if len(parts) == 2 else spark.catalog.currentDatabase()
    name = f"spark_catalog.{_quote(database)}.{_quote(parts[-1])}"
    if not spark.catalog.tableExists(f"{_quote(database)}.{_quote(parts[-1])}"):
        raise NoSuchTableError(f"{what}: Spark table {database}.{parts[-1]} does not exist")
    info: dict[str, str] = {}
    partition_columns: list[str] = []
    section = ""
    for row in spark.sql(f"DESCRIBE TABLE EXTENDED {name}").collect():
        key, value = (row[0] or "").strip(), (row[1] or "").strip()
        if key.startswith("#"):
            section = section if key == "# col_name" else key  # "# col_name" heads the partition columns
            continue
        if not key:
            section = "" if section == "# Partition Information" else section
            continue
        if section == "# Partition Information":
            partition_columns.append(key)
        elif section == "# Detailed Table Information":
            info[key] = value
    if info.get("Type", "").upper() == "VIEW":
        raise ValidationError(f"{what}: {database}.{parts[-1]} is a view, not a table")
    location = info.get("Location")
    if not location:
        raise ValidationError(f"{what}: Spark table {database}.{parts[-1]} has no location")
    provider = info.get("Provider", "").lower()
    serde = info.get("Serde Library", "").lower()
    fmt = next((f for f in FILE_FORMATS if f == provider or f in serde), provider or "unknown")
    props = {r[0]: r[1] for r in spark.sql(f"SHOW TBLPROPERTIES {name}").collect()}
    partitions: list[SourcePartition] = []
    if partition_columns:
        for row in spark.sql(f"SHOW PARTITIONS {name}").collect():
            # SHOW PARTITIONS prints the escaped path fragment of each partition, as Spark lays it out.
            fragment = str(row[0])
            partitions.append(SourcePartition(_partition_values(fragment), f"{location.rstrip('/')}/{fragment}"))
    return SparkTableSource(
        name=f"{database}.{parts[-1]}",
        location=location,
        file_format=fmt,
        partition_columns=tuple(partition_columns),
        partitions=tuple(partitions),
        spark_name=name,
        database=database,
        table=parts[-1],
        schema=spark.table(name).schema,
        properties=props,
        managed=info.get("Type", "").upper() == "MANAGED",
        bucketed=bool(info.get("Num Buckets") or info.get("Bucket Columns")),
        provider=provider,
    )


# -- folders ------------------------------------------------------------------------------------------
def folder_source(io: FileIO, location: str, file_format: str) -> ImportSource:
    """A folder of ``file_format`` files, partitioned when its files sit in ``col=value`` folders.

    Raises:
        ValidationError: files sit at different partition depths or under differently named columns.
    """
    spelled = location if "://" in location or location.startswith("file:") else f"file:{location}"
    base = spelled.rstrip("/")
    layouts: set[tuple[str, ...]] = set()
    folders: dict[str, dict[str, str | None]] = {}
    for entry in io.list_prefix(base):
        rel = entry.location[len(base):].lstrip("/")
        segments = rel.split("/")
        if any(_hidden(s) for s in segments):
            continue
        dirs = segments[:-1]
        if not dirs:
            layouts.add(())
            continue
        fragment = "/".join(dirs)
        values = _partition_values(fragment)
        layouts.add(tuple(values))
        folders[fragment] = values
    if len(layouts) > 1:
        raise ValidationError(
            f"Cannot import {location}: files sit under different partition layouts "
            f"({', '.join('/'.join(cols) or '<top>' for cols in sorted(layouts))})")
    columns = next(iter(layouts), ())
    parts = tuple(SourcePartition(v, f"{base}/{frag}") for frag, v in sorted(folders.items()))
    return ImportSource(location, spelled, file_format, columns, parts)


def check_format(source: ImportSource, *, what: str) -> None:
    """Only Parquet imports are supported.

    Raises:
        UnsupportedError: an ORC, Avro or other source.
    """
    if source.file_format != "parquet":
        raise UnsupportedError(
            f"Not supported yet: {what} from {source.file_format} files ({source.name}); Floe imports Parquet only")
