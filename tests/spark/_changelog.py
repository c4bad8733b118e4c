"""Changelog streams for CDC tests: random mixed changes, the files a stream reads, and a plain model.

A change batch is a list of ``(seq, op, id, dt, v)`` rows; ``seq`` orders the changes (the stream's
order column). Batches hold the cases the delta writer distinguishes: updates and deletes of keys
written by earlier commits (equality deletes), keys inserted and then updated or deleted in the same
batch (position deletes), and, in upsert mode, inserts of keys that already exist.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

Row = tuple[int, str, int, str, str]  # seq, op, id, dt, v
State = dict[tuple[int, str], str]  # (id, dt) -> v

SCHEMA = pa.schema([("seq", pa.int64()), ("op", pa.string()), ("id", pa.int64()), ("dt", pa.string()), ("v", pa.string())])
_EPOCH_S = 1_700_000_000
PARTITIONS = ("2024-01-01", "2024-01-02", "2024-01-03")


def _dt(key: int) -> str:
    return PARTITIONS[key % len(PARTITIONS)]


def random_batches(n_batches: int, *, keys: int, per_batch: int, seed: int, upsert: bool = False) -> list[list[Row]]:
    """Changes that are valid against the state they apply to (a delete names a live key, and so on)."""
    rng = random.Random(seed)
    live: State = {}
    seq = 0
    batches: list[list[Row]] = []
    for b in range(n_batches):
        rows: list[Row] = []
        for _ in range(per_batch):
            key = rng.randrange(keys)
            k = (key, _dt(key))
            seq += 1
            value = f"b{b}-{seq}"
            if k in live:
                choice = rng.random()
                if upsert and choice < 0.4:
                    rows.append((seq, "+I", key, k[1], value))  # upsert: an insert replaces the key
                    live[k] = value
                elif choice < 0.7:
                    rows.append((seq, "-U", key, k[1], live[k]))
                    seq += 1
                    rows.append((seq, "+U", key, k[1], value))
                    live[k] = value
                else:
                    rows.append((seq, "-D", key, k[1], live[k]))
                    del live[k]
            else:
                rows.append((seq, "+I", key, k[1], value))
                live[k] = value
        batches.append(rows)
    return batches


def apply_model(state: State, batch: list[Row]) -> State:
    """The rows after ``batch``, applied in ``seq`` order (every op as its plain meaning)."""
    out = dict(state)
    for _, op, key, dt, v in sorted(batch):
        if op in ("+I", "+U"):
            out[(key, dt)] = v
        elif op in ("-D", "-U"):
            out.pop((key, dt), None)
    return out


def write_batch_files(folder: Path, batches: list[list[Row]], *, start: int = 0) -> None:
    """One Parquet file per batch, named so a file stream source reads them in order."""
    folder.mkdir(parents=True, exist_ok=True)
    for i, rows in enumerate(batches, start=start):
        columns = list(zip(*rows, strict=True)) if rows else [[] for _ in SCHEMA]
        table = pa.table([pa.array(list(c), type=f.type) for c, f in zip(columns, SCHEMA, strict=True)], schema=SCHEMA)
        tmp = folder / f".b{i:05d}.tmp"
        pq.write_table(table, tmp)
        # A file source orders files by modification time: make it the batch order, one second apart.
        os.utime(tmp, (_EPOCH_S + i, _EPOCH_S + i))
        tmp.rename(folder / f"b{i:05d}.parquet")  # the source never sees a half-written file


def as_state(rows: list[tuple[int, str, str]]) -> State:
    """``(id, dt, v)`` rows as a state; duplicates of a key fail (a CDC table holds a key once)."""
    state: State = {}
    for key, dt, v in rows:
        assert (key, dt) not in state, f"key {(key, dt)} appears twice"
        state[(key, dt)] = v
    return state
