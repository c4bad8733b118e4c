"""Turn planned scan tasks into one native Spark DataFrame (Parquet scans + joins for deletes).

Column naming (DESIGN.md section 5): Spark resolves Parquet columns by field id
(``spark.sql.parquet.fieldId.read.enabled``) but pushes filters into Parquet *by name*, and its vectorized
reader fails when a requested name exists in a file with another type. Columns whose name is not stable
across the table's schema history (renamed, or a name reused by another field id) are therefore requested
under a synthetic name (``_floe_c<id>``) that no file contains: ids still match, nothing can be pushed or
clash by name, and the column is renamed back afterwards. Stable columns keep their names and keep
pushdown.

Deletes (spec "Scan Planning", "Position Delete Files", "Equality Delete Files"):
- position deletes: left-anti join on (file path key, ``_metadata.row_index``);
- equality deletes: left-anti join on null-safe equality of the delete's columns, limited to data files
  with a smaller data sequence number in the same partition (or any partition for global deletes).
Identity partition values are filled from the manifest for files that lack the column (imported files).
Files with deletes, files with fills only and the other files are read as separate relations (unioned), so
the other files' rows skip the joins and ``_metadata.row_index``. Rows are keyed by their file's exact
``_metadata.file_path`` (computed on the driver, :func:`spark_file_uri`) when known, else by decoding it per
row (:func:`spark_path_key`); deletes counted small in the manifests are broadcast.

ORC data files are read natively by name (see the ORC section below); Avro data files, ORC files with
position deletes and tasks with ORC/Avro delete files are read on the driver (``_route``).
"""

from __future__ import annotations

import posixpath
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from floe.errors import UnsupportedError
from floe.io.arrow_schema import field_id_of
from floe.io.fileio import FileIO
from floe.io.locations import comparison_key, is_local, to_local_path
from floe.io.name_mapping import NameMapping, name_mapping_from_schema
from floe.io.puffin import read_deletion_vector
from floe.scan.arrow_read import fallback_field_ids, orc_schema_with_ids
from floe.scan.delete_index import is_deletion_vector
from floe.scan.tasks import FileScanTask
from floe.spark.types import FIELD_ID_METADATA_KEY, to_spark_schema, to_spark_type
from floe.spec.manifest import DataFile, FileContent, FileFormat, ManifestEntry
from floe.spec.schema import Schema, walk_fields
from floe.spec.types import IcebergType, ListType, MapType, NestedField, StructType, UUIDType

__all__ = [
    "ROW_FILE_COLUMN",
    "ROW_POS_COLUMN",
    "ScanInputs",
    "driver_path_key",
    "spark_file_uri",
    "spark_path_key",
    "tasks_to_dataframe",
    "unstable_field_ids",
]

_FILE = "_floe_file"
_POS = "_floe_pos"
# Kept in the output when a row's origin is asked for (merge-on-read DML writes position deletes from them).
ROW_FILE_COLUMN = _FILE  # Spark's ``_metadata.file_path`` URI (see spark_path_key)
ROW_POS_COLUMN = _POS  # ``_metadata.row_index``: the row's 0-based position in its file
_KEY = "_floe_key"
# Parquet footers are read to find files without field ids when the table has a name mapping, or when
# the scan is small enough that reading footers is cheap (imported tables without a mapping are read
# by position, as Iceberg Java does). Larger scans of tables without a mapping trust the files' ids.
_FOOTER_PROBE_MAX_FILES = 256
# Delete rows (delete-file rows + deletion-vector positions, from the manifests' record counts) up to which
# the deletes are broadcast to every task (a hash join, no sort of the data rows): ~150 bytes each.
_BROADCAST_DELETE_ROWS = 200_000


@dataclass(frozen=True)
class ScanInputs:
    """Everything the DataFrame builder needs from the planned scan."""

    table_name: str
    io: FileIO
    table_schema: Schema  # the schema the scan reads with (all columns)
    read_schema: Schema  # projection + filter + equality-delete columns (top-level)
    output_schema: Schema  # the columns returned
    all_schemas: Sequence[Schema]
    name_mapping: NameMapping | None
    location_of: Callable[[str], str]
    arrow_fallback: Callable[[list[FileScanTask]], object]  # tasks -> pa.Table (driver read)


# -- paths -------------------------------------------------------------------------------------------
def spark_path_key(col: Column) -> Column:
    """A join key from Spark's ``_metadata.file_path`` URI (decoded, ``file:`` dropped, s3 aliases folded)."""
    decoded = F.url_decode(F.replace(col, F.lit("+"), F.lit("%2B")))  # URLDecoder would turn '+' into ' '
    local = F.regexp_replace(decoded, r"^file:(//)?", "")
    return F.regexp_replace(local, r"^s3[an]?://", "s3://")


def driver_path_key(location: str) -> str:
    """The same key as :func:`spark_path_key`, computed from a readable location on the driver."""
    key = comparison_key(location)
    return key


# Characters Java's java.net.URI (hence Hadoop's Path, hence ``_metadata.file_path``) leaves unquoted in a
# path; other ASCII characters are percent-encoded as UTF-8 (checked against Spark 4 for local files).
_URI_PATH_ASCII = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/_-!.~'()*,;$&+=@")


