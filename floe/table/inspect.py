"""A table's metadata tables as Arrow, without Spark: ``table.inspect.snapshots()`` (PyIceberg's spelling).

The rows and columns are those of Iceberg's Spark metadata tables (floe.scan.metadata_tables computes them
from metadata and manifests on the driver); ``floe.spark.inspect(spark, table)`` gives the same as Spark
DataFrames.
"""

from __future__ import annotations

import pyarrow as pa

from floe.scan import metadata_tables
from floe.scan.table_scan import TableLike

__all__ = ["InspectTable"]


class InspectTable:
    """The metadata tables of one table; each method returns a pyarrow Table."""

    def __init__(self, table: TableLike) -> None:
        self._table = table

    def history(self, snapshot_id: int | None = None) -> pa.Table:
        """The ``history`` metadata table (at ``snapshot_id``, default the current snapshot)."""
        return metadata_tables.history(self._table, snapshot_id)

    def snapshots(self, snapshot_id: int | None = None) -> pa.Table:
        """The ``snapshots`` metadata table (at ``snapshot_id``, default the current snapshot)."""
        return metadata_tables.snapshots(self._table, snapshot_id)

    def refs(self, snapshot_id: int | None = None) -> pa.Table:
        """The ``refs`` metadata table (at ``snapshot_id``, default the current snapshot)."""
        return metadata_tables.refs(self._table, snapshot_id)

    def metadata_log_entries(self, snapshot_id: int | None = None) -> pa.Table:
        """The ``metadata_log_entries`` metadata table (at ``snapshot_id``, default the current snapshot)."""
        return metadata_tables.metadata_log_entries(self._table, snapshot_id)

    def manifests(self, snapshot_id: int | None = None) -> pa.Table:
        """The ``manifests`` metadata table (at ``snapshot_id``, default the current snapshot)."""
        return metadata_tables.manifests(self._table, snapshot_id)

    def all_manifests(self, snapshot_id: int | None = None) -> pa.Table:
        """The ``all_manifests`` metadata table: the manifests of every snapshot (``snapshot_id`` is refused)."""
        return metadata_tables.all_manifests(self._table, snapshot_id)

    def files(self, snapshot_id: int | None = None) -> pa.Table:
        """The ``files`` metadata table (at ``snapshot_id``, default the current snapshot)."""
        return metadata_tables.files(self._table, snapshot_id)

    def data_files(self, snapshot_id: int | None = None) -> pa.Table:
        """The ``data_files`` metadata table (at ``snapshot_id``, default the current snapshot)."""
        return metadata_tables.data_files(self._table, snapshot_id)

    def delete_files(self, snapshot_id: int | None = None) -> pa.Table:
        """The ``delete_files`` metadata table (at ``snapshot_id``, default the current snapshot)."""
        return metadata_tables.delete_files(self._table, snapshot_id)

    def all_data_files(self, snapshot_id: int | None = None) -> pa.Table:
        """The ``all_data_files`` metadata table: data files of every manifest of every snapshot.

        Raises:
            UnsupportedError: ``snapshot_id`` given (the ``all_`` tables span every snapshot, as in Java).
        """
        return metadata_tables.all_data_files(self._table, snapshot_id)

    def entries(self, snapshot_id: int | None = None) -> pa.Table:
        """The ``entries`` metadata table (at ``snapshot_id``, default the current snapshot)."""
        return metadata_tables.entries(self._table, snapshot_id)

    def partitions(self, snapshot_id: int | None = None) -> pa.Table:
        """The ``partitions`` metadata table (at ``snapshot_id``, default the current snapshot)."""
        return metadata_tables.partitions(self._table, snapshot_id)

    def all_files(self) -> pa.Table:
        """The ``all_files`` metadata table: data and delete files of every manifest of every snapshot."""
        return metadata_tables.all_files(self._table)

    def all_delete_files(self) -> pa.Table:
        """The ``all_delete_files`` metadata table: delete files of every manifest of every snapshot."""
        return metadata_tables.all_delete_files(self._table)

    def all_entries(self) -> pa.Table:
        """The ``all_entries`` metadata table: every entry of every manifest of every snapshot."""
        return metadata_tables.all_entries(self._table)

    def position_deletes(self, snapshot_id: int | None = None) -> pa.Table:
        """The ``position_deletes`` metadata table (at ``snapshot_id``, default the current snapshot)."""
        return metadata_tables.position_deletes(self._table, snapshot_id)
