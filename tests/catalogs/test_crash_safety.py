"""Crash safety: a writer killed with SIGKILL at a random point of its commit loop never leaves a table
that fails to load, sits at an uncommitted snapshot, or references a missing file."""

from __future__ import annotations

import random

import pytest
from _helpers import catalog_props, missing_references, open_catalog, row_count, write_data_file
from _workers import context, crash_loop

from floe.spec.schema import Schema

TRIALS = 50


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["hadoop", "sqlite"])
def test_sigkill_during_commits_leaves_committed_state(kind: str, tmp_path, request, schema: Schema) -> None:
    props = catalog_props(kind, tmp_path, request)
    cat = open_catalog(props)
    cat.create_namespace("db")
    # Merging every few manifests keeps the manifest count low and puts manifest rewrites under the knife too.
    table = cat.create_table("db.t", schema, properties={"commit.manifest.min-count-to-merge": "4"})
    table.append([write_data_file(table, [{"id": -1, "data": "seed", "p": 0}])])
    ctx = context()
    rng = random.Random(20261120)
    committed_before = 1
    for trial in range(TRIALS):
        ready = ctx.Event()
        proc = ctx.Process(target=crash_loop, args=(props, "db.t", ready), daemon=True)
        proc.start()
        assert ready.wait(60), f"trial {trial}: worker did not start"
        proc.join(rng.uniform(0.0, 0.12))  # let it run into the middle of some later commit
        proc.kill()
        proc.join()
        table = cat.load_table("db.t")  # must load after every kill
        snapshots = table.snapshots()
        current = table.current_snapshot()
        assert current is not None
        assert current.snapshot_id == snapshots[-1].snapshot_id
        assert len(snapshots) >= committed_before + 1, f"trial {trial}: a committed snapshot disappeared"
        committed_before = len(snapshots)
        assert missing_references(table, current_only=True) == [], f"trial {trial}: dangling references"
        assert current.summary["total-records"] == str(len(snapshots))
    assert missing_references(table) == []
    assert row_count(table) == len(table.snapshots())