def spark_file_uri(location: str) -> str | None:
    """The exact string Spark reports in ``_metadata.file_path`` for a local data file, else None.

    Lets the read path compare that column with a constant instead of decoding every row's path.
    None (callers fall back to :func:`spark_path_key`) for remote files and for paths whose spelling
    Hadoop would change (relative, ``//``, ``.``/``..`` segments) or with characters not checked here.
    """
    if not is_local(location):
        return None
    path = to_local_path(location)
    if not path.startswith("/") or path.startswith("//") or posixpath.normpath(path) != path:
        return None
    out = []
    for ch in path:
        if ch in _URI_PATH_ASCII:
            out.append(ch)
        elif ord(ch) < 128 or unicodedata.category(ch) in ("Zs", "Zl", "Zp"):
            if ch in "?[]{}\\:" or (ord(ch) < 32 or ord(ch) == 127):
                return None  # glob characters and ':' (Hadoop reads them specially), control characters
            out.append("".join(f"%{b:02X}" for b in ch.encode("utf-8")))
        elif unicodedata.category(ch)[0] in "LNSPM":
            out.append(ch)  # Java's URI keeps other non-ASCII characters as they are
        else:
            return None
    return "file:" + "".join(out)


def _spark_location(location: str) -> str:
    """A location string Spark reads (local paths as plain absolute paths)."""
    if is_local(location):
        return to_local_path(location)
    if location.startswith("s3://"):
        return "s3a://" + location[len("s3://") :]
    return location


# -- names -------------------------------------------------------------------------------------------
def unstable_field_ids(schemas: Iterable[Schema]) -> set[int]:
    """Field ids whose (dotted) name differs between schemas, or whose name another id also used."""
    names_by_id: dict[int, set[str]] = {}
    ids_by_name: dict[str, set[int]] = {}
    for s in schemas:
        for name, f in walk_fields(s.as_struct()):
            names_by_id.setdefault(f.field_id, set()).add(name)
            ids_by_name.setdefault(name, set()).add(f.field_id)
    out = {i for i, names in names_by_id.items() if len(names) > 1}
    for ids in ids_by_name.values():
        if len(ids) > 1:
            out |= ids
    return out


def _all_ids(t: IcebergType) -> set[int]:
    out: set[int] = set()
    if isinstance(t, (StructType, ListType, MapType)):
        for c in t.children:
            out.add(c.field_id)
            out |= _all_ids(c.field_type)
    return out


def _internal_names(schema: Schema, unstable: set[int]) -> dict[int, str]:
    """Top-level field id -> the name requested from Parquet (synthetic when unstable at any depth)."""
    out: dict[int, str] = {}
    for f in schema.fields:
        ids = {f.field_id} | _all_ids(f.field_type)
        out[f.field_id] = f"_floe_c{f.field_id}" if ids & unstable else f.name
    return out


def _file_field(f: NestedField, name: str) -> T.StructField:
    sf = to_spark_schema(StructType(f), for_files=True).fields[0]
    return T.StructField(name, sf.dataType, True, {FIELD_ID_METADATA_KEY: f.field_id})


# -- per-file facts ------------------------------------------------------------------------------------
def _lacks_column(df: DataFile, field_id: int, present: set[int] | None) -> bool:
    """Whether a file lacks a column: from its footer when probed, else from the manifest's metrics."""
    if present is not None:
        return field_id not in present
    for m in (df.value_counts, df.null_value_counts, df.column_sizes):
        if m:
            return field_id not in m
    return True


def _constant_fills(
    task: FileScanTask, read_fields: tuple[NestedField, ...], present: set[int] | None
) -> dict[int, object]:
    """Values for columns a file lacks: identity partition values, else v3 initial defaults."""
    out: dict[int, object] = {}
    for f in read_fields:
        if f.initial_default is not None and f.field_type.is_primitive and _lacks_column(task.data_file, f.field_id, present):
            out[f.field_id] = f.initial_default
    spec = task.spec
    if spec is None:
        return out
    read_ids = {f.field_id for f in read_fields}
    for pos, pf in enumerate(spec.fields):
        if (
            str(pf.transform) == "identity"
            and pf.source_id in read_ids
            and pos < len(task.data_file.partition)
            and _lacks_column(task.data_file, pf.source_id, present)
        ):
            out[pf.source_id] = task.data_file.partition[pos]
    return out


@dataclass(frozen=True)
class _Footer:
    """Top-level columns of a Parquet file: field ids (None when the file has none) and names."""

    ids: frozenset[int] | None
    names: tuple[str, ...]


def _probe_footers(io: FileIO, locations: list[str]) -> dict[str, _Footer]:
    """Read Parquet footers in parallel (only the schema is used)."""

    def probe(loc: str) -> tuple[str, _Footer]:
        with io.new_input(loc).open() as fo:
            schema = pq.read_schema(fo)
        ids = [i for f in schema if (i := field_id_of(f)) is not None]
        return loc, _Footer(frozenset(ids) if ids else None, tuple(schema.names))

    with ThreadPoolExecutor(8) as pool:
        return dict(pool.map(probe, locations))


# -- ORC -------------------------------------------------------------------------------------------------
# Spark's ORC reader matches columns by name and has no ``_metadata.row_index``: each file's schema is read
# on the driver (the file tail only), its columns get ids (``iceberg.id`` attributes, else the name mapping,
# else the schema's names), and files with the same schema are read together by their own names, then
# renamed/cast to the read schema. Files with position deletes (which need row positions) stay on the driver.


