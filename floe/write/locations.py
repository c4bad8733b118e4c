"""Where new data files go (Iceberg's ``LocationProvider``) and how they are named.

- Default layout: ``<data dir>/<partition path>/<file name>`` where the data dir is ``write.data.path``
  (or the deprecated ``write.folder-storage.path``; with the object-store layout first the deprecated
  ``write.object-storage.path``) or ``<table location>/data``.
- ``write.object-storage.enabled=true``: a hash of the file name becomes a few directory levels right
  under the data dir (``<data dir>/0101/0110/1001/10110010/<partition path>/<file name>``) so object
  stores spread the keys over many prefixes; ``write.object-storage.partitioned-paths=false`` drops the
  partition path.
- File names follow Iceberg's ``OutputFileFactory``: ``%05d-%d-%s-%05d.parquet`` = (partition id, task
  id, operation id, file count).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import mmh3

from floe.io.locations import join
from floe.spec import properties as P

__all__ = ["OBJECT_STORE_PARTITIONED_PATHS", "LocationProvider", "data_file_name"]

OBJECT_STORE_PARTITIONED_PATHS = "write.object-storage.partitioned-paths"

# 20 hash bits in directories of 4, 4, 4 and 8 bits (Iceberg Java >= 1.7's object-store layout).
_HASH_BITS = 20
_DIR_WIDTHS = (4, 4, 4, 8)


def data_file_name(partition_id: int, task_id: int, operation_id: str, file_count: int, *, suffix: str = "") -> str:
    """``%05d-%d-%s-%05d[-suffix].parquet`` (partition id, task id, operation uuid, file count)."""
    tail = f"-{suffix}" if suffix else ""
    return f"{partition_id:05d}-{task_id}-{operation_id}-{file_count:05d}{tail}.parquet"


def _hash_dirs(file_name: str) -> str:
    h = mmh3.hash(file_name.encode("utf-8"), 0) & ((1 << _HASH_BITS) - 1)
    bits = format(h, f"0{_HASH_BITS}b")
    parts, pos = [], 0
    for width in _DIR_WIDTHS:
        parts.append(bits[pos : pos + width])
        pos += width
    return "/".join(parts)


@dataclass(frozen=True, slots=True)
class LocationProvider:
    """Computes new data file locations for one table (picklable: shipped to Spark tasks)."""

    data_dir: str
    object_storage: bool = False
    partitioned_paths: bool = True

    @classmethod
    def for_table(cls, location: str, properties: Mapping[str, str]) -> LocationProvider:
        """The provider a table's properties ask for.

        Raises:
            UnsupportedError: ``write.location-provider.impl`` names a Java class.
        """
        P.check_location_provider(properties, location)
        object_storage = P.property_bool(properties, P.OBJECT_STORE_ENABLED, P.OBJECT_STORE_ENABLED_DEFAULT)
        # Iceberg Java's order: write.data.path, then (object-store layout only) write.object-storage.path,
        # then write.folder-storage.path, then <table>/data.
        keys = [P.WRITE_DATA_LOCATION, *([P.OBJECT_STORE_PATH] if object_storage else []), P.WRITE_FOLDER_STORAGE_LOCATION]
        custom = next((properties[k] for k in keys if properties.get(k)), None)
        data_dir = custom.rstrip("/") if custom else join(location, "data")
        return cls(
            data_dir=data_dir,
            object_storage=object_storage,
            partitioned_paths=P.property_bool(properties, OBJECT_STORE_PARTITIONED_PATHS, True),
        )

    def new_location(self, file_name: str, partition_path: str = "") -> str:
        """The location of a new file named ``file_name`` in partition ``partition_path`` ("" = none)."""
        if self.object_storage:
            part = partition_path if self.partitioned_paths else ""
            return join(self.data_dir, _hash_dirs(file_name), part, file_name)
        return join(self.data_dir, partition_path, file_name)
