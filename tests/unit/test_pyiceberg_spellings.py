"""PyIceberg's spellings of table changes work on Floe tables (a SQLite catalog, no Spark).

Code written for PyIceberg's ``ManageSnapshots`` (``create_tag(snapshot_id, tag_name)``,
``create_branch(snapshot_id, branch_name, ...)``, ``set_current_snapshot(snapshot_id=|ref_name=)``,
``rollback_to_snapshot``, ``rollback_to_timestamp``), ``Table.update_sort_order`` and
``Transaction.upgrade_table_version`` runs unchanged.
"""

from __future__ import annotations

import inspect

import pytest
from _table_testing import data_file, live, make_table
from pyiceberg.table import Transaction as PyIcebergTransaction
from pyiceberg.table.update.snapshot import ManageSnapshots as PyIcebergManageSnapshots

from floe.errors import ValidationError
from floe.spec.refs import SnapshotRefType
from floe.spec.sort_order import SortDirection
from floe.table.manage import ManageSnapshots
from floe.table.transaction import Transaction

MANAGE_SNAPSHOTS = [
    "create_tag",
    "create_branch",
    "remove_tag",
    "remove_branch",
    "set_current_snapshot",
    "rollback_to_snapshot",
    "rollback_to_timestamp",
]


def _parameters(method: object) -> list[str]:
    return [p for p in inspect.signature(method).parameters if p != "self"]  # type: ignore[arg-type]


@pytest.mark.parametrize("name", MANAGE_SNAPSHOTS)
def test_manage_snapshots_methods_take_pyicebergs_parameters(name: str) -> None:
    assert _parameters(getattr(ManageSnapshots, name)) == _parameters(getattr(PyIcebergManageSnapshots, name))


@pytest.mark.parametrize("name", ["update_sort_order", "upgrade_table_version"])
def test_transaction_methods_take_pyicebergs_parameters(name: str) -> None:
    assert _parameters(getattr(Transaction, name)) == _parameters(getattr(PyIcebergTransaction, name))


@pytest.mark.parametrize("version", [1, 2, 3])
def test_pyiceberg_snapshot_management_spellings_on_a_real_table(tmp_path, version: int) -> None:
    t = make_table(tmp_path, version=version)
    for n in "abc":
        t.append([data_file(n)])
    s1, s2, s3 = (s.snapshot_id for s in t.snapshots())

    t.manage_snapshots().create_tag(s1, "v1").create_branch(
        s2, "dev", max_ref_age_ms=1000, max_snapshot_age_ms=2000, min_snapshots_to_keep=3
    ).commit()
    assert t.refs()["v1"].type == SnapshotRefType.TAG
    assert t.refs()["v1"].snapshot_id == s1
    dev = t.refs()["dev"]
    assert dev.type == SnapshotRefType.BRANCH
    assert dev.snapshot_id == s2
    assert (dev.max_ref_age_ms, dev.max_snapshot_age_ms, dev.min_snapshots_to_keep) == (1000, 2000, 3)

    t.manage_snapshots().create_tag(snapshot_id=s3, tag_name="v3", max_ref_age_ms=5).commit()  # keywords too
    assert t.refs()["v3"].snapshot_id == s3
    assert t.refs()["v3"].max_ref_age_ms == 5

    t.manage_snapshots().rollback_to_snapshot(s2).commit()
    assert t.current_snapshot().snapshot_id == s2
    assert live(t) == {"a", "b"}

    t.manage_snapshots().set_current_snapshot(snapshot_id=s3).commit()  # any snapshot, not only ancestors
    assert t.current_snapshot().snapshot_id == s3

    t.manage_snapshots().set_current_snapshot(ref_name="v1").commit()
    assert t.current_snapshot().snapshot_id == s1

    t.manage_snapshots().set_current_snapshot(s3).commit()
    t.manage_snapshots().rollback_to_timestamp(t.snapshot_by_id(s3).timestamp_ms).commit()  # strictly older
    assert t.current_snapshot().snapshot_id in (s1, s2)

    with t.manage_snapshots() as ms:  # PyIceberg's context manager: commits on leaving the block
        ms.remove_tag("v1").remove_branch("dev")
    assert set(t.refs()) == {"main", "v3"}


def test_pyiceberg_spellings_refuse_what_pyiceberg_refuses(tmp_path) -> None:
    t = make_table(tmp_path)
    t.append([data_file("a")])
    sid = t.current_snapshot().snapshot_id
    with pytest.raises(TypeError, match=r"create_tag takes \(snapshot_id, name\)"):
        t.manage_snapshots().create_tag("v1", sid)  # type: ignore[arg-type]  # Floe's former order
    with pytest.raises(TypeError, match=r"create_branch takes \(snapshot_id, name\)"):
        t.manage_snapshots().create_branch("dev", sid)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="either snapshot_id or ref_name"):
        t.manage_snapshots().set_current_snapshot()
    with pytest.raises(ValidationError, match="either snapshot_id or ref_name"):
        t.manage_snapshots().set_current_snapshot(snapshot_id=sid, ref_name="main")
    with pytest.raises(ValidationError, match="Ref nope does not exist"):
        t.manage_snapshots().set_current_snapshot(ref_name="nope").commit()


def test_update_sort_order_and_upgrade_table_version(tmp_path) -> None:
    t = make_table(tmp_path, version=1)
    with t.update_sort_order() as order:
        order.asc("id").desc("data")
    fields = t.sort_order().fields
    assert [f.direction for f in fields] == [SortDirection.ASC, SortDirection.DESC]

    with t.transaction() as tx:
        tx.upgrade_table_version(2)
        tx.update_sort_order().asc("p").commit()
    assert t.format_version == 2
    assert len(t.sort_order().fields) == 1
    t.transaction().upgrade_table_version(2).commit_transaction()  # the same version: nothing to do
    assert t.format_version == 2
    with pytest.raises(ValidationError):
        t.transaction().upgrade_table_version(1)
