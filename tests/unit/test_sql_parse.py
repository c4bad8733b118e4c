"""SQL front end: splitting, parsing every statement form into command objects, identifiers, errors.

The SEED_* statements are copied from the Iceberg book's chapters 3, 4 and 6 (seed 002), with the
``hdfs://bigdata185:9000`` prefix replaced by a local path.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from floe.errors import ParseError, UnsupportedError, ValidationError
from floe.spec.types import (
    DecimalType,
    DoubleType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    StringType,
    StructType,
    TimestampType,
    TimestamptzType,
)
from floe.sql import commands as c
from floe.sql import (
    is_complete,
    parse_script,
    parse_statement,
    resolve_namespace,
    resolve_table,
    resolve_use,
    split_statements,
)

WH = "/tmp/floe-seeds/dw/iceberg"

# -- seed statements (chapter 3: Spark SQL with Iceberg) --------------------------------------------------
SEED_CH3_DDL = """
use hadoop_catalog;
create database db;
use db;
CREATE TABLE sensordata(
  sensor_id STRING,
  ts BIGINT,
  temperature DOUBLE,
  dt STRING
) USING iceberg
PARTITIONED BY(dt)
TBLPROPERTIES ('read.split.target-size'='134217728',
              'read.split.metadata-target-size'='33554432');
DESC sensordata;
DESC FORMATTED sensordata;
ALTER TABLE sensordata UNSET TBLPROPERTIES ('read.split.target-size');
ALTER TABLE sensordata SET TBLPROPERTIES ('read.split.target-size'='134217728');
ALTER TABLE sensordata
ADD COLUMNS (
    new_column string comment 'new_column docs'
);
ALTER TABLE sensordata DROP COLUMN new_column;
CREATE TABLE hadoop_catalog.db.sensordata_like USING iceberg AS SELECT * FROM sensordata;
DROP TABLE hadoop_catalog.db.sensordata_like;
DROP TABLE sensordata;
"""

SEED_CH3_DML = """
INSERT INTO sensordata VALUES('sensor_01',1635743301,-12.1,'2021-12-01');
SELECT * FROM sensordata;
INSERT OVERWRITE sensordata VALUES('sensor_02',1635743301,23.6,'2021-12-01');
INSERT INTO sensordata VALUES('sensor_02',1638421701,-22.2,'2021-12-02');
INSERT OVERWRITE sensordata_01 SELECT * FROM sensordata;
INSERT OVERWRITE sensordata_01 PARTITION(dt='2021-12-31') SELECT sensor_id,ts,temperature FROM sensordata;
DELETE FROM sensordata_01 WHERE dt>='2021-12-01';
UPDATE sensordata SET ts=1631349225,sensor_id='sensor_27' WHERE dt='2021-12-01';
"""

SEED_METADATA_QUERY = """SELECT
    h.made_current_at,
    s.operation,
    h.snapshot_id,
    h.is_current_ancestor,
    s.summary['spark.app.id']
 FROM hadoop_catalog.db.sensordata.history h
 JOIN hadoop_catalog.db.sensordata.snapshots s
   ON h.snapshot_id = s.snapshot_id