class _NotNative(Exception):
    """A file column Spark's ORC reader cannot return as the table's type (read on the driver instead)."""


def _probe_orc(io: FileIO, locations: list[str], mapping: NameMapping) -> dict[str, pa.Schema]:
    """ORC file schemas with field ids, read in parallel."""
    from pyarrow import orc

    def probe(loc: str) -> tuple[str, pa.Schema]:
        with io.new_input(loc).open() as fo:
            schema = orc.ORCFile(fo).schema
        return loc, orc_schema_with_ids(schema, mapping)

    with ThreadPoolExecutor(8) as pool:
        return dict(pool.map(probe, locations))


_Convert = Callable[[Column], Column] | None  # None: the column is already the table's type


@dataclass(frozen=True)
class _TimeZones:
    """Spark reads ORC TIMESTAMP (no zone) as wall time in the JVM's zone; turning it back needs both zones."""

    session: str
    jvm: str

    def wall_time(self, col: Column) -> Column:
        ntz = col.cast(T.TimestampNTZType())
        if self.session == self.jvm:
            return ntz
        return F.convert_timezone(F.lit(self.session), F.lit(self.jvm), ntz)


def _orc_primitive(at: pa.DataType) -> T.DataType:
    if pa.types.is_boolean(at):
        return T.BooleanType()
    if pa.types.is_int8(at):
        return T.ByteType()
    if pa.types.is_int16(at):
        return T.ShortType()
    if pa.types.is_int32(at):
        return T.IntegerType()
    if pa.types.is_int64(at):
        return T.LongType()
    if pa.types.is_float32(at):
        return T.FloatType()
    if pa.types.is_float64(at):
        return T.DoubleType()
    if pa.types.is_decimal(at):
        return T.DecimalType(at.precision, at.scale)
    if pa.types.is_string(at) or pa.types.is_large_string(at):
        return T.StringType()
    if pa.types.is_binary(at) or pa.types.is_large_binary(at) or pa.types.is_fixed_size_binary(at):
        return T.BinaryType()
    if pa.types.is_date32(at):
        return T.DateType()
    if pa.types.is_timestamp(at):
        return T.TimestampType()
    raise _NotNative(str(at))


def _orc_read_type(
    t: IcebergType, at: pa.DataType, zones: Callable[[], _TimeZones]
) -> tuple[T.DataType, _Convert]:
    """The Spark type to request for a file column (its own names and types) and how to make it ``t``."""
    if isinstance(t, StructType):
        if not pa.types.is_struct(at):
            raise _NotNative(str(at))
        by_id = {field_id_of(at.field(i)): at.field(i) for i in range(at.num_fields)}
        requested: list[T.StructField] = []
        parts: list[tuple[NestedField, str | None, _Convert]] = []
        for c in t.fields:
            af = by_id.get(c.field_id)
            if af is None:
                parts.append((c, None, None))
                continue
            rt, conv = _orc_read_type(c.field_type, af.type, zones)
            requested.append(T.StructField(af.name, rt, True))
            parts.append((c, af.name, conv))
        if not requested:
            raise _NotNative("a struct none of whose fields the file has")
        if all(name == c.name and conv is None for c, name, conv in parts):
            return T.StructType(requested), None

        def struct(col: Column) -> Column:
            fields = []
            for c, name, conv in parts:
                if name is None:
                    v = F.lit(None).cast(to_spark_type(c.field_type, for_files=True))
                else:
                    v = col.getField(name) if conv is None else conv(col.getField(name))
                fields.append(v.alias(c.name))
            return F.when(col.isNull(), F.lit(None)).otherwise(F.struct(*fields))

        return T.StructType(requested), struct
    if isinstance(t, ListType):
        if not (pa.types.is_list(at) or pa.types.is_large_list(at)):
            raise _NotNative(str(at))
        rt, conv = _orc_read_type(t.element_type, at.value_type, zones)
        return T.ArrayType(rt, True), None if conv is None else (lambda col: F.transform(col, conv))
    if isinstance(t, MapType):
        if not pa.types.is_map(at):
            raise _NotNative(str(at))
        kt, kconv = _orc_read_type(t.key_type, at.key_type, zones)
        vt, vconv = _orc_read_type(t.value_type, at.item_type, zones)
        if kconv is None and vconv is None:
            return T.MapType(kt, vt, True), None

        def remap(col: Column) -> Column:
            out = col if kconv is None else F.transform_keys(col, lambda k, _v: kconv(k))
            return out if vconv is None else F.transform_values(out, lambda _k, v: vconv(v))

        return T.MapType(kt, vt, True), remap
    rt = _orc_primitive(at)
    target = to_spark_type(t, for_files=True)
    if rt == target and not (isinstance(target, T.TimestampType) and at.tz is None):
        return rt, None
    if isinstance(rt, T.TimestampType):
        if isinstance(target, T.TimestampNTZType):
            return rt, lambda col: zones().wall_time(col)
        if isinstance(target, T.TimestampType):  # a zone-less file column read as UTC, as Iceberg Java does
            return rt, lambda col: F.convert_timezone(
                F.lit("UTC"), F.lit(zones().session), zones().wall_time(col)
            ).cast(target)
        raise _NotNative(f"{at} as {target.simpleString()}")
    if not isinstance(target, (T.NumericType, T.StringType, T.BinaryType, T.BooleanType, T.DateType)):
        raise _NotNative(f"{at} as {target.simpleString()}")
    return rt, lambda col: col.cast(target)


