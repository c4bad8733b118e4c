"""One Parquet data file being written with pyarrow: buffered row groups, size tracking, metrics on close.

Settings come from table properties (Iceberg's names and defaults): ``write.parquet.compression-codec``
(zstd, Iceberg's default since 1.4), ``write.parquet.compression-level``, ``write.parquet.row-group-size-bytes``
(128 MB), ``write.parquet.page-size-bytes`` (1 MB), ``write.parquet.dict-size-bytes`` (2 MB), the Bloom filter
properties (floe.spec.bloom_filters). Row groups are
accumulated as Arrow batches and flushed as one row group when their in-memory size reaches the row-group
size (or the owner asks, to bound memory across many open files).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from floe.io.fileio import FileIO
from floe.io.name_mapping import NameMapping
from floe.io.parquet_metrics import NanCounter, footer_metrics
from floe.spec import properties as P
from floe.spec.manifest import DataFile, FileContent, FileFormat
from floe.spec.parquet_columns import ColumnSettings, column_settings, ndv_filling_bytes
from floe.spec.schema import Schema

__all__ = ["ParquetFileWriter", "ParquetSettings", "data_file_from_footer"]

_CODECS = {"zstd": "zstd", "snappy": "snappy", "gzip": "gzip", "lz4": "lz4", "brotli": "brotli",
           "uncompressed": "none", "none": "none", "lz4_raw": "lz4"}


@dataclass(frozen=True, slots=True)
class ParquetSettings:
    """Parquet writer settings resolved from table properties, for data files or delete files."""

    compression: str = "zstd"
    compression_level: int | None = None
    row_group_bytes: int = P.PARQUET_ROW_GROUP_SIZE_BYTES_DEFAULT
    page_bytes: int = P.PARQUET_PAGE_SIZE_BYTES_DEFAULT
    page_rows: int = P.PARQUET_PAGE_ROW_LIMIT_DEFAULT
    dict_bytes: int = P.PARQUET_DICT_SIZE_BYTES_DEFAULT
    target_file_bytes: int = P.WRITE_TARGET_FILE_SIZE_BYTES_DEFAULT
    bloom_filter_max_bytes: int = P.PARQUET_BLOOM_FILTER_MAX_BYTES_DEFAULT
    bloom_filter_adaptive: bool = False  # parquet-mr's sizing to the actual NDV (pyarrow's only way)
    # Delete files get neither Bloom filters nor per-column statistics settings (as in Iceberg Java).
    column_settings: bool = True

    @classmethod
    def from_properties(
        cls, properties: Mapping[str, str], *, table_name: str = "", deletes: bool = False
    ) -> ParquetSettings:
        """Read the ``write.parquet.*`` and ``write.target-file-size-bytes`` properties, for data files or (with
        ``deletes``) delete files of ``table_name``, which take ``write.delete.parquet.*`` where set.

        Raises:
            ValidationError: a compression level out of its codec's range.
            UnsupportedError: the table asks for ORC or Avro files (``write.format.default`` or
                ``write.delete.format.default``).
        """
        P.check_written_format(properties, P.DELETE_DEFAULT_FILE_FORMAT if deletes else P.DEFAULT_FILE_FORMAT, table_name)
        codec, _, level, _ = P.parquet_codec_and_level(properties, deletes=deletes)
        if codec not in P.PARQUET_COMPRESSION_LEVELS:
            # Floe refuses to set a level on such a codec; a table configured elsewhere writes as Java does.
            level = None
        else:
            P.validate_compression(properties, deletes=deletes)

        def size(data_key: str, delete_key: str, default: int) -> int:
            key = delete_key if deletes and delete_key in properties else data_key
            return P.property_int(properties, key, default)

        return cls(
            compression=_CODECS.get(codec, codec),
            compression_level=int(level) if level is not None else None,
            row_group_bytes=size(
                P.PARQUET_ROW_GROUP_SIZE_BYTES, P.DELETE_PARQUET_ROW_GROUP_SIZE_BYTES, P.PARQUET_ROW_GROUP_SIZE_BYTES_DEFAULT
            ),
            page_bytes=size(P.PARQUET_PAGE_SIZE_BYTES, P.DELETE_PARQUET_PAGE_SIZE_BYTES, P.PARQUET_PAGE_SIZE_BYTES_DEFAULT),
            page_rows=size(P.PARQUET_PAGE_ROW_LIMIT, P.DELETE_PARQUET_PAGE_ROW_LIMIT, P.PARQUET_PAGE_ROW_LIMIT_DEFAULT),
            dict_bytes=size(P.PARQUET_DICT_SIZE_BYTES, P.DELETE_PARQUET_DICT_SIZE_BYTES, P.PARQUET_DICT_SIZE_BYTES_DEFAULT),
            target_file_bytes=P.property_int(
                properties, P.WRITE_TARGET_FILE_SIZE_BYTES, P.WRITE_TARGET_FILE_SIZE_BYTES_DEFAULT
            ),
            bloom_filter_max_bytes=P.property_int(
                properties, P.PARQUET_BLOOM_FILTER_MAX_BYTES, P.PARQUET_BLOOM_FILTER_MAX_BYTES_DEFAULT
            ),
            bloom_filter_adaptive=P.property_bool(properties, P.PARQUET_BLOOM_FILTER_ADAPTIVE_ENABLED, False),
            column_settings=not deletes,
        )

    def writer_options(
        self, columns: ColumnSettings | None = None, arrow_schema: pa.Schema | None = None
    ) -> dict[str, Any]:
        """Keyword arguments for ``pq.ParquetWriter``, with the Bloom filters and statistics settings of the file's
        columns (``arrow_schema`` lists the columns that keep statistics)."""
        opts: dict[str, Any] = {
            "compression": self.compression,
            "data_page_size": self.page_bytes,
            "max_rows_per_page": self.page_rows,
            "dictionary_pagesize_limit": self.dict_bytes,
            "write_statistics": True,
            "store_schema": False,  # Iceberg readers need no Arrow schema blob; ids live in the Parquet schema
        }
        if self.compression_level is not None:
            opts["compression_level"] = self.compression_level
        if columns is None or not self.column_settings:
            return opts
        if columns.bloom_filters:
            # pyarrow sizes a filter by an NDV, at most the chunk's value count: the NDV that fills max-bytes
            # stands for "no NDV" (parquet-mr then takes all of max-bytes) and caps a given one.
            opts["bloom_filter_options"] = {
                c.parquet_path: {
                    "ndv": min(c.ndv or sys.maxsize, ndv_filling_bytes(self.bloom_filter_max_bytes, c.fpp)),
                    "fpp": c.fpp,
                }
                for c in columns.bloom_filters
            }
        if columns.without_statistics and arrow_schema is not None:
            off = set(columns.without_statistics)
            opts["write_statistics"] = [p for p in arrow_leaf_paths(arrow_schema) if p not in off]
        return opts


def arrow_leaf_paths(schema: pa.Schema) -> list[str]:
    """The Parquet column paths pyarrow writes for ``schema`` (lists as ``list.element``, maps as
    ``key_value.key``/``key_value.value``)."""
    out: list[str] = []

    def visit(t: pa.DataType, path: str) -> None:
        if pa.types.is_struct(t):
            for i in range(t.num_fields):
                visit(t.field(i).type, f"{path}.{t.field(i).name}")
        elif pa.types.is_map(t):
            visit(t.key_type, f"{path}.key_value.key")
            visit(t.item_type, f"{path}.key_value.value")
        elif pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
            visit(t.value_type, f"{path}.list.element")
        else:
            out.append(path)

    for f in schema:
        visit(f.type, f.name)
    return out


def data_file_from_footer(
    metadata: pq.FileMetaData,
    *,
    location: str,
    file_size: int,
    schema: Schema,
    properties: Mapping[str, str],
    partition: tuple[Any, ...],
    spec_id: int,
    nan_counts: Mapping[int, int] | None = None,
    sort_order_id: int | None = None,
    name_mapping: NameMapping | None = None,
) -> DataFile:
    """A DataFile descriptor for a Parquet file, metrics from its footer (floe.io.parquet_metrics); a file
    without field ids (an imported one) is read through ``name_mapping``."""
    m = footer_metrics(metadata, schema, properties=properties, nan_counts=nan_counts, name_mapping=name_mapping)
    offsets = []
    for i in range(metadata.num_row_groups):
        col = metadata.row_group(i).column(0)
        dict_offset = col.dictionary_page_offset if col.has_dictionary_page else None
        offsets.append(min(o for o in (dict_offset, col.data_page_offset) if o is not None))
    return DataFile(
        content=FileContent.DATA,
        file_path=location,
        file_format=FileFormat.PARQUET,
        partition=partition,
        record_count=metadata.num_rows,
        file_size_in_bytes=file_size,
        column_sizes=dict(m.column_sizes),
        value_counts=dict(m.value_counts),
        null_value_counts=dict(m.null_value_counts),
        nan_value_counts=dict(m.nan_value_counts) if nan_counts is not None else None,
        lower_bounds=dict(m.lower_bounds),
        upper_bounds=dict(m.upper_bounds),
        split_offsets=tuple(sorted(offsets)) or None,
        sort_order_id=sort_order_id,
        spec_id=spec_id,
    )


class ParquetFileWriter:
    """Writes one Parquet data file; rows arrive as Arrow data already laid out as the file schema."""

    def __init__(
        self,
        io: FileIO,
        location: str,
        arrow_schema: pa.Schema,
        settings: ParquetSettings,
        *,
        schema: Schema,
        properties: Mapping[str, str],
        partition: tuple[Any, ...],
        spec_id: int,
        sort_order_id: int | None = None,
        count_nans: bool = True,
    ) -> None:
        self.location = location
        self._schema, self._properties = schema, properties
        self._partition, self._spec_id, self._sort_order_id = partition, spec_id, sort_order_id
        self._settings = settings
        fs, path = io.resolve(location)
        parent = path.rsplit("/", 1)[0]
        if parent and not isinstance(fs, pafs.S3FileSystem):
            fs.create_dir(parent, recursive=True)
        self._stream = fs.open_output_stream(path)
        options = settings.writer_options(column_settings(schema, properties), arrow_schema)
        self._writer = pq.ParquetWriter(self._stream, arrow_schema, **options)
        self._buffer: list[pa.RecordBatch | pa.Table] = []
        self.buffered_bytes = 0
        self._buffered_rows = 0
        self._flushed_arrow_bytes = 0
        self._written_bytes = 0  # the stream's position after the last row group (tell() on every write: 44 us)
        self.rows = 0
        self._nans = NanCounter(schema) if count_nans else None
        self._closed = False

    @property
    def written_bytes(self) -> int:
        """Bytes already in the file (flushed row groups)."""
        return self._written_bytes

    def estimated_size(self) -> int:
        """File bytes so far plus the buffered rows at the compression ratio seen so far."""
        ratio = self.written_bytes / self._flushed_arrow_bytes if self._flushed_arrow_bytes else 1.0
        return self.written_bytes + int(self.buffered_bytes * ratio)

    def write(self, data: pa.RecordBatch | pa.Table) -> None:
        """Buffer rows; a row group is flushed when the buffer reaches the row-group size."""
        if data.num_rows == 0:
            return
        self._buffer.append(data)
        self.buffered_bytes += data.nbytes
        self._buffered_rows += data.num_rows
        self.rows += data.num_rows
        if self.buffered_bytes >= self._settings.row_group_bytes:
            self.flush()

    def flush(self) -> None:
        """Write the buffered rows as one row group."""
        if not self._buffer:
            return
        parts = [t if isinstance(t, pa.Table) else pa.Table.from_batches([t]) for t in self._buffer]
        table = parts[0] if len(parts) == 1 else pa.concat_tables(parts)
        if self._nans is not None:  # once per row group: per write it cost more than small writes' rows
            self._nans.update(table)
        self._writer.write_table(table, row_group_size=max(table.num_rows, 1))
        self._written_bytes = int(self._stream.tell())
        self._flushed_arrow_bytes += self.buffered_bytes
        self._buffer.clear()
        self.buffered_bytes = 0
        self._buffered_rows = 0

    def close(self) -> DataFile:
        """Finish the file and describe it."""
        self.flush()
        self._writer.close()
        size = int(self._stream.tell())
        self._stream.close()
        self._closed = True
        return data_file_from_footer(
            self._writer.writer.metadata,
            location=self.location,
            file_size=size,
            schema=self._schema,
            properties=self._properties,
            partition=self._partition,
            spec_id=self._spec_id,
            nan_counts=self._nans.counts if self._nans is not None else None,
            sort_order_id=self._sort_order_id,
        )

    def abort(self) -> None:
        """Close without finishing (the caller deletes the file)."""
        if self._closed:
            return
        self._closed = True
        self._buffer.clear()
        # the file is deleted next: a failing close must not hide the error that caused the abort
        with contextlib.suppress(OSError, pa.ArrowException):
            self._writer.close()
        with contextlib.suppress(OSError, pa.ArrowException):
            if not self._stream.closed:
                self._stream.close()
