"""The ON-condition equalities a MERGE can prune its target by (floe.spark.row_level.merge_pruning.equi_keys)."""

from __future__ import annotations

from floe.spark.row_level.merge_pruning import equi_keys


def test_equi_keys_reads_qualified_equalities_in_either_order() -> None:
    assert equi_keys("t.id = s.id AND s.ts = t.ts AND t.x > s.x", "t", "s") == [("id", "id"), ("ts", "ts")]


def test_equi_keys_ignores_disjunctions_and_other_aliases() -> None:
    assert equi_keys("t.id = s.id OR t.k = s.k", "t", "s") == []