# -- building --------------------------------------------------------------------------------------------
class _Builder:
    def __init__(
        self, spark: SparkSession, inputs: ScanInputs, tasks: list[FileScanTask], with_position: bool = False
    ) -> None:
        self.spark = spark
        self.inp = inputs
        self.tasks = tasks
        self.with_position = with_position
        self.read_schema = inputs.read_schema
        self.unstable = unstable_field_ids(inputs.all_schemas)
        self.names = _internal_names(self.read_schema, self.unstable)
        self.loc = {t.data_file.file_path: inputs.location_of(t.data_file.file_path) for t in tasks}
        self.footers: dict[str, _Footer] = {}
        # data file path -> its exact ``_metadata.file_path`` when every file's is known (joins then compare
        # that column as it is); None: rows are keyed by decoding it (spark_path_key), once per row.
        self.exact_uris: dict[str, str] | None = None

    def _key_of(self, path: str) -> str:
        """The join key of a data file (recorded path), matching :meth:`_key_column` of its rows."""
        if self.exact_uris is not None:
            return self.exact_uris[path]
        return driver_path_key(self.loc[path])

    def _key_column(self) -> Column:
        if self.exact_uris is not None:
            return F.col(_FILE)
        return spark_path_key(F.col(_FILE))

    def _present(self, task: FileScanTask) -> set[int] | None:
        """Field ids a probed file holds (mapped ids for files without ids), None when not probed."""
        foot = self.footers.get(self.loc[task.data_file.file_path])
        if foot is None:
            return None
        if foot.ids is not None:
            return set(foot.ids)
        return set(self._mapped_names(list(foot.names)))

    # -- data reads ---------------------------------------------------------------------------------
    def _read_parquet_by_id(self, locations: list[str], meta: tuple[str, ...]) -> DataFrame:
        schema = T.StructType([_file_field(f, self.names[f.field_id]) for f in self.read_schema.fields])
        df = self.spark.read.schema(schema).parquet(*[_spark_location(x) for x in locations])
        return self._with_meta(df, meta)

    def _read_parquet_by_name(self, locations: list[str], file_names: dict[int, str], meta: tuple[str, ...]) -> DataFrame:
        """Files without field ids: request each column by its name in the file (from the name mapping)."""
        fields = []
        for f in self.read_schema.fields:
            sf = to_spark_schema(StructType(f), for_files=True).fields[0]
            fields.append(T.StructField(file_names.get(f.field_id, f"_floe_missing{f.field_id}"), _strip(sf.dataType)))
        df = self.spark.read.schema(T.StructType(fields)).parquet(*[_spark_location(x) for x in locations])
        df = self._with_meta(df, meta)
        cols = [F.col(_q(fld.name)).alias(self.names[f.field_id]) for f, fld in zip(self.read_schema.fields, fields)]
        return df.select(*cols, *[F.col(m) for m in meta])

    @staticmethod
    def _with_meta(df: DataFrame, meta: tuple[str, ...]) -> DataFrame:
        """Add the asked metadata columns (_FILE: ``_metadata.file_path``, _POS: ``_metadata.row_index``)."""
        if not meta:
            return df
        source = {_FILE: "_metadata.file_path", _POS: "_metadata.row_index"}
        return df.select("*", *[F.col(source[m]).alias(m) for m in meta])

    def _mapped_names(self, file_columns: list[str]) -> dict[int, str]:
        mapping = self.inp.name_mapping
        out: dict[int, str] = {}
        if mapping is None:
            ids = fallback_field_ids(file_columns, self.inp.table_schema)
            return {i: name for i, name in zip(ids, file_columns) if i is not None}
        present = set(file_columns)
        for f in self.read_schema.fields:
            entry = next((m for m in mapping.fields if m.field_id == f.field_id), None)
            if entry is not None:
                name = next((n for n in entry.names if n in present), None)
                if name is not None:
                    out[f.field_id] = name
        return out

    # -- deletes ------------------------------------------------------------------------------------
    def _check_parquet(self, entries: list[ManifestEntry]) -> None:
        bad = next((e for e in entries if e.data_file.file_format != FileFormat.PARQUET), None)
        if bad is not None:
            raise UnsupportedError(
                f"Table {self.inp.table_name}: delete file {bad.data_file.file_path} is "
                f"{bad.data_file.file_format}; the Spark read path applies Parquet delete files only"
            )

    def _read_deletes(self, entries: list[ManifestEntry], schema: T.StructType | None, with_file: bool = True) -> DataFrame:
        self._check_parquet(entries)
        reader = self.spark.read if schema is None else self.spark.read.schema(schema)
        df = reader.parquet(*[_spark_location(self.inp.location_of(e.data_file.file_path)) for e in entries])
        return df.select("*", F.col("_metadata.file_path").alias("_floe_dfile")) if with_file else df

    def _apply_position_deletes(self, df: DataFrame) -> DataFrame:
        entries: dict[str, ManifestEntry] = {}
        affected: dict[str, str] = {}
        vectors: dict[str, ManifestEntry] = {}  # data file path -> its deletion vector
        for t in self.tasks:
            for e in t.deletes:
                if is_deletion_vector(e):
                    vectors[t.data_file.file_path] = e
                elif e.data_file.content == FileContent.POSITION_DELETES:
                    entries.setdefault(e.data_file.file_path, e)
                    affected[t.data_file.file_path] = self._key_of(t.data_file.file_path)
        if not entries and not vectors:
            return df
        # Deleted rows are few next to the data: a broadcast hash join then spares sorting every data row.
        delete_rows = sum(e.data_file.record_count for e in entries.values()) + sum(
            e.data_file.record_count for e in vectors.values()
        )
        small = delete_rows <= _BROADCAST_DELETE_ROWS
        driver_rows: list[pa.Table] = []
        dels: DataFrame | None = None
        if entries and small:  # a few rows: read on the driver, sparing Spark a job to build the broadcast
            driver_rows.append(self._position_file_rows(list(entries.values()), affected))
        elif entries:
            files = self._read_deletes(list(entries.values()), None, with_file=False)
            cols = {c.lower(): c for c in files.columns}
            mapping = self.spark.createDataFrame(list(affected.items()), "_floe_orig string, _floe_dkey string")
            dels = files.join(F.broadcast(mapping), F.col(cols["file_path"]) == F.col("_floe_orig")).select(
                F.col("_floe_dkey"), F.col(cols["pos"]).cast("long").alias("_floe_dpos")
            )
        if vectors:
            driver_rows.append(self._deletion_vector_rows(vectors))
        if driver_rows:
            local = self.spark.createDataFrame(pa.concat_tables(driver_rows), "_floe_dkey string, _floe_dpos long")
            dels = local if dels is None else dels.unionByName(local)
        assert dels is not None
        same_pos = F.col(_POS) == F.col("_floe_dpos")
        same_file = F.col(_KEY) == F.col("_floe_dkey")
        if not small:
            return df.join(dels, same_pos & same_file, "left_anti")
        # Only the position is hashed (a long key, Spark's fastest hash relation); the file is compared for
        # the rows whose position some delete names. coalesce() keeps it out of the join keys (both sides are
        # non-null, so it never changes the result).
        return df.join(F.broadcast(dels), same_pos & F.coalesce(same_file, F.lit(False)), "left_anti")

    def _position_file_rows(self, entries: list[ManifestEntry], affected: dict[str, str]) -> pa.Table:
        """(path key, position) rows of position delete files for the scanned data files, read on the driver.

        ``affected`` maps the data files' recorded paths (as the delete files spell them) to their keys."""
        self._check_parquet(entries)

        def read(e: ManifestEntry) -> pa.Table:
            with self.inp.io.new_input(self.inp.location_of(e.data_file.file_path)).open() as fo:
                pf = pq.ParquetFile(fo)
                names = {n.lower(): n for n in pf.schema_arrow.names}
                t = pf.read(columns=[names["file_path"], names["pos"]])
            return pa.table({"file_path": t.column(0).cast(pa.string()), "pos": t.column(1).cast(pa.int64())})

        with ThreadPoolExecutor(8) as pool:
            rows = pa.concat_tables(list(pool.map(read, entries)))
        owner = pc.index_in(rows["file_path"], value_set=pa.array(list(affected), pa.string()))
        mine = pc.is_valid(owner)  # delete files may also name data files this scan does not read
        keys = pa.array(list(affected.values()), pa.string())
        return pa.table({
            "_floe_dkey": keys.take(owner.filter(mine)),
            "_floe_dpos": rows["pos"].filter(mine),
        })

    def _deletion_vector_rows(self, vectors: dict[str, ManifestEntry]) -> pa.Table:
        """(path key, position) rows of v3 deletion vectors, decoded on the driver (one ranged read each)."""

        def decode(item: tuple[str, ManifestEntry]) -> tuple[str, np.ndarray]:
            path, e = item
            positions = read_deletion_vector(self.inp.io, self.inp.location_of(e.data_file.file_path), e.data_file)
            return self._key_of(path), positions

        with ThreadPoolExecutor(8) as pool:
            decoded = list(pool.map(decode, vectors.items()))
        keys = pa.array([k for k, _ in decoded], pa.string())
        owner = np.repeat(np.arange(len(decoded)), [len(p) for _, p in decoded])  # row -> its data file
        return pa.table({
            "_floe_dkey": keys.take(pa.array(owner, pa.int64())),
            "_floe_dpos": pa.array(np.concatenate([p for _, p in decoded]), pa.int64()),
        })

    def _apply_equality_deletes(self, df: DataFrame) -> DataFrame:
        groups: dict[tuple[int, ...], dict[str, ManifestEntry]] = {}
        for t in self.tasks:
            for e in t.deletes:
                if e.data_file.content == FileContent.EQUALITY_DELETES:
                    ids = tuple(e.data_file.equality_ids or ())
                    groups.setdefault(ids, {}).setdefault(e.data_file.file_path, e)
        if not groups:
            return df
        pkeys: dict[tuple[int, tuple[object, ...]], int] = {}

        def pkey(spec_id: int, partition: tuple[object, ...]) -> int:
            return pkeys.setdefault((spec_id, partition), len(pkeys))

        data_rows = [
            (self._key_of(t.data_file.file_path), t.data_sequence_number, pkey(t.data_file.spec_id, t.data_file.partition))
            for t in self.tasks
            if any(e.data_file.content == FileContent.EQUALITY_DELETES for e in t.deletes)
        ]
        dm = self.spark.createDataFrame(data_rows, "_floe_k2 string, _floe_seq long, _floe_pkey int")
        df = df.join(F.broadcast(dm), F.col(_KEY) == F.col("_floe_k2"), "left").drop("_floe_k2")
        for ids, entries in groups.items():
            fields = []
            for i in ids:
                f = self.inp.read_schema.find_field_or_none(i)
                if f is None or self.read_schema.find_field_or_none(i) not in self.read_schema.fields:
                    raise UnsupportedError(
                        f"Table {self.inp.table_name}: equality deletes on nested or dropped field id {i} are not supported"
                    )
                fields.append(_file_field(f, f"_floe_eq{i}"))
            dels = self._read_deletes(list(entries.values()), T.StructType(fields))
            rows = []
            for e in entries.values():
                dfile = e.data_file
                spec_fields = self._spec_is_partitioned(dfile)
                rows.append((
                    driver_path_key(self.inp.location_of(dfile.file_path)),
                    e.sequence_number or 0,
                    pkey(dfile.spec_id, dfile.partition) if spec_fields else -1,
                ))
            mm = self.spark.createDataFrame(rows, "_floe_dk string, _floe_dseq long, _floe_dpkey int")
            dels = dels.join(F.broadcast(mm), spark_path_key(F.col("_floe_dfile")) == F.col("_floe_dk")).drop(
                "_floe_dfile", "_floe_dk"
            )
            cond = (F.col("_floe_seq") < F.col("_floe_dseq")) & (
                (F.col("_floe_dpkey") == F.lit(-1)) | (F.col("_floe_dpkey") == F.col("_floe_pkey"))
            )
            for i in ids:
                # Spec: equality deletes match nulls, hence null-safe equality.
                cond = cond & F.col(_q(self.names[i])).eqNullSafe(F.col(f"_floe_eq{i}"))
            small = sum(e.data_file.record_count for e in entries.values()) <= _BROADCAST_DELETE_ROWS
            df = df.join(F.broadcast(dels) if small else dels, cond, "left_anti")
        return df.drop("_floe_seq", "_floe_pkey")

    def _spec_is_partitioned(self, dfile: DataFile) -> bool:
        for t in self.tasks:
            if t.spec is not None and t.spec.spec_id == dfile.spec_id:
                return t.spec.is_partitioned
        return bool(dfile.partition)

    def _apply_identity_fills(self, df: DataFrame) -> DataFrame:
        fills = {t.data_file.file_path: _constant_fills(t, self.read_schema.fields, self._present(t)) for t in self.tasks}
        fill_ids = sorted({i for v in fills.values() for i in v})
        if not fill_ids:
            return df
        fields = [T.StructField("_floe_k3", T.StringType())]
        for i in fill_ids:
            f = self.read_schema.find_field(i)
            fields.append(T.StructField(f"_floe_fill{i}", to_spark_type(f.field_type, for_files=True)))
        rows = []
        for path, vals in fills.items():
            if vals:
                rows.append(tuple([self._key_of(path)] + [_py(vals.get(i), self.read_schema.find_field(i).field_type) for i in fill_ids]))
        fm = self.spark.createDataFrame(rows, T.StructType(fields))
        df = df.join(F.broadcast(fm), F.col(_KEY) == F.col("_floe_k3"), "left")
        for i in fill_ids:
            name = self.names[i]
            df = df.withColumn(name, F.coalesce(F.col(_q(name)), F.col(f"_floe_fill{i}")))
        return df.drop("_floe_k3", *[f"_floe_fill{i}" for i in fill_ids])

    # -- ORC data files ------------------------------------------------------------------------------
    def _orc_frames(self, tasks: list[FileScanTask]) -> tuple[list[DataFrame], list[FileScanTask]]:
        """Native reads of ORC files grouped by file schema; the tasks Spark cannot read are returned."""
        mapping = self.inp.name_mapping or name_mapping_from_schema(self.inp.table_schema)
        locations = list(dict.fromkeys(self.loc[t.data_file.file_path] for t in tasks))
        schemas = _probe_orc(self.inp.io, locations, mapping)
        zones = _lazy_time_zones(self.spark)
        groups: dict[str, tuple[T.StructType, list[Column], list[str]]] = {}
        driver: set[str] = set()
        for loc, schema in schemas.items():
            key = schema.to_string(show_field_metadata=True, show_schema_metadata=False)
            if key in groups:
                groups[key][2].append(loc)
                continue
            try:
                requested, columns = self._orc_plan(schema, zones)
            except _NotNative:
                driver.add(loc)
                continue
            groups[key] = (requested, columns, [loc])
        for loc, schema in schemas.items():
            ids = [i for f in schema if (i := field_id_of(f)) is not None]
            self.footers[loc] = _Footer(frozenset(ids), tuple(schema.names))
        native = [t for t in tasks if self.loc[t.data_file.file_path] not in driver]
        rest = [t for t in tasks if self.loc[t.data_file.file_path] in driver]
        if not native:
            return [], rest
        self.tasks = native
        need_meta = any(t.deletes for t in native) or any(
            _constant_fills(t, self.read_schema.fields, self._present(t)) for t in native
        )
        df: DataFrame | None = None
        for requested, columns, locs in groups.values():
            raw = self.spark.read.schema(requested).orc([_spark_location(x) for x in locs])
            meta = [F.col("_metadata.file_path").alias(_FILE)] if need_meta else []
            part = raw.select(*columns, *meta)
            df = part if df is None else df.unionByName(part)
        assert df is not None
        if need_meta:
            df = df.withColumn(_KEY, self._key_column())
            df = self._apply_identity_fills(df)
            df = self._apply_equality_deletes(df)  # position deletes never reach here (no row_index in ORC)
            df = df.drop(_FILE, _KEY)
        return [self._finish(df)], rest

    def _orc_plan(
        self, schema: pa.Schema, zones: Callable[[], _TimeZones]
    ) -> tuple[T.StructType, list[Column]]:
        """The read schema of one ORC file layout (file names, file types) and the columns it becomes."""
        by_id = {field_id_of(f): f for f in schema}
        requested: list[T.StructField] = []
        columns: list[Column] = []
        for f in self.read_schema.fields:
            name = self.names[f.field_id]
            af = by_id.get(f.field_id)
            if af is None:
                columns.append(F.lit(None).cast(to_spark_type(f.field_type, for_files=True)).alias(name))
                continue
            rt, conv = _orc_read_type(f.field_type, af.type, zones)
            requested.append(T.StructField(af.name, rt, True))
            col = F.col(_q(af.name))
            columns.append((col if conv is None else conv(col)).alias(name))
        if not requested:  # no column to read, only rows to count: a column no file has reads as nulls
            requested.append(T.StructField("_floe_rows", T.IntegerType(), True))
        return T.StructType(requested), columns

    def _for(self, tasks: list[FileScanTask]) -> _Builder:
        """A builder for a subset of the tasks (deletes are looked up per frame)."""
        return _Builder(self.spark, self.inp, tasks, self.with_position)

    # -- assembly ------------------------------------------------------------------------------------
    def build(self) -> DataFrame:
        parquet, orc, others = _route(self.tasks)
        if self.with_position and (orc or others):
            bad = (orc or others)[0].data_file.file_path
            raise UnsupportedError(
                f"Table {self.inp.table_name}: row positions are read from Parquet files only, not {bad}"
            )
        frames: list[DataFrame] = []
        if parquet:
            frames.extend(self._for(parquet)._parquet_frames(parquet))
        if orc:
            orc_frames, rest = self._for(orc)._orc_frames(orc)
            frames.extend(orc_frames)
            others.extend(rest)
        if others:
            frames.append(self._arrow_frame(others))
        if not frames:
            return self.spark.createDataFrame([], to_spark_schema(self.inp.output_schema))
        out = frames[0]
        for f in frames[1:]:
            out = out.unionByName(f)
        return out

    def _parquet_frames(self, tasks: list[FileScanTask]) -> list[DataFrame]:
        """Files without deletes or fills, files with fills only, and files with deletes, read apart.

        Only the last need each row's position and only the last two each row's file, so the joins that
        apply deletes (or fill columns) never see the rows of the other files.
        """
        locations = [self.loc[t.data_file.file_path] for t in tasks]
        probe = self.inp.name_mapping is not None or len(locations) <= _FOOTER_PROBE_MAX_FILES
        self.footers = _probe_footers(self.inp.io, locations) if probe else {}
        if self.with_position:
            return [self._parquet_frame(tasks)]
        plain: list[FileScanTask] = []
        filled: list[FileScanTask] = []
        deleted: list[FileScanTask] = []
        for t in tasks:
            if t.deletes:
                deleted.append(t)
            elif _constant_fills(t, self.read_schema.fields, self._present(t)):
                filled.append(t)
            else:
                plain.append(t)
        frames = []
        for group in (plain, filled, deleted):
            if group:
                part = self._for(group)
                part.footers = self.footers
                frames.append(part._parquet_frame(group))
        return frames

    def _parquet_frame(self, tasks: list[FileScanTask]) -> DataFrame:
        locations = [self.loc[t.data_file.file_path] for t in tasks]
        mine = set(locations)
        no_ids = {loc: list(f.names) for loc, f in self.footers.items() if f.ids is None and loc in mine}
        needs_fill = any(_constant_fills(t, self.read_schema.fields, self._present(t)) for t in tasks)
        need_pos = self.with_position or any(
            e.data_file.content == FileContent.POSITION_DELETES for t in tasks for e in t.deletes
        )
        need_file = need_pos or needs_fill or any(t.deletes for t in tasks)
        meta = (_FILE,) * need_file + (_POS,) * need_pos
        groups: dict[tuple[tuple[int, str], ...], list[str]] = {}
        with_ids = [x for x in locations if x not in no_ids]
        for loc, cols in no_ids.items():
            groups.setdefault(tuple(sorted(self._mapped_names(cols).items())), []).append(loc)
        raw: list[DataFrame] = []
        if with_ids:
            raw.append(self._read_parquet_by_id(with_ids, meta))
        for names, locs in groups.items():
            raw.append(self._read_parquet_by_name(locs, dict(names), meta))
        df = raw[0]
        for r in raw[1:]:
            df = df.unionByName(r)
        if need_file:
            uris = {t.data_file.file_path: spark_file_uri(self.loc[t.data_file.file_path]) for t in tasks}
            if all(u is not None for u in uris.values()):
                self.exact_uris = {p: u for p, u in uris.items() if u is not None}
            df = df.withColumn(_KEY, self._key_column())
            df = self._apply_identity_fills(df)
            df = self._apply_position_deletes(df)
            df = self._apply_equality_deletes(df)
            if not self.with_position:
                df = df.drop(*meta)
            df = df.drop(_KEY)
        return self._finish(df)

    def _finish(self, df: DataFrame) -> DataFrame:
        """Columns renamed back to the schema's names (uuid bytes as text); one selectExpr call."""
        exprs = []
        for f in self.read_schema.fields:
            src = _q(self.names[f.field_id])
            if isinstance(f.field_type, UUIDType):
                h = f"lower(hex({src}))"
                parts = ", ".join(f"substr({h}, {a}, {n})" for a, n in ((1, 8), (9, 4), (13, 4), (17, 4), (21, 12)))
                src = f"CASE WHEN {src} IS NULL THEN NULL ELSE concat_ws('-', {parts}) END"
            exprs.append(f"{src} AS {_q(f.name)}")
        if self.with_position:
            exprs += [_FILE, _POS]
        if list(df.columns) == [f.name for f in self.read_schema.fields] and not any(
            isinstance(f.field_type, UUIDType) for f in self.read_schema.fields
        ):
            return df
        return df.selectExpr(*exprs)

    def _arrow_frame(self, tasks: list[FileScanTask]) -> DataFrame:
        table = self.inp.arrow_fallback(tasks)
        return self.spark.createDataFrame(table, to_spark_schema(self.read_schema))


