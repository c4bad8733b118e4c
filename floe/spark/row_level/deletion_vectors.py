"""Deletion vectors written for merge-on-read changes of format v3 tables (spec: "Deletion Vectors").

In v3, deleted rows are recorded as one ``deletion-vector-v1`` blob per data file (a Roaring bitmap of row
positions) in a Puffin file, never as new position delete files. A data file has at most one deletion
vector per snapshot, and a reader that finds one ignores position delete files for that data file: so a
new vector holds every position deleted so far (the file's previous vector and any position delete
file rows for it, merged with the new positions), and the previous vector, and position delete files that
named only that data file, are removed in the same commit (as Iceberg Java does).

The new positions come from Spark grouped by data file; the vectors are built and written on the driver
(one Puffin file per change, its entries in each data file's partition).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from floe.io.puffin_write import PuffinBlob, encode_puffin
from floe.scan.arrow_read import ReadContext, deleted_positions_of, name_mapping_of
from floe.scan.delete_index import is_deletion_vector
from floe.serde.deletion_vector import DELETION_VECTOR_V1, encode_deletion_vector
from floe.spec.manifest import POSITION_DELETE_POS_ID, DataFile, FileContent, FileFormat
from floe.write.locations import LocationProvider, data_file_name

if TYPE_CHECKING:
    from floe.scan.tasks import FileScanTask
    from floe.table.table import Table

__all__ = ["DeletionVectors", "deletion_vectors_for", "write_deletion_vectors"]


@dataclass(frozen=True, slots=True)
class DeletionVectors:
    """What a v3 row delta commits: ``added`` vectors, and the delete files they ``replaced``."""

    added: list[DataFile]
    replaced: list[DataFile]


def _read_context(table: Table) -> ReadContext:
    schema = table.schema()
    return ReadContext(
        io=table.io, table_schema=schema, projection=schema,
        name_mapping=name_mapping_of(dict(table.properties), schema), location_of=lambda p: p,
        table_name=table.name(),
    )


def write_deletion_vectors(table: Table, positions: DataFrame, tasks: Sequence[FileScanTask]) -> DeletionVectors:
    """Write the deletion vectors for ``positions`` (``file_path``, ``pos`` rows over ``tasks``' files).

    Returns:
        The new vectors (in one Puffin file; none when ``positions`` is empty) and the delete files they
        replace. The caller commits both and deletes the Puffin file if its commit fails.
    """
    grouped = positions.groupBy("file_path").agg(F.collect_list("pos").alias("positions")).collect()
    new = {str(r["file_path"]): np.asarray(r["positions"], dtype=np.int64) for r in grouped}
    return deletion_vectors_for(table, new, tasks)


def deletion_vectors_for(
    table: Table, positions: Mapping[str, np.ndarray], tasks: Sequence[FileScanTask]
) -> DeletionVectors:
    """The deletion vectors of the data files ``positions`` names (newly deleted positions per file, maybe
    none: the file's earlier deletes are merged in either way), written in one Puffin file."""
    by_path = {t.data_file.file_path: t for t in tasks}
    if not positions:
        return DeletionVectors([], [])
    ctx = _read_context(table)
    blobs: list[PuffinBlob] = []
    owners: list[FileScanTask] = []
    replaced: dict[str, DataFile] = {}
    for file_path in sorted(positions):
        task = by_path[file_path]
        new = positions[file_path]
        earlier = deleted_positions_of(ctx, task)
        merged = np.unique(new if earlier is None else np.concatenate([earlier, new]))
        path = task.data_file.file_path
        blobs.append(PuffinBlob(
            type=DELETION_VECTOR_V1, fields=(POSITION_DELETE_POS_ID,), snapshot_id=-1, sequence_number=-1,
            data=encode_deletion_vector(merged),
            properties={"referenced-data-file": path, "cardinality": str(merged.size)},
        ))
        owners.append(task)
        for e in task.deletes:
            only_this_file = e.data_file.referenced_data_file == path
            if e.data_file.content == FileContent.POSITION_DELETES and (is_deletion_vector(e) or only_this_file):
                replaced.setdefault(e.data_file.file_path + f"@{e.data_file.content_offset}", e.data_file)
    data, _, metas = encode_puffin(blobs, properties={"created-by": "Floe"})
    locations = LocationProvider.for_table(table.location(), dict(table.properties))
    name = data_file_name(0, 0, str(uuid.uuid4()), 1, suffix="deletes").removesuffix(".parquet") + ".puffin"
    location = locations.new_location(name)
    table.io.new_output(location).write_bytes(data)
    added = [
        DataFile(
            content=FileContent.POSITION_DELETES, file_path=location, file_format=FileFormat.PUFFIN,
            partition=task.data_file.partition, spec_id=task.data_file.spec_id,
            record_count=int(blob.properties["cardinality"]), file_size_in_bytes=len(data),
            referenced_data_file=task.data_file.file_path, content_offset=meta.offset,
            content_size_in_bytes=meta.length,
        )
        for task, blob, meta in zip(owners, blobs, metas, strict=True)
    ]
    return DeletionVectors(added, list(replaced.values()))
