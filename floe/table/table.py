"""The Table handle: current metadata plus the operations that load and commit it.

Reading (``metadata``, ``schema()``, ``current_snapshot()``, ``snapshots()``, ``history()``, ``scan()``) never
touches storage beyond the metadata already loaded; ``refresh()`` reloads. Every change goes through a
:class:`Transaction` (``table.transaction()``) or a single-change builder whose ``commit()`` runs its own
transaction (``table.new_append()``, ``table.update_schema()``, ``table.manage_snapshots()`` ...).

``append`` accepts DataFile descriptors (committed here) or data (pyarrow tables, Spark DataFrames), which
it hands to the writer registered in :mod:`floe.write` - the seam between commit logic and data writing.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

import pyarrow as pa

from floe.errors import NoSuchSnapshotError, UnsupportedError, ValidationError
from floe.expressions.base import BooleanExpression
from floe.io.fileio import FileIO
from floe.scan.table_scan import TableScan
from floe.spec.manifest import DataFile
from floe.spec.partitioning import PartitionSpec
from floe.spec.refs import SnapshotRef
from floe.spec.schema import Schema
from floe.spec.snapshot import Snapshot, SnapshotLogEntry
from floe.spec.sort_order import SortOrder
from floe.spec.table_metadata import TableMetadata
from floe.table.identifiers import Identifier, IdentifierLike, identifier_to_string
from floe.table.inspect import InspectTable
from floe.table.manage import ManageSnapshots
from floe.table.operations import TableOperations
from floe.table.producers import (
    DeleteFiles,
    FastAppend,
    MergeAppend,
    Overwrite,
    ReplacePartitions,
    RewriteFiles,
    RowDelta,
)
from floe.table.row_changes import MergeBuilder, UpsertResult, row_level_engine
from floe.table.sort_order_update import ReplaceSortOrder
from floe.table.transaction import Transaction
from floe.table.update_schema import UpdateSchema
from floe.table.update_spec import UpdateSpec

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["WRITER_MODULE", "RowData", "Table", "WriteData"]

# What the writer (floe.write) takes: Arrow data written in this process, or a Spark DataFrame written by Spark.
RowData: TypeAlias = "pa.Table | pa.RecordBatch | DataFrame"
# What append/overwrite take: rows, or DataFile descriptors of files already written (committed as they are).
WriteData: TypeAlias = "RowData | DataFile | list[DataFile] | tuple[DataFile, ...]"

# The data-writing seam: floe.write must define ``append(table, data, *, snapshot_properties, branch)``
# (and ``overwrite(...)``) that write files for Arrow tables / Spark DataFrames and commit them.
WRITER_MODULE = "floe.write"


class OwningCatalog(Protocol):
    """What a table knows of the catalog that loaded it: the table package never imports the catalogs,
    which import it (floe.catalog.base.Catalog satisfies this)."""

    @property
    def name(self) -> str: ...

    def load_table(self, identifier: IdentifierLike) -> Table: ...


class Table:
    """An Iceberg table: its identifier, current metadata, metadata file location and FileIO."""

    def __init__(
        self,
        identifier: Identifier,
        metadata: TableMetadata,
        metadata_location: str | None,
        ops: TableOperations,
        *,
        catalog: OwningCatalog | None = None,
    ) -> None:
        self.identifier = identifier
        self.metadata = metadata
        self.metadata_location = metadata_location
        self.ops = ops
        self.catalog = catalog

    # -- identity --------------------------------------------------------------------------------------
    @property
    def io(self) -> FileIO:
        return self.ops.io

    def name(self) -> str:
        """``namespace.table`` (or the location for tables opened by path)."""
        return identifier_to_string(self.identifier) if any(self.identifier) else self.metadata.location

    def __repr__(self) -> str:
        return f"Table({self.name()!r}, snapshots={len(self.metadata.snapshots)}, location={self.metadata.location!r})"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Table)
            and self.identifier == other.identifier
            and self.metadata_location == other.metadata_location
        )

    def __hash__(self) -> int:
        return hash((self.identifier, self.metadata_location))

    # -- state -----------------------------------------------------------------------------------------
    def refresh(self) -> Table:
        """Reload the current metadata from the catalog (in place); returns self."""
        self.metadata, self.metadata_location = self.ops.load()
        return self

    def _refresh_from(self, metadata: TableMetadata, location: str) -> None:
        self.metadata, self.metadata_location = metadata, location

    def _with_metadata(self, metadata: TableMetadata) -> Table:
        """A handle on the same table showing ``metadata`` (a transaction's staged state)."""
        return Table(self.identifier, metadata, self.metadata_location, self.ops, catalog=self.catalog)

    @property
    def format_version(self) -> int:
        return self.metadata.format_version

    @property
    def properties(self) -> Mapping[str, str]:
        return self.metadata.properties

    def location(self) -> str:
        """The table's base location."""
        return self.metadata.location

    def schema(self) -> Schema:
        """The current schema."""
        return self.metadata.schema()

    def schemas(self) -> Mapping[int, Schema]:
        return self.metadata.schemas_by_id()

    def spec(self) -> PartitionSpec:
        """The default partition spec."""
        return self.metadata.spec()

    def specs(self) -> Mapping[int, PartitionSpec]:
        return self.metadata.specs_by_id()

    def sort_order(self) -> SortOrder:
        return self.metadata.sort_order()

    def current_snapshot(self) -> Snapshot | None:
        """The snapshot ``main`` points at (None for an empty table)."""
        return self.metadata.current_snapshot()

    def snapshots(self) -> list[Snapshot]:
        """Every snapshot in the metadata, oldest first."""
        return list(self.metadata.snapshots)

    def snapshot_by_id(self, snapshot_id: int) -> Snapshot | None:
        return self.metadata.snapshot_by_id(snapshot_id)

    def snapshot_by_name(self, name: str) -> Snapshot | None:
        """The snapshot a branch or tag points at."""
        return self.metadata.snapshot_by_name(name)

    def snapshot_as_of_timestamp(self, timestamp_ms: int) -> Snapshot:
        return self.metadata.snapshot_as_of_timestamp(timestamp_ms)

    def refs(self) -> Mapping[str, SnapshotRef]:
        return self.metadata.refs

    def history(self) -> list[SnapshotLogEntry]:
        """When each snapshot became current (the spec's ``snapshot-log``), oldest first."""
        return list(self.metadata.snapshot_log)

    # -- reading ---------------------------------------------------------------------------------------
    def scan(
        self,
        row_filter: BooleanExpression | str | None = None,
        *,
        selected_fields: tuple[str, ...] = ("*",),
        case_sensitive: bool = True,
        snapshot_id: int | None = None,
        as_of_timestamp: int | None = None,
        ref: str | None = None,
        options: Mapping[str, str] | None = None,
    ) -> TableScan:
        """A scan of this table (see :class:`floe.scan.table_scan.TableScan`).

        Raises:
            NoSuchSnapshotError: ``snapshot_id`` is not in the table.
        """
        if snapshot_id is not None and self.metadata.snapshot_by_id(snapshot_id) is None:
            raise NoSuchSnapshotError(f"Cannot find snapshot {snapshot_id} in table {self.name()}")
        scan = TableScan.of(
            self,
            row_filter=row_filter,
            selected_fields=selected_fields,
            case_sensitive=case_sensitive,
            snapshot_id=snapshot_id,
            as_of_timestamp=as_of_timestamp,
            ref=ref,
            options=options,
        )
        # ``name`` is a method here (as in PyIceberg), not the attribute TableScan.of looks for.
        return dataclasses.replace(scan, table_name=self.name())

    # -- changing --------------------------------------------------------------------------------------
    def transaction(self) -> Transaction:
        """Start a transaction: stage changes, then ``commit_transaction()`` writes one metadata version."""
        return Transaction(self)

    def new_append(self, *, branch: str | None = None) -> MergeAppend:
        """Append files (manifests merged per ``commit.manifest.*``); ``append_file(df)`` then ``commit()``."""
        return MergeAppend(self, branch=branch)

    def new_fast_append(self, *, branch: str | None = None) -> FastAppend:
        """Append files in a new manifest without rewriting existing manifests."""
        return FastAppend(self, branch=branch)

    def new_overwrite(self, *, branch: str | None = None) -> Overwrite:
        """Overwrite: delete by filter or by file, add files, with conflict validation."""
        return Overwrite(self, branch=branch)

    def new_replace_partitions(self, *, branch: str | None = None) -> ReplacePartitions:
        """Dynamic overwrite: replace every partition the added files touch."""
        return ReplacePartitions(self, branch=branch)

    def new_delete(self, *, branch: str | None = None) -> DeleteFiles:
        """Delete whole data files by filter or by name."""
        return DeleteFiles(self, branch=branch)

    def new_rewrite(self, *, branch: str | None = None) -> RewriteFiles:
        """Replace files by files with the same rows (compaction)."""
        return RewriteFiles(self, branch=branch)

    def new_row_delta(self, *, branch: str | None = None) -> RowDelta:
        """Add data and delete files in one snapshot (merge-on-read)."""
        return RowDelta(self, branch=branch)

    def append(
        self,
        data: WriteData,
        *,
        snapshot_properties: Mapping[str, str] | None = None,
        branch: str | None = None,
    ) -> Table:
        """Append rows: DataFile descriptors are committed directly; data goes through :mod:`floe.write`.

        Args:
            data: a pyarrow Table or RecordBatch, a Spark DataFrame, or DataFile descriptors (one, or a list
                or tuple) of files already written.
            snapshot_properties: extra snapshot summary properties.
            branch: commit to this branch instead of ``main``.

        Raises:
            UnsupportedError: ``data`` is not DataFiles and no writer is installed for it.
        """
        files = _as_data_files(data)
        if files is None:
            written: Table = _writer("append")(
                self, data, snapshot_properties=snapshot_properties, branch=branch
            )
            return written
        op = self.new_append(branch=branch)
        for f in files:
            op.append_file(f)
        for k, v in (snapshot_properties or {}).items():
            op.set(k, v)
        op.commit()
        return self

    def overwrite(
        self,
        data: WriteData,
        overwrite_filter: BooleanExpression | str | None = None,
        *,
        filter: BooleanExpression | str | None = None,
        snapshot_properties: Mapping[str, str] | None = None,
        branch: str | None = None,
    ) -> Table:
        """Delete rows matching ``overwrite_filter`` (or ``filter``; all rows by default) and add ``data``.

        With DataFile descriptors, whole files matching the filter are deleted; data goes to :mod:`floe.write`.

        Raises:
            ValidationError: both ``overwrite_filter`` and ``filter`` are given.
        """
        if filter is not None:
            if overwrite_filter is not None:
                raise ValidationError("Give overwrite_filter or filter, not both")
            overwrite_filter = filter
        files = _as_data_files(data)
        if files is None:
            replaced: Table = _writer("overwrite")(
                self,
                data,
                overwrite_filter=overwrite_filter,
                snapshot_properties=snapshot_properties,
                branch=branch,
            )
            return replaced
        op = self.new_overwrite(branch=branch).overwrite_by_filter(
            overwrite_filter if overwrite_filter is not None else "true"
        )
        for f in files:
            op.add_file(f)
        for k, v in (snapshot_properties or {}).items():
            op.set(k, v)
        op.commit()
        return self

    def dynamic_partition_overwrite(
        self,
        data: RowData,
        *,
        snapshot_properties: Mapping[str, str] | None = None,
        branch: str | None = None,
    ) -> Table:
        """Replace every partition ``data`` (a pyarrow Table/RecordBatch or Spark DataFrame) has rows in, via
        :mod:`floe.write`."""
        written: Table = _writer("dynamic_partition_overwrite")(
            self, data, snapshot_properties=snapshot_properties, branch=branch
        )
        return written

    # -- row-level changes (run on Spark: floe.table.row_changes; an Arrow upsert runs here) --------
    def delete(self, filter: str | None = None, *, spark: SparkSession | None = None) -> bool:
        """Delete the rows matching ``filter`` (Spark SQL; None: every row); returns whether anything changed.

        Whole files that match go without reading them; others are rewritten or get position deletes, per
        ``write.delete.mode``. ``spark``: a SparkSession (default: the active one).
        """
        return row_level_engine().delete(self, filter, spark=spark)

    def update(
        self, set: Mapping[str, str], where: str | None = None, *, spark: SparkSession | None = None
    ) -> bool:
        """Set columns (name -> Spark SQL value, e.g. ``{"amount": "amount * 2"}``) on rows matching ``where``."""
        return row_level_engine().update(self, set, where, spark=spark)

    def merge(self, source: DataFrame, on: str | Sequence[str], *, target_alias: str = "t",
              source_alias: str = "s") -> MergeBuilder:
        """``MERGE INTO`` this table from a DataFrame: add ``when_*`` clauses, then ``execute()``.

        ``on`` is a Spark SQL condition over the aliases, or a list of column names joined by equality.
        """
        return MergeBuilder(self, source, on, target_alias=target_alias, source_alias=source_alias)

    def upsert(self, df: RowData, join_cols: Sequence[str] | None = None, *, when_matched_update_all: bool = True,
               when_not_matched_insert_all: bool = True) -> UpsertResult:
        """PyIceberg's upsert: update rows whose key matches and whose other columns differ, insert the rest.

        ``join_cols`` defaults to the table's identifier fields. A pyarrow Table or RecordBatch is upserted in
        this process (:mod:`floe.write`, copy-on-write, no Spark); a Spark DataFrame runs on Spark.
        """
        if isinstance(df, (pa.Table, pa.RecordBatch)):
            local: UpsertResult = _writer("upsert")(
                self, df, join_cols, update=when_matched_update_all, insert=when_not_matched_insert_all
            )
            return local
        keys = list(join_cols) if join_cols else [self.schema().find_column_name(i) or "" for i in self.schema().identifier_field_ids]
        return row_level_engine().upsert(self, df, keys, update=when_matched_update_all, insert=when_not_matched_insert_all)

    @property
    def inspect(self) -> InspectTable:
        """This table's metadata tables as Arrow (``table.inspect.snapshots()``, ``.files()`` ...)."""
        return InspectTable(self)

    def manage_snapshots(self) -> ManageSnapshots:
        """Branches, tags, rollback, set-current and cherry-pick (chain calls, then ``commit()``)."""
        return ManageSnapshots(self)

    def rollback_to_snapshot(self, snapshot_id: int) -> Table:
        """Make an ancestor of the current snapshot current again."""
        self.manage_snapshots().rollback_to_snapshot(snapshot_id).commit()
        return self

    def rollback_to_timestamp(self, timestamp_ms: int) -> Table:
        """Make current the ancestor that was current at ``timestamp_ms``."""
        self.manage_snapshots().rollback_to_timestamp(timestamp_ms).commit()
        return self

    def set_current_snapshot(self, snapshot_id: int | None = None, ref_name: str | None = None) -> Table:
        """Make any snapshot current (not only ancestors): by id, or the one a branch or tag names."""
        self.manage_snapshots().set_current_snapshot(snapshot_id, ref_name).commit()
        return self

    def cherry_pick(self, snapshot_id: int) -> Table:
        """Apply the changes of a snapshot (e.g. a staged WAP snapshot) on top of the current one."""
        self.manage_snapshots().cherry_pick(snapshot_id).commit()
        return self

    def update_schema(
        self, *, allow_incompatible_changes: bool = False, case_sensitive: bool = True
    ) -> UpdateSchema:
        """Schema evolution: ``with table.update_schema() as u: u.add_column("x", LongType())``."""
        return UpdateSchema(
            self, allow_incompatible_changes=allow_incompatible_changes, case_sensitive=case_sensitive
        )

    def update_spec(self, *, case_sensitive: bool = True) -> UpdateSpec:
        """Partition evolution: ``with table.update_spec() as u: u.add_field("ts", DayTransform())``."""
        return UpdateSpec(self, case_sensitive=case_sensitive)

    def replace_sort_order(self, *, case_sensitive: bool = True) -> ReplaceSortOrder:
        """Replace the default sort order: ``table.replace_sort_order().asc("id").commit()``."""
        return ReplaceSortOrder(self, case_sensitive=case_sensitive)

    def update_sort_order(self, case_sensitive: bool = True) -> ReplaceSortOrder:
        """PyIceberg's spelling of :meth:`replace_sort_order`: ``with table.update_sort_order() as u: u.asc("id")``."""
        return self.replace_sort_order(case_sensitive=case_sensitive)

    def set_properties(self, properties: Mapping[str, str] | None = None, **kwargs: str) -> Table:
        """Set table properties."""
        self.transaction().set_properties(properties, **kwargs).commit_transaction()
        return self

    def remove_properties(self, *keys: str) -> Table:
        """Remove table properties."""
        self.transaction().remove_properties(*keys).commit_transaction()
        return self


def _as_data_files(data: WriteData) -> list[DataFile] | None:
    if isinstance(data, DataFile):
        return [data]
    if isinstance(data, (list, tuple)) and all(isinstance(d, DataFile) for d in data):
        return list(data)
    return None


def _writer(kind: str) -> Any:
    try:
        module = importlib.import_module(WRITER_MODULE)
    except ModuleNotFoundError as e:
        if e.name != WRITER_MODULE:
            raise
        raise UnsupportedError(
            f"Table.{kind} of Arrow tables or DataFrames needs the data writer ({WRITER_MODULE}); pass DataFile "
            "descriptors of already-written files instead"
        ) from e
    fn = getattr(module, kind, None)
    if fn is None:
        raise UnsupportedError(f"{WRITER_MODULE} does not provide {kind}()")
    return fn
