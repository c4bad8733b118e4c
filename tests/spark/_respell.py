"""Copy a warehouse folder and respell every path recorded in it (tests of path identity).

Metadata JSON, manifest lists, manifests (file paths, ``referenced_data_file`` and the ``file_path`` bounds
of position delete files) and the ``file_path`` column of position delete files are all rewritten the same
way, so the copy is a consistent table whose paths are spelled ``file:/p``, ``file:///p`` or ``/p``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq

__all__ = ["STYLES", "respelled_copy"]

STYLES = ("file:/", "file:///", "bare")
_DELETE_FILE_PATH_ID = 2147483546


def _respell(value: str, src: str, dst: str, style: str) -> str:
    if value.startswith("file:"):
        path = value[len("file:") :]
        while path.startswith("//"):
            path = path[1:]
    elif value.startswith("/"):
        path = value
    else:
        return value
    if not (path == src or path.startswith(src + "/")):
        return value
    path = dst + path[len(src) :]
    return {"file:/": "file:" + path, "file:///": "file://" + path, "bare": path}[style]


def respelled_copy(src: Path, dst: Path, style: str) -> Path:
    """Copy the folder ``src`` to ``dst`` (created) with every recorded location spelled in ``style``."""
    assert style in STYLES, style
    shutil.copytree(src, dst)
    source, target = str(src), str(dst)

    def walk(o: Any) -> Any:
        if isinstance(o, dict):
            if o.get("key") == _DELETE_FILE_PATH_ID and isinstance(o.get("value"), bytes):
                return {"key": o["key"], "value": _respell(o["value"].decode(), source, target, style).encode()}
            return {k: walk(v) for k, v in o.items()}
        if isinstance(o, list):
            return [walk(v) for v in o]
        if isinstance(o, str):
            return _respell(o, source, target, style)
        return o

    for f in dst.rglob("*.metadata.json"):
        f.write_text(json.dumps(walk(json.loads(f.read_text()))))
    for f in dst.rglob("*.avro"):
        with f.open("rb") as fo:
            reader = fastavro.reader(fo)
            schema = reader.writer_schema
            meta = {k: v for k, v in reader.metadata.items() if not k.startswith("avro.")}
            records = [walk(r) for r in reader]
        with f.open("wb") as fo:
            fastavro.writer(fo, schema, records, metadata=meta, codec="deflate")
    for f in dst.rglob("*-deletes.parquet"):
        table = pq.read_table(f)
        i = table.schema.get_field_index("file_path")
        values = pa.array([_respell(x, source, target, style) for x in table.column(i).to_pylist()], pa.string())
        pq.write_table(table.set_column(i, table.schema.field(i), values), f)
    for f in dst.rglob(".*.crc"):
        f.unlink()
    return dst
