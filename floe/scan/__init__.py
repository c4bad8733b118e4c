"""Scan planning: TableScan (immutable fluent config), file/combined scan tasks, the delete-file index,
driver-side Arrow reads and metadata tables."""

from floe.scan.delete_index import DeleteFileIndex
from floe.scan.table_scan import LocatedTable, TableScan
from floe.scan.tasks import CombinedScanTask, FileScanTask

__all__ = ["CombinedScanTask", "DeleteFileIndex", "FileScanTask", "LocatedTable", "TableScan"]