def _route(tasks: list[FileScanTask]) -> tuple[list[FileScanTask], list[FileScanTask], list[FileScanTask]]:
    """Tasks read natively as Parquet, natively as ORC, and on the driver.

    Spark reads Parquet delete files (and v3 deletion vectors are decoded on the driver), so a task with
    an ORC or Avro delete file goes to the driver; so does an ORC file with position deletes, because
    Spark's ORC source has no ``_metadata.row_index`` to join them on.
    """
    parquet: list[FileScanTask] = []
    orc: list[FileScanTask] = []
    driver: list[FileScanTask] = []
    for t in tasks:
        fmt = t.data_file.file_format
        foreign_deletes = any(e.data_file.file_format in (FileFormat.ORC, FileFormat.AVRO) for e in t.deletes)
        if fmt == FileFormat.PARQUET and not foreign_deletes:
            parquet.append(t)
        elif fmt == FileFormat.ORC and not foreign_deletes and not any(
            e.data_file.content == FileContent.POSITION_DELETES for e in t.deletes
        ):
            orc.append(t)
        else:
            driver.append(t)
    return parquet, orc, driver


def _lazy_time_zones(spark: SparkSession) -> Callable[[], _TimeZones]:
    """The session and JVM time zones, looked up once and only when an ORC timestamp needs them.

    Executors are assumed to run with the driver JVM's default zone (true for local mode and for
    clusters configured alike)."""
    found: list[_TimeZones] = []

    def get() -> _TimeZones:
        if not found:
            session_tz = spark.conf.get("spark.sql.session.timeZone") or "UTC"
            jvm = spark.sparkContext._jvm
            assert jvm is not None  # a classic session (the read path needs the JVM)
            found.append(_TimeZones(session_tz, str(jvm.java.util.TimeZone.getDefault().getID())))
        return found[0]

    return get


