"""floe.cli.demo.run: the sensordata walkthrough completes on a fresh FLOE_HOME with the rows the rollback restores,
and a later run starts from an empty namespace."""

from __future__ import annotations

import io
from pathlib import Path
from typing import TYPE_CHECKING

from floe.cli import demo
from floe.cli.sql import make_session
from floe.config import FloeConfig

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

FINAL_ROWS = [
    ("sensor_02", 1635743301, 23.6, "2021-12-01"),
    ("sensor_02", 1638421701, -22.2, "2021-12-02"),
    ("sensor_04", 1638508200, 19.5, "2021-12-03"),
]


def test_demo_run_ends_with_rolled_back_rows_and_resets(tmp_path: Path, spark: SparkSession) -> None:
    config = FloeConfig.load(
        {"spark.sql.session.timeZone": "UTC"},
        environ={"HOME": str(tmp_path), "FLOE_HOME": str(tmp_path / "home")},
        cwd=tmp_path,
    )
    out = io.StringIO()
    assert demo.run(config, spark=spark, out=out) == 0
    text = out.getvalue()
    assert "floe> CALL floe.system.rollback_to_snapshot('demo.sensordata'," in text
    assert "{ts_day -> 2021-12-17}" in text
    assert "{ts_month -> 622}" in text
    assert "{ts_year -> 50}" in text
    assert text.rstrip().endswith("(tables are in namespace demo)")

    session = make_session(config, spark=spark)
    assert sorted(session.sql("SELECT * FROM floe.demo.sensordata")[-1].rows) == FINAL_ROWS
    ops = session.sql("SELECT operation FROM floe.demo.sensordata.snapshots ORDER BY committed_at")[-1]
    assert [r[0] for r in ops.rows] == ["append", "overwrite", "append", "overwrite", "delete"]
    tables = session.sql("SHOW TABLES IN floe.demo")[-1].rows
    assert sorted(t for _, t, _ in tables) == ["sensordata", "sensordata_days", "sensordata_months", "sensordata_years"]

    # re-runnable: the next run starts by dropping (and purging) what this one left
    details = {r[0]: r[1] for r in session.sql("DESC FORMATTED floe.demo.sensordata")[-1].rows}
    location = Path(str(details["Location"]))
    assert location.is_dir()
    log = io.StringIO()
    demo._reset(session, "floe", demo._Printer(log))
    assert "DROP TABLE floe.demo.sensordata_years PURGE" in log.getvalue()
    assert session.sql("SHOW TABLES IN floe.demo")[-1].rows == []
    assert not any(p.is_file() for p in location.rglob("*"))