ORDER BY made_current_at;"""

SEED_HIDDEN_PARTITIONS = """
CREATE TABLE sensordata_days(
  sensor_id STRING,
  ts TIMESTAMP,
  temperature DOUBLE
) USING iceberg
PARTITIONED BY(days(ts));
INSERT INTO sensordata_days VALUES('sensor_01',CAST(1639816497 AS TIMESTAMP),10.2),('sensor_01',CAST(1639730097 AS TIMESTAMP),12.3);
CREATE TABLE sensordata_years(
  sensor_id STRING,
  ts TIMESTAMP,
  temperature DOUBLE
) USING iceberg
PARTITIONED BY(years(ts));
CREATE TABLE sensordata_months(
  sensor_id STRING,
  ts TIMESTAMP,
  temperature DOUBLE
) USING iceberg
PARTITIONED BY(months(ts));
"""

# -- chapter 4 (CRUD walkthrough) ---------------------------------------------------------------------------
SEED_CH4 = """
use hadoop_catalog.db;
show tables;
drop table sensordata;
INSERT INTO sensordata VALUES('sensor_03',1638351932,-23.2,'2021-12-01'),('sensor_02',1638351625,-5.2,'2021-12-02');
delete from sensordata ;
select * from sensordata;
"""

# -- chapter 6 (Hive DDL, procedures) -------------------------------------------------------------------------
SEED_CH6_SET = f"""
SET iceberg.catalog.hadoop_catalog.type=hadoop;
SET iceberg.catalog.hadoop_catalog.warehouse={WH};
"""

SEED_CH6_HIVE_CREATE = f"""CREATE TABLE sensordata_hive (
  sensor_id STRING,
  ts BIGINT,
  temperature DOUBLE
) PARTITIONED BY (
  dt STRING
) STORED BY 'org.apache.iceberg.mr.hive.HiveIcebergStorageHandler'
LOCATION '{WH}/hive_db/sensordata_hive'
TBLPROPERTIES ('iceberg.catalog'='hadoop_catalog');"""

SEED_CH6_PROCEDURES = """
CALL hadoop_catalog.system.rollback_to_snapshot('db.sensordata', 6907478957764082176);
CALL hadoop_catalog.system.rollback_to_timestamp('db.sensordata', TIMESTAMP '2022-01-26 13:26:46.831');
CALL hadoop_catalog.system.set_current_snapshot('db.sensordata', 4719601493924525234);
CALL hadoop_catalog.system.expire_snapshots('db.sensordata', TIMESTAMP '2022-01-26 13:26:40.707',3);
CALL hadoop_catalog.system.rewrite_manifests('db.sensordata');
CALL hadoop_catalog.system.rewrite_manifests('db.sensordata', false);
CALL hadoop_catalog.system.migrate('spark_catalog.hive_db.ods_sensordata1');
"""

SEED_CH6_HIVE_TABLE = """create external table ods_ext_sensordata1(
  sensor_id STRING,
  ts BIGINT,
  temperature double
)stored as PARQUET location '/dw/hive/external/ods_ext_sensordata1';"""


def one(sql: str) -> c.Statement:
    return parse_statement(sql)


# -- splitting ----------------------------------------------------------------------------------------------


def test_split_statements_semicolons_in_strings_and_comments_not_split() -> None:
    script = "SELECT 'a;b' -- c;d\n; /* x; */ SELECT `q;` FROM t; SET k=v"
    parts = split_statements(script)
    assert [p.sql for p in parts] == ["SELECT 'a;b'", "SELECT `q;` FROM t", "SET k=v"]
    assert (parts[1].line, parts[1].col) == (2, 12)


def test_split_statements_empty_statements_dropped() -> None:
    assert [p.sql for p in split_statements(";; SELECT 1 ;\n;")] == ["SELECT 1"]


def test_split_statements_unterminated_string_raises_parse_error() -> None:
    with pytest.raises(ParseError, match="unterminated"):
        split_statements("SELECT 'abc")


def test_is_complete_open_string_or_no_semicolon_false() -> None:
    assert is_complete("SELECT 1;\n")
    assert not is_complete("SELECT 1\n")
    assert not is_complete("SELECT ';\n")
    assert not is_complete("")


# -- the seeds' scripts ----------------------------------------------------------------------------------------


def test_parse_script_seed_ch3_ddl_kinds_in_order() -> None:
    kinds = [type(s) for s in parse_script(SEED_CH3_DDL)]
    assert kinds == [
        c.UseStmt,
        c.CreateNamespace,
        c.UseStmt,
        c.CreateTable,
        c.DescribeTable,
        c.DescribeTable,
        c.UnsetProperties,
        c.SetProperties,
        c.AddColumns,
        c.DropColumns,
        c.CreateTable,
        c.DropTable,
        c.DropTable,
    ]


def test_parse_create_table_seed_sensordata_schema_spec_properties() -> None:
    stmt = parse_script(SEED_CH3_DDL)[3]
    assert isinstance(stmt, c.CreateTable)
    assert stmt.name == ("sensordata",)
    assert stmt.provider == "iceberg"
    assert stmt.is_iceberg
    assert stmt.schema is not None
    assert [(f.field_id, f.name, f.field_type, f.required) for f in stmt.schema.fields] == [
        (1, "sensor_id", StringType(), False),
        (2, "ts", LongType(), False),
        (3, "temperature", DoubleType(), False),
        (4, "dt", StringType(), False),
    ]
    assert stmt.partition_spec == (c.PartitionField(source="dt"),)
    assert stmt.properties == {
        "read.split.target-size": "134217728",
        "read.split.metadata-target-size": "33554432",
    }
    assert not stmt.if_not_exists
    assert not stmt.replace
    assert stmt.as_select is None


def test_parse_describe_formatted_mode() -> None:
    stmts = parse_script(SEED_CH3_DDL)
    assert stmts[4] == c.DescribeTable(name=("sensordata",), mode=None)
    assert stmts[5] == c.DescribeTable(name=("sensordata",), mode="formatted")
    assert one("DESCRIBE TABLE EXTENDED cat.db.t") == c.DescribeTable(
        name=("cat", "db", "t"), mode="extended"
    )


def test_parse_alter_seed_properties_and_columns() -> None:
    stmts = parse_script(SEED_CH3_DDL)
    assert stmts[6] == c.UnsetProperties(table=("sensordata",), keys=("read.split.target-size",))
    assert stmts[7] == c.SetProperties(
        table=("sensordata",), properties={"read.split.target-size": "134217728"}
    )
    add = stmts[8]
    assert isinstance(add, c.AddColumns)
    assert add.columns == (c.NewColumn(path=("new_column",), field_type=StringType(), doc="new_column docs"),)
    assert stmts[9] == c.DropColumns(table=("sensordata",), columns=("new_column",))


def test_parse_ctas_seed_keeps_select_and_tables() -> None:
    stmt = parse_script(SEED_CH3_DDL)[10]
    assert isinstance(stmt, c.CreateTable)
    assert stmt.name == ("hadoop_catalog", "db", "sensordata_like")
    assert stmt.schema is None
    assert stmt.as_select is not None
    assert stmt.as_select.sql == "SELECT * FROM sensordata"
    assert [t.name for t in stmt.as_select.tables] == [("sensordata",)]


def test_parse_drop_table_seed_and_purge() -> None:
    stmts = parse_script(SEED_CH3_DDL)
    assert stmts[11] == c.DropTable(name=("hadoop_catalog", "db", "sensordata_like"))
    assert one("DROP TABLE IF EXISTS db.t PURGE") == c.DropTable(name=("db", "t"), if_exists=True, purge=True)


def test_parse_script_seed_dml_values_overwrite_partition() -> None:
    stmts = parse_script(SEED_CH3_DML)
    ins = stmts[0]
    assert isinstance(ins, c.Insert)
    assert not ins.overwrite
    assert ins.query is None
    assert ins.literal_rows() == [("sensor_01", 1635743301, Decimal("-12.1"), "2021-12-01")]
    assert isinstance(stmts[1], c.Select)
    assert isinstance(stmts[2], c.Insert)
    assert stmts[2].overwrite
    dyn = stmts[4]
    assert isinstance(dyn, c.Insert)
    assert dyn.overwrite
    assert dyn.partition == {}
    assert dyn.query is not None
    assert dyn.query.sql == "SELECT * FROM sensordata"
    static = stmts[5]
    assert isinstance(static, c.Insert)
    assert static.table == ("sensordata_01",)
    assert static.partition == {"dt": "2021-12-31"}
    assert static.query is not None
    assert static.query.sql == "SELECT sensor_id, ts, temperature FROM sensordata"


def test_parse_delete_seed_where_text() -> None:
    stmt = parse_script(SEED_CH3_DML)[6]
    assert isinstance(stmt, c.Delete)
    assert stmt.table == ("sensordata_01",)
    assert stmt.where is not None
    assert stmt.where.sql == "dt >= '2021-12-01'"
    bare = parse_script(SEED_CH4)[4]
    assert isinstance(bare, c.Delete)
    assert bare.where is None


def test_parse_update_seed_assignments() -> None:
    stmt = parse_script(SEED_CH3_DML)[7]
    assert isinstance(stmt, c.Update)
    assert [(a.column, a.value.sql) for a in stmt.assignments] == [
        ("ts", "1631349225"),
        ("sensor_id", "'sensor_27'"),
    ]
    assert stmt.where is not None
    assert stmt.where.sql == "dt = '2021-12-01'"


def test_parse_select_seed_metadata_tables_referenced() -> None:
    stmt = one(SEED_METADATA_QUERY)
    assert isinstance(stmt, c.Select)
    refs = stmt.query.tables
    assert [(r.name, r.alias) for r in refs] == [
        (("hadoop_catalog", "db", "sensordata", "history"), "h"),
        (("hadoop_catalog", "db", "sensordata", "snapshots"), "s"),
    ]
    rewritten = stmt.query.rewrite(lambda r: f"v{r.index}")
    assert "FROM v0 AS h JOIN v1 AS s" in rewritten
    assert "sensordata" not in rewritten


def test_parse_create_table_seed_hidden_partitions_timestamp_is_timestamptz() -> None:
    stmts = parse_script(SEED_HIDDEN_PARTITIONS)
    days, ins, years, months = stmts
    assert isinstance(days, c.CreateTable)
    assert days.schema is not None
    assert days.schema.find_field("ts").field_type == TimestamptzType()
    assert days.partition_spec == (c.PartitionField(source="ts", transform="day"),)
    assert isinstance(years, c.CreateTable)
    assert years.partition_spec[0].transform == "year"
    assert isinstance(months, c.CreateTable)
    assert months.partition_spec[0].transform == "month"
    assert isinstance(ins, c.Insert)
    assert ins.values is not None
    assert len(ins.values) == 2
    assert ins.values[0][1].sql == "CAST(1639816497 AS TIMESTAMP)"


def test_parse_insert_literal_rows_non_constant_raises_unsupported() -> None:
    ins = parse_script(SEED_HIDDEN_PARTITIONS)[1]
    assert isinstance(ins, c.Insert)
    with pytest.raises(UnsupportedError, match="CAST"):
        ins.literal_rows()


def test_parse_script_seed_ch4_use_show_drop() -> None:
    stmts = parse_script(SEED_CH4)
    assert stmts[0] == c.UseStmt(name=("hadoop_catalog", "db"))
    assert stmts[1] == c.ShowTables()
    assert stmts[2] == c.DropTable(name=("sensordata",))
    ins = stmts[3]
    assert isinstance(ins, c.Insert)
    assert ins.values is not None
    assert len(ins.values) == 2


def test_parse_set_seed_hive_catalog_keys_raw_values() -> None:
    stmts = parse_script(SEED_CH6_SET)
    assert stmts == [
        c.SetConf(key="iceberg.catalog.hadoop_catalog.type", value="hadoop"),
        c.SetConf(key="iceberg.catalog.hadoop_catalog.warehouse", value=WH),
    ]


def test_parse_set_forms_show_one_show_all_quoted_value() -> None:
    assert one("SET") == c.SetConf()
    assert one("SET spark.sql.sources.partitionOverwriteMode") == c.SetConf(
        key="spark.sql.sources.partitionOverwriteMode"
    )
    assert one("SET spark.sql.sources.partitionOverwriteMode=dynamic").value == "dynamic"  # type: ignore[attr-defined]
    assert one("SET x = 'a b'") == c.SetConf(key="x", value="a b")


def test_parse_create_table_seed_hive_storage_handler_adds_partition_column() -> None:
    stmt = one(SEED_CH6_HIVE_CREATE)
    assert isinstance(stmt, c.CreateTable)
    assert stmt.provider == "iceberg"
    assert stmt.schema is not None
    assert stmt.schema.column_names == ["sensor_id", "ts", "temperature", "dt"]
    assert stmt.partition_spec == (c.PartitionField(source="dt"),)
    assert stmt.location == f"{WH}/hive_db/sensordata_hive"
    assert stmt.properties == {"iceberg.catalog": "hadoop_catalog"}


def test_parse_create_table_seed_hive_parquet_table_not_iceberg() -> None:
    stmt = one(SEED_CH6_HIVE_TABLE)
    assert isinstance(stmt, c.CreateTable)
    assert stmt.external
    assert stmt.provider == "parquet"
    assert not stmt.is_iceberg


def test_parse_call_seed_procedures_positional_args() -> None:
    calls = parse_script(SEED_CH6_PROCEDURES)
    assert all(isinstance(x, c.Call) for x in calls)
    rollback, by_time, set_current, expire, _rewrite, rewrite_false, migrate = calls
    assert isinstance(rollback, c.Call)
    assert rollback.procedure == ("hadoop_catalog", "system", "rollback_to_snapshot")
    assert rollback.catalog == "hadoop_catalog"
    assert rollback.procedure_name == "rollback_to_snapshot"
    assert [a.value for a in rollback.args] == ["db.sensordata", 6907478957764082176]
    assert [a.value for a in by_time.args] == ["db.sensordata", dt.datetime(2022, 1, 26, 13, 26, 46, 831000)]  # type: ignore[attr-defined]
    assert [a.value for a in set_current.args] == ["db.sensordata", 4719601493924525234]  # type: ignore[attr-defined]
    assert [a.value for a in expire.args] == [
        "db.sensordata",
        dt.datetime(2022, 1, 26, 13, 26, 40, 707000),
        3,
    ]  # type: ignore[attr-defined]
    assert [a.value for a in rewrite_false.args] == ["db.sensordata", False]  # type: ignore[attr-defined]
    assert [a.value for a in migrate.args] == ["spark_catalog.hive_db.ods_sensordata1"]  # type: ignore[attr-defined]


def test_parse_call_named_args_bind_by_name() -> None:
    stmt = one(
        "CALL cat.system.expire_snapshots(table => 'db.t', older_than => TIMESTAMP '2022-01-01 00:00:00', retain_last => 3)"
    )
    assert isinstance(stmt, c.Call)
    assert [a.name for a in stmt.args] == ["table", "older_than", "retain_last"]
    bound = stmt.bind(("table", "older_than", "retain_last", "max_concurrent_deletes"))
    assert bound == {"table": "db.t", "older_than": dt.datetime(2022, 1, 1), "retain_last": 3}


def test_call_bind_unknown_parameter_raises_validation_error() -> None:
    stmt = one("CALL cat.system.rollback_to_snapshot('db.t', 1, 2)")
    assert isinstance(stmt, c.Call)
    with pytest.raises(ValidationError, match="at most 2"):
        stmt.bind(("table", "snapshot_id"))
    named = one("CALL cat.system.rollback_to_snapshot(tbl => 'db.t')")
    assert isinstance(named, c.Call)
    with pytest.raises(ValidationError, match="no parameter 'tbl'"):
        named.bind(("table", "snapshot_id"))


def test_parse_call_array_and_map_arguments() -> None:
    stmt = one(
        "CALL c.system.rewrite_data_files(table => 'db.t', options => map('min-input-files', '2'), where => 'id > 3')"
    )
    assert isinstance(stmt, c.Call)
    assert stmt.bind(("table", "options", "where")) == {
        "table": "db.t",
        "options": {"min-input-files": "2"},
        "where": "id > 3",
    }


def test_parse_call_positional_after_named_raises_parse_error() -> None:
    with pytest.raises(ParseError, match="positional"):
        one("CALL c.system.p(table => 'a', 3)")


# -- other statement forms ---------------------------------------------------------------------------------


def test_parse_namespace_statements_all_forms() -> None:
    assert one(
        "CREATE NAMESPACE IF NOT EXISTS cat.db COMMENT 'c' LOCATION '/w' WITH DBPROPERTIES ('a'='b')"
    ) == c.CreateNamespace(
        namespace=("cat", "db"), if_not_exists=True, properties={"comment": "c", "location": "/w", "a": "b"}
    )
    assert one("CREATE SCHEMA s") == c.CreateNamespace(namespace=("s",))
    assert one("DROP DATABASE IF EXISTS db CASCADE") == c.DropNamespace(
        namespace=("db",), if_exists=True, cascade=True
    )
    assert one("DROP NAMESPACE db") == c.DropNamespace(namespace=("db",))
    assert one("SHOW DATABASES") == c.ShowNamespaces()
    assert one("SHOW NAMESPACES IN cat LIKE 'd*'") == c.ShowNamespaces(parent=("cat",), pattern="d*")
    assert one("SHOW TABLES FROM cat.db LIKE 'sensor*'") == c.ShowTables(
        namespace=("cat", "db"), pattern="sensor*"
    )
    assert one("SHOW CATALOGS") == c.ShowCatalogs()


def test_parse_use_forms_target_keyword() -> None:
    assert one("USE hadoop_catalog") == c.UseStmt(name=("hadoop_catalog",))
    assert one("USE NAMESPACE db") == c.UseStmt(name=("db",), target="namespace")
    assert one("USE CATALOG hadoop_catalog") == c.UseStmt(name=("hadoop_catalog",), target="catalog")
    assert one("USE `my-db`") == c.UseStmt(name=("my-db",))


def test_parse_create_table_all_types_and_transforms() -> None:
    stmt = one(
        "CREATE TABLE IF NOT EXISTS cat.db.t ("
        " id bigint NOT NULL COMMENT 'key', i int, s smallint, l long, f float, d decimal(10, 2), dd decimal,"
        " day date, ts timestamp, ntz timestamp_ntz, ok boolean, b binary,"
        " tags array<string>, attrs map<string, int>, point struct<x: double, y: double NOT NULL>)"
        " USING iceberg PARTITIONED BY (bucket(16, id), truncate(4, s), years(ts), months(ts), days(ts),"
        " hours(ts), year(day), month(day), day(day), hour(ts), date_hour(ntz), identity(i), i)"
        " LOCATION '/tmp/t' COMMENT 'table doc' TBLPROPERTIES ('format-version'='2', 'k'=1)"
    )
    assert isinstance(stmt, c.CreateTable)
    assert stmt.schema is not None
    assert stmt.if_not_exists
    assert stmt.location == "/tmp/t"
    assert stmt.comment == "table doc"
    assert stmt.properties == {"format-version": "2", "k": "1"}
    types = {f.name: f.field_type for f in stmt.schema.fields}
    assert types["id"] == LongType()
    assert stmt.schema.find_field("id").required
    assert stmt.schema.find_field("id").doc == "key"
    assert types["s"] == IntegerType()
    assert types["l"] == LongType()
    assert types["d"] == DecimalType(10, 2)
    assert types["dd"] == DecimalType(10, 0)
    assert types["ts"] == TimestamptzType()
    assert types["ntz"] == TimestampType()
    assert types["tags"] == ListType(16, StringType(), element_required=False)
    assert types["attrs"] == MapType(17, StringType(), 18, IntegerType(), value_required=False)
    point = types["point"]
    assert isinstance(point, StructType)
    assert [(f.field_id, f.name, f.required) for f in point.fields] == [(19, "x", False), (20, "y", True)]
    assert [(p.source, p.transform) for p in stmt.partition_spec] == [
        ("id", "bucket[16]"),
        ("s", "truncate[4]"),
        ("ts", "year"),
        ("ts", "month"),
        ("ts", "day"),
        ("ts", "hour"),
        ("day", "year"),
        ("day", "month"),
        ("day", "day"),
        ("ts", "hour"),
        ("ntz", "hour"),
        ("i", "identity"),
        ("i", "identity"),
    ]


def test_parse_create_table_replace_like_and_rtas() -> None:
    assert one("CREATE OR REPLACE TABLE t (a int) USING iceberg").replace  # type: ignore[attr-defined]
    like = one("CREATE TABLE IF NOT EXISTS t2 LIKE db.t1")
    assert isinstance(like, c.CreateTable)
    assert like.like == ("db", "t1")
    assert like.if_not_exists
    rtas = one("REPLACE TABLE db.t USING iceberg AS SELECT 1 AS a")
    assert isinstance(rtas, c.CreateTable)
    assert rtas.replace
    assert rtas.as_select is not None


def test_parse_create_table_duplicate_column_raises_validation_error() -> None:
    with pytest.raises(ValidationError, match="Duplicate column 'A'"):
        one("CREATE TABLE t (a int, A string) USING iceberg")


def test_parse_alter_column_variants() -> None:
    t = ("db", "t")
    assert one("ALTER TABLE db.t RENAME COLUMN a TO b") == c.RenameColumn(table=t, column="a", new_name="b")
    assert one("ALTER TABLE db.t ALTER COLUMN a TYPE bigint") == c.AlterColumnType(
        table=t, column="a", new_type=LongType()
    )
    assert one("ALTER TABLE db.t ALTER COLUMN p.x TYPE double") == c.AlterColumnType(
        table=t, column="p.x", new_type=DoubleType()
    )
    assert one("ALTER TABLE db.t ALTER COLUMN a COMMENT 'doc'") == c.AlterColumnComment(
        table=t, column="a", comment="doc"
    )
    assert one("ALTER TABLE db.t ALTER COLUMN a DROP NOT NULL") == c.AlterColumnNullability(
        table=t, column="a", required=False
    )
    assert one("ALTER TABLE db.t ALTER COLUMN a SET NOT NULL") == c.AlterColumnNullability(
        table=t, column="a", required=True
    )
    assert one("ALTER TABLE db.t ALTER COLUMN a AFTER b") == c.AlterColumnPosition(
        table=t, column="a", position=c.ColumnPosition(after="b")
    )
    with pytest.raises(ParseError, match="ALTER COLUMN makes one change"):  # as Spark's grammar
        one("ALTER TABLE db.t ALTER COLUMN a TYPE decimal(12, 2) COMMENT 'x' FIRST")
    assert one("ALTER TABLE db.t DROP COLUMNS (a, b)") == c.DropColumns(table=t, columns=("a", "b"))
    assert one("ALTER TABLE db.t RENAME TO db.u") == c.RenameTable(table=t, new_name=("db", "u"))


def test_parse_add_columns_positions_and_nested_path() -> None:
    stmt = one("ALTER TABLE t ADD COLUMNS (a int FIRST, b string NOT NULL AFTER a, p struct<x: int>)")
    assert isinstance(stmt, c.AddColumns)
    a, b, p = stmt.columns
    assert a.position == c.ColumnPosition(first=True)
    assert b.required
    assert b.position == c.ColumnPosition(after="a")
    assert isinstance(p.field_type, StructType)
    nested = one("ALTER TABLE t ADD COLUMN point.z double")
    assert isinstance(nested, c.AddColumns)
    assert nested.columns[0].path == ("point", "z")


def test_parse_partition_evolution_forms() -> None:
    t = ("prod", "db", "sample")
    assert one(
        "ALTER TABLE prod.db.sample ADD PARTITION FIELD bucket(16, id) AS shard"
    ) == c.AddPartitionField(
        table=t, field=c.PartitionField(source="id", transform="bucket[16]", name="shard")
    )
    assert one("ALTER TABLE prod.db.sample ADD PARTITION FIELD truncate(data, 4)") == c.AddPartitionField(
        table=t, field=c.PartitionField(source="data", transform="truncate[4]")
    )
    assert one("ALTER TABLE prod.db.sample DROP PARTITION FIELD days(ts)") == c.DropPartitionField(
        table=t, field=c.PartitionField(source="ts", transform="day")
    )
    assert one("ALTER TABLE prod.db.sample DROP PARTITION FIELD shard") == c.DropPartitionField(
        table=t, field=c.PartitionField(source="shard")
    )
    assert one("ALTER TABLE prod.db.sample REPLACE PARTITION FIELD ts_day WITH day(ts) AS day_of_ts") == (
        c.ReplacePartitionField(
            table=t,
            old=c.PartitionField(source="ts_day"),
            new=c.PartitionField(source="ts", transform="day", name="day_of_ts"),
        )
    )


def test_parse_write_ordered_by_forms() -> None:
    stmt = one("ALTER TABLE t WRITE ORDERED BY category ASC NULLS LAST, bucket(16, id) DESC")
    assert stmt == c.WriteOrderedBy(
        table=("t",),
        sort_fields=(
            c.SortField(source="category", direction="asc", null_order="nulls-last"),
            c.SortField(source="id", transform="bucket[16]", direction="desc", null_order="nulls-last"),
        ),
        distribution="range",
    )
    local = one("ALTER TABLE t WRITE LOCALLY ORDERED BY a")
    assert isinstance(local, c.WriteOrderedBy)
    assert local.distribution is None  # LOCALLY ORDERED BY keeps the table's distribution mode (as Java)
    hashed = one("ALTER TABLE t WRITE DISTRIBUTED BY PARTITION LOCALLY ORDERED BY a")
    assert isinstance(hashed, c.WriteOrderedBy)
    assert hashed.distribution == "hash"
    assert len(hashed.sort_fields) == 1
    assert one("ALTER TABLE t WRITE UNORDERED") == c.WriteOrderedBy(
        table=("t",), sort_fields=(), distribution="none"
    )


def test_parse_identifier_fields_and_refs() -> None:
    assert one("ALTER TABLE t SET IDENTIFIER FIELDS id, data") == c.SetIdentifierFields(
        table=("t",), columns=("id", "data")
    )
    assert one("ALTER TABLE t DROP IDENTIFIER FIELDS id") == c.DropIdentifierFields(
        table=("t",), columns=("id",)
    )
    branch = one(
        "ALTER TABLE t CREATE BRANCH IF NOT EXISTS audit AS OF VERSION 1234 RETAIN 7 DAYS WITH SNAPSHOT RETENTION 3 SNAPSHOTS 2 DAYS"
    )
    assert branch == c.CreateBranch(
        table=("t",),
        branch="audit",
        snapshot_id=1234,
        if_not_exists=True,
        max_ref_age_ms=7 * 86_400_000,
        min_snapshots_to_keep=3,
        max_snapshot_age_ms=2 * 86_400_000,
    )
    replace = one("ALTER TABLE t REPLACE BRANCH audit AS OF VERSION 5")
    assert isinstance(replace, c.CreateBranch)
    assert replace.replace
    assert replace.must_exist
    assert one("ALTER TABLE t CREATE OR REPLACE TAG v1 RETAIN 12 HOURS") == c.CreateTag(
        table=("t",), tag="v1", replace=True, max_ref_age_ms=12 * 3_600_000
    )
    assert one("ALTER TABLE t DROP BRANCH IF EXISTS audit") == c.DropBranch(
        table=("t",), branch="audit", if_exists=True
    )
    assert one("ALTER TABLE t DROP TAG v1") == c.DropTag(table=("t",), tag="v1")


def test_parse_merge_clauses() -> None:
    stmt = one(
        "MERGE INTO prod.db.target t USING (SELECT * FROM updates) s ON t.id = s.id "
        "WHEN MATCHED AND s.op = 'delete' THEN DELETE "
        "WHEN MATCHED THEN UPDATE SET t.count = t.count + s.count "
        "WHEN NOT MATCHED THEN INSERT * "
        "WHEN NOT MATCHED BY SOURCE THEN DELETE"
    )
    assert isinstance(stmt, c.Merge)
    assert stmt.target == ("prod", "db", "target")
    assert stmt.target_alias == "t"
    assert stmt.source_alias == "s"
    assert stmt.source.sql == "SELECT * FROM updates"
    assert stmt.source_table is None
    assert stmt.on.sql == "t.id = s.id"
    assert [(cl.match, cl.action, cl.star) for cl in stmt.clauses] == [
        ("matched", "delete", False),
        ("matched", "update", False),
        ("not_matched", "insert", True),
        ("not_matched_by_source", "delete", False),
    ]
    assert stmt.clauses[0].condition is not None
    assert stmt.clauses[0].condition.sql == "s.op = 'delete'"
    assert [(a.column, a.value.sql) for a in stmt.clauses[1].assignments] == [
        ("t.count", "t.count + s.count")
    ]


def test_parse_merge_table_source_insert_columns() -> None:
    stmt = one(
        "MERGE INTO t USING db.src AS s ON t.id = s.id WHEN NOT MATCHED THEN INSERT (id, v) VALUES (s.id, s.v)"
    )
    assert isinstance(stmt, c.Merge)
    assert stmt.source_table is not None
    assert stmt.source_table.name == ("db", "src")
    assert stmt.clauses[0].insert_columns == ("id", "v")
    assert [v.sql for v in stmt.clauses[0].insert_values] == ["s.id", "s.v"]


@pytest.mark.parametrize(
    ("sql", "kind", "value"),
    [
        ("SELECT * FROM db.t VERSION AS OF 123", "version", 123),
        ("SELECT * FROM db.t FOR SYSTEM_VERSION AS OF 123", "version", 123),
        ("SELECT * FROM db.t FOR VERSION AS OF 'audit'", "version", "audit"),
        (
            "SELECT * FROM db.t TIMESTAMP AS OF '2022-01-26 13:26:46.831'",
            "timestamp",
            "2022-01-26 13:26:46.831",
        ),
        ("SELECT * FROM db.t FOR SYSTEM_TIME AS OF '2022-01-26'", "timestamp", "2022-01-26"),
        (
            "SELECT * FROM db.t TIMESTAMP AS OF TIMESTAMP '2022-01-26 00:00:00'",
            "timestamp",
            dt.datetime(2022, 1, 26),
        ),
    ],
)
def test_parse_select_time_travel_forms(sql: str, kind: str, value: object) -> None:
    stmt = one(sql)
    assert isinstance(stmt, c.Select)
    (ref,) = stmt.query.tables
    assert ref.name == ("db", "t")
    assert ref.time_travel is not None
    assert (ref.time_travel.kind, ref.time_travel.value) == (kind, value)
    assert stmt.query.rewrite(lambda r: "snap_view") == "SELECT * FROM snap_view AS t"


def test_parse_select_time_travel_words_in_strings_untouched() -> None:
    stmt = one("SELECT 'FOR SYSTEM_VERSION AS OF 1' AS x FROM t")
    assert isinstance(stmt, c.Select)
    assert "'FOR SYSTEM_VERSION AS OF 1'" in stmt.query.sql
    assert stmt.query.tables[0].time_travel is None


def test_parse_select_cte_names_not_tables() -> None:
    stmt = one("WITH a AS (SELECT * FROM cat.db.t) SELECT * FROM a JOIN db.u ON a.x = u.x")
    assert isinstance(stmt, c.Select)
    assert [r.name for r in stmt.query.tables] == [("cat", "db", "t"), ("db", "u")]


def test_parse_explain_show_create_tblproperties() -> None:
    ex = one("EXPLAIN EXTENDED SELECT * FROM t")
    assert isinstance(ex, c.Explain)
    assert ex.mode == "extended"
    assert isinstance(ex.statement, c.Select)
    assert one("SHOW CREATE TABLE db.t") == c.ShowCreateTable(name=("db", "t"))
    assert one("SHOW TBLPROPERTIES db.t") == c.ShowTblProperties(name=("db", "t"))
    assert one("SHOW TBLPROPERTIES db.t ('format-version')") == c.ShowTblProperties(
        name=("db", "t"), key="format-version"
    )


def test_parse_insert_columns_and_dynamic_partition_key() -> None:
    stmt = one("INSERT INTO TABLE db.t PARTITION (dt='2021-12-01', hr) (a, b) SELECT 1, 2")
    assert isinstance(stmt, c.Insert)
    assert stmt.partition == {"dt": "2021-12-01", "hr": None}
    assert stmt.columns == ("a", "b")
    assert stmt.query is not None


# -- errors ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("GRANT SELECT ON t TO u", "Unsupported statement: GRANT SELECT ON t TO u"),
        ("CREATE FUNCTION f AS 'x.Y'", "Unsupported statement: CREATE FUNCTION f AS 'x.Y'"),
        (
            "ALTER TABLE t ADD PARTITION (dt='x')",
            "Unsupported statement: ALTER TABLE t ADD PARTITION (dt='x')",
        ),
        ("CACHE TABLE t", "Unsupported statement: CACHE TABLE t"),
    ],
)
def test_parse_unsupported_statement_one_line_names_it(sql: str, message: str) -> None:
    with pytest.raises(UnsupportedError) as info:
        one(sql)
    assert str(info.value) == message


@pytest.mark.parametrize(
    ("sql", "fragment"),
    [
        ("SELECT * FROMM t", "line 1, col 16 near 'FROMM t'"),
        ("SELEC 1", "line 1, col 1 near 'SELEC'"),
        ("ALTER TABLE t WRITE SIDEWAYS", "near 'SIDEWAYS'"),
        ("CREATE TABLE t (a int", "Syntax error"),
        ("ALTER TABLE t ADD PARTITION FIELD bucket(id) AS b", "Unsupported partition transform"),
    ],
)
def test_parse_bad_sql_one_line_error(sql: str, fragment: str) -> None:
    with pytest.raises((ParseError, UnsupportedError)) as info:
        one(sql)
    text = str(info.value)
    assert fragment in text
    assert "\n" not in text


def test_parse_script_error_position_counts_script_lines() -> None:
    with pytest.raises(ParseError, match="line 3, col 16 near 'FROMM t'"):
        parse_script("SELECT 1;\n\nSELECT * FROMM t;")


# -- identifier resolution ---------------------------------------------------------------------------------

CATALOGS = {"hadoop_catalog", "floe"}


def resolve(*parts: str, exists: set[tuple[str, tuple[str, ...], str]] | None = None) -> object:
    return resolve_table(
        tuple(parts),
        current_catalog="hadoop_catalog",
        current_namespace=("db",),
        catalogs=CATALOGS,
        table_exists=(lambda cat, ns, t: (cat, ns, t) in exists) if exists is not None else None,
    )


def test_resolve_table_seed_forms() -> None:
    full = resolve("hadoop_catalog", "db", "sensordata")
    short = resolve("db", "sensordata")
    bare = resolve("sensordata")
    for r in (full, short, bare):
        assert (r.catalog, r.namespace, r.name, r.metadata_table) == (
            "hadoop_catalog",
            ("db",),
            "sensordata",
            None,
        )  # type: ignore[attr-defined]


def test_resolve_table_metadata_suffix_and_selectors() -> None:
    r = resolve("hadoop_catalog", "db", "sensordata", "history")
    assert (r.namespace, r.name, r.metadata_table) == (("db",), "sensordata", "history")  # type: ignore[attr-defined]
    assert str(r) == "hadoop_catalog.db.sensordata.history"
    assert resolve("sensordata", "snapshots").metadata_table == "snapshots"  # type: ignore[attr-defined]
    assert resolve("db", "t", "branch_audit").branch == "audit"  # type: ignore[attr-defined]
    assert resolve("db", "t", "tag_v1").tag == "v1"  # type: ignore[attr-defined]
    assert resolve("db", "t", "snapshot_id_42").snapshot_id == 42  # type: ignore[attr-defined]


def test_resolve_table_ambiguous_metadata_name_prefers_existing_table() -> None:
    as_table = resolve("db", "history", exists={("hadoop_catalog", ("db",), "history")})
    assert (as_table.name, as_table.metadata_table) == ("history", None)  # type: ignore[attr-defined]
    as_meta = resolve("db", "history", exists={("hadoop_catalog", ("db",), "db")})
    assert (as_meta.name, as_meta.metadata_table) == ("db", "history")  # type: ignore[attr-defined]
    neither = resolve("db", "history", exists=set())  # CREATE TABLE db.history creates that table
    assert (neither.name, neither.metadata_table) == ("history", None)  # type: ignore[attr-defined]


def test_resolve_table_other_catalog_and_location() -> None:
    r = resolve("floe", "a", "b", "t")
    assert (r.catalog, r.namespace, r.name) == ("floe", ("a", "b"), "t")  # type: ignore[attr-defined]
    loc = resolve("/tmp/warehouse/db/t")
    assert loc.location == "/tmp/warehouse/db/t"  # type: ignore[attr-defined]


def test_resolve_use_and_namespace() -> None:
    assert resolve_use(("hadoop_catalog",), target=None, current_catalog="floe", catalogs=CATALOGS) == (
        "hadoop_catalog",
        None,
    )
    assert resolve_use(("hadoop_catalog", "db"), target=None, current_catalog="floe", catalogs=CATALOGS) == (
        "hadoop_catalog",
        ("db",),
    )
    assert resolve_use(("db",), target=None, current_catalog="floe", catalogs=CATALOGS) == ("floe", ("db",))
    assert resolve_use(
        ("floe",), target="namespace", current_catalog="hadoop_catalog", catalogs=CATALOGS
    ) == (
        "hadoop_catalog",
        ("floe",),
    )
    assert resolve_namespace(("hadoop_catalog", "db"), current_catalog="floe", catalogs=CATALOGS) == (
        "hadoop_catalog",
        ("db",),
    )


# -- literals and rewriting --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("NULL", None),
        ("true", True),
        ("42", 42),
        ("-7L", -7),
        ("1.5D", 1.5),
        ("2BD", Decimal(2)),
        ("1.50", Decimal("1.50")),
        ("1e3", 1000.0),
        ("'x'", "x"),
        ("X'0A0B'", b"\n\x0b"),
        ("DATE '2021-12-01'", dt.date(2021, 12, 1)),
        ("TIMESTAMP '2022-01-26 13:26:46.8'", dt.datetime(2022, 1, 26, 13, 26, 46, 800000)),
        ("array(1, 2)", [1, 2]),
        ("map('a', 1)", {"a": 1}),
    ],
)
def test_call_argument_literals_evaluated(text: str, value: object) -> None:
    stmt = one(f"CALL c.system.p({text})")
    assert isinstance(stmt, c.Call)
    assert stmt.args[0].value == value


def test_call_argument_not_constant_raises_unsupported() -> None:
    with pytest.raises(UnsupportedError, match="not a constant"):
        one("CALL c.system.p(current_timestamp())")


def test_query_rewrite_maps_each_reference_in_source_order() -> None:
    stmt = one("WITH a AS (SELECT * FROM cat.db.t) SELECT * FROM a JOIN db.u ON a.x = u.x")
    assert isinstance(stmt, c.Select)
    names = {0: "view_t", 1: "view_u"}
    sql = stmt.query.rewrite(lambda r: names[r.index])
    assert sql == "WITH a AS (SELECT * FROM view_t AS t) SELECT * FROM a JOIN view_u AS u ON a.x = u.x"


# -- statements kept parsed ------------------------------------------------------------------------------
def test_a_statement_parsed_again_is_an_equal_copy_of_its_own() -> None:
    """The same text comes back from the kept parse (a pipeline's statements repeat), as a copy: a handler
    changing its sqlglot tree changes nothing for the next caller."""
    sql = "SELECT id, count(*) AS n FROM cat.db.t WHERE id > 3 GROUP BY id"
    first = parse_statement(sql)
    assert isinstance(first, c.Select)
    first.query.node.set("where", None)  # as a handler rewriting its copy in place
    again = parse_statement(sql)
    assert isinstance(again, c.Select)
    assert again.query.node is not first.query.node
    assert again.query.node.args.get("where") is not None
    assert again == parse_statement(sql + " ;")  # the same statement text, kept once


def test_a_failed_parse_is_not_kept_and_its_position_follows_the_script() -> None:
    bad = "SELECT id FROMM t WHERE"
    with pytest.raises(ParseError) as first:
        parse_statement(bad)
    with pytest.raises(ParseError) as shifted:
        parse_statement(bad, line=3, col=5)
    assert str(first.value) != str(shifted.value) and "line 3" in str(shifted.value)


def test_long_statements_are_parsed_each_time(monkeypatch: pytest.MonkeyPatch) -> None:
    from floe.sql import parser

    calls: list[str] = []
    real = parser._dispatch
    monkeypatch.setattr(parser, "_dispatch", lambda text: calls.append(text) or real(text))
    rows = ", ".join(f"({i}, 'x{i}')" for i in range(2000))
    long_insert = f"INSERT INTO cat.db.t VALUES {rows}"
    assert len(long_insert) > parser._PARSED_TEXT_MAX
    parse_statement(long_insert)
    parse_statement(long_insert)
    short = "SELECT 41 + 1 AS answer_kept_once"
    parse_statement(short)
    parse_statement(short)
    assert [len(t) for t in calls] == [len(long_insert), len(long_insert), len(short)]