def _strip(t: T.DataType) -> T.DataType:
    """The type without field-id metadata (name-mapped files are read by name at every level)."""
    if isinstance(t, T.StructType):
        return T.StructType([T.StructField(f.name, _strip(f.dataType), f.nullable) for f in t.fields])
    if isinstance(t, T.ArrayType):
        return T.ArrayType(_strip(t.elementType), t.containsNull)
    if isinstance(t, T.MapType):
        return T.MapType(_strip(t.keyType), _strip(t.valueType), t.valueContainsNull)
    return t


def _q(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _py(value: object, t: IcebergType) -> object:
    """A partition value (Floe's representation) as the Python value Spark's createDataFrame expects."""
    import datetime as dt

    from floe.spec.types import DateType, TimestampType, TimestamptzType

    if value is None:
        return None
    if isinstance(t, DateType):
        return dt.date(1970, 1, 1) + dt.timedelta(days=int(str(value)))
    if isinstance(t, TimestamptzType):
        return dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(microseconds=int(str(value)))
    if isinstance(t, TimestampType):
        return dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=int(str(value)))
    if isinstance(t, UUIDType):
        return getattr(value, "bytes", value)
    return value


def tasks_to_dataframe(
    spark: SparkSession, inputs: ScanInputs, tasks: list[FileScanTask], *, with_position: bool = False
) -> DataFrame:
    """One DataFrame with the rows of ``tasks`` (deletes applied), columns of ``inputs.read_schema``.

    ``with_position`` adds :data:`ROW_FILE_COLUMN` and :data:`ROW_POS_COLUMN` (Parquet data files only).
    """
    return _Builder(spark, inputs, tasks, with_position).build()
