"""floe.config: layers and precedence, Spark-style keys, JDBC URL mapping, the embedded default catalog."""

from __future__ import annotations

from pathlib import Path

import pytest

from floe.config import (
    EMBEDDED_CATALOG,
    FloeConfig,
    jdbc_to_sqlalchemy,
    normalize_catalog_properties,
    resolve_catalog_properties,
)
from floe.errors import NotFoundError, ValidationError

SEED_SPARK_DEFAULTS = {
    # seed 002 chapter 3, spark-defaults.conf (hdfs:// replaced by a local path)
    "spark.sql.catalog.hive_catalog": "org.apache.iceberg.spark.SparkCatalog",
    "spark.sql.catalog.hive_catalog.type": "hive",
    "spark.sql.catalog.hive_catalog.uri": "thrift://bigdata185:9083",
    "spark.sql.catalog.hadoop_catalog": "org.apache.iceberg.spark.SparkCatalog",
    "spark.sql.catalog.hadoop_catalog.type": "hadoop",
    "spark.sql.catalog.hadoop_catalog.warehouse": "/tmp/dw/iceberg",
    "spark.sql.catalog.catalog-name.type": "hadoop",
    "spark.sql.catalog.catalog-name.default-namespace": "db",
    "spark.sql.catalog.catalog-name.uri": "thrift://bigdata185:9083",
    "spark.sql.catalog.catalog-name.warehouse": "/tmp/dw/iceberg",
    "spark.sql.extensions": "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
    "spark.sql.sources.partitionOverwriteMode": "dynamic",
}


def load(
    tmp_path: Path, overrides: dict[str, str] | None = None, env: dict[str, str] | None = None
) -> FloeConfig:
    environ = {"HOME": str(tmp_path / "home")}
    environ.update(env or {})
    return FloeConfig.load(overrides, environ=environ, cwd=tmp_path)


def test_load_nothing_configured_embedded_sqlite_catalog_in_dot_floe(tmp_path: Path) -> None:
    cfg = load(tmp_path)
    home = tmp_path / ".floe"
    assert cfg.home == home
    assert cfg.default_catalog == EMBEDDED_CATALOG
    assert cfg.catalogs == {
        "floe": {
            "type": "sql",
            "uri": f"sqlite:///{home / 'catalog.db'}",
            "warehouse": str(home / "warehouse"),
        }
    }
    assert cfg.spark_conf == {}
    assert cfg.config_file is None


def test_load_floe_home_env_moves_embedded_catalog(tmp_path: Path) -> None:
    cfg = load(tmp_path, env={"FLOE_HOME": str(tmp_path / "elsewhere")})
    assert cfg.catalogs["floe"]["uri"] == f"sqlite:///{tmp_path / 'elsewhere' / 'catalog.db'}"
    assert cfg.catalogs["floe"]["warehouse"] == str(tmp_path / "elsewhere" / "warehouse")


def test_load_relative_floe_home_is_made_absolute(tmp_path: Path) -> None:
    cfg = load(tmp_path, env={"FLOE_HOME": "rel"})
    assert cfg.home == tmp_path / "rel"


def test_load_seed_spark_defaults_catalogs_and_spark_conf(tmp_path: Path) -> None:
    cfg = load(tmp_path, SEED_SPARK_DEFAULTS)
    assert cfg.catalogs["hadoop_catalog"] == {"type": "hadoop", "warehouse": "/tmp/dw/iceberg"}
    assert cfg.catalogs["hive_catalog"] == {"type": "hive", "uri": "thrift://bigdata185:9083"}
    assert cfg.catalogs["catalog-name"]["default-namespace"] == "db"
    # Iceberg's extensions class would break a plain Spark session; catalog keys are not Spark settings
    assert cfg.spark_conf == {"spark.sql.sources.partitionOverwriteMode": "dynamic"}
    assert cfg.default_catalog == "floe"


def test_load_session_catalog_class_accepted(tmp_path: Path) -> None:
    cfg = load(
        tmp_path,
        {
            "spark.sql.catalog.spark_catalog": "org.apache.iceberg.spark.SparkSessionCatalog",
            "spark.sql.catalog.spark_catalog.type": "hadoop",
            "spark.sql.catalog.spark_catalog.warehouse": "/w",
        },
    )
    assert cfg.catalogs["spark_catalog"] == {"type": "hadoop", "warehouse": "/w"}


def test_load_non_iceberg_catalog_class_stays_spark_setting(tmp_path: Path) -> None:
    cfg = load(
        tmp_path,
        {"spark.sql.catalog.delta": "io.delta.Catalog", "spark.sql.catalog.delta.opt": "1"},
    )
    assert "delta" not in cfg.catalogs
    assert cfg.spark_conf == {
        "spark.sql.catalog.delta": "io.delta.Catalog",
        "spark.sql.catalog.delta.opt": "1",
    }


def test_load_jdbc_type_becomes_sql_catalog_with_sqlalchemy_url(tmp_path: Path) -> None:
    cfg = load(
        tmp_path,
        {
            "spark.sql.catalog.pg": "org.apache.iceberg.spark.SparkCatalog",
            "spark.sql.catalog.pg.type": "jdbc",
            "spark.sql.catalog.pg.uri": "jdbc:postgresql://db.local:5432/iceberg",
            "spark.sql.catalog.pg.jdbc.user": "ice",
            "spark.sql.catalog.pg.jdbc.password": "p@ss word",
            "spark.sql.catalog.pg.warehouse": "s3://bucket/wh",
        },
    )
    assert cfg.catalogs["pg"] == {
        "type": "sql",
        "uri": "postgresql+psycopg2://ice:p%40ss%20word@db.local:5432/iceberg",
        "warehouse": "s3://bucket/wh",
    }


@pytest.mark.parametrize(
    ("jdbc", "expected"),
    [
        ("jdbc:postgresql://h:5432/db", "postgresql+psycopg2://h:5432/db"),
        (
            "jdbc:postgresql://h/db?user=u&password=p&sslmode=require",
            "postgresql+psycopg2://u:p@h/db?sslmode=require",
        ),
        ("jdbc:mysql://h:3306/db", "mysql+pymysql://h:3306/db"),
        (
            "jdbc:mysql://h:3306/db?useSSL=false&user=u&charset=utf8mb4",
            "mysql+pymysql://u@h:3306/db?charset=utf8mb4",
        ),
        ("jdbc:mariadb://h/db", "mysql+pymysql://h/db"),
        ("jdbc:sqlite:/tmp/cat.db", "sqlite:////tmp/cat.db"),
        ("jdbc:sqlite:cat.db", "sqlite:///cat.db"),
        ("jdbc:sqlite::memory:", "sqlite://"),
    ],
)
def test_jdbc_to_sqlalchemy_known_databases(jdbc: str, expected: str) -> None:
    assert jdbc_to_sqlalchemy(jdbc) == expected


def test_jdbc_to_sqlalchemy_unknown_database_raises() -> None:
    with pytest.raises(ValidationError, match="jdbc:oracle"):
        jdbc_to_sqlalchemy("jdbc:oracle:thin:@h:1521/x")


def test_normalize_catalog_warehouse_only_is_hadoop_and_missing_type_raises() -> None:
    assert normalize_catalog_properties("c", {"warehouse": "/w"}) == {"type": "hadoop", "warehouse": "/w"}
    with pytest.raises(ValidationError, match="Catalog 'c' has no type"):
        normalize_catalog_properties("c", {"uri": "thrift://x"})


def test_load_file_catalogs_spark_table_and_default(tmp_path: Path) -> None:
    (tmp_path / "floe.toml").write_text(
        """
default_catalog = "prod"
[catalog.prod]
type = "hadoop"
warehouse = "/data/wh"
[spark]
"spark.sql.shuffle.partitions" = 8
sql.session.timeZone = "UTC"
"spark.sql.catalog.lake.type" = "hadoop"
"spark.sql.catalog.lake.warehouse" = "/lake"
"""
    )
    cfg = load(tmp_path)
    assert cfg.config_file == tmp_path / "floe.toml"
    assert cfg.default_catalog == "prod"
    assert cfg.catalogs["prod"] == {"type": "hadoop", "warehouse": "/data/wh"}
    assert cfg.catalogs["lake"] == {"type": "hadoop", "warehouse": "/lake"}
    assert cfg.spark_conf == {"spark.sql.shuffle.partitions": "8", "spark.sql.session.timeZone": "UTC"}
    assert "floe" in cfg.catalogs


def test_load_file_in_floe_home_wins_over_cwd_file(tmp_path: Path) -> None:
    (tmp_path / ".floe").mkdir()
    (tmp_path / ".floe" / "floe.toml").write_text('[catalog.a]\ntype = "hadoop"\nwarehouse = "/home-file"\n')
    (tmp_path / "floe.toml").write_text('[catalog.a]\ntype = "hadoop"\nwarehouse = "/cwd-file"\n')
    assert load(tmp_path).catalogs["a"]["warehouse"] == "/home-file"


def test_load_precedence_conf_over_env_over_file(tmp_path: Path) -> None:
    (tmp_path / "floe.toml").write_text(
        'default_catalog = "a"\n[catalog.a]\ntype = "hadoop"\nwarehouse = "/file"\nkeep = "file"\n'
    )
    env = {
        "FLOE_CATALOG__A__WAREHOUSE": "/env",
        "FLOE_CATALOG__A__CLIENT_REGION": "x",
        "FLOE_DEFAULT_CATALOG": "floe",
    }
    cfg = load(tmp_path, env=env)
    assert cfg.catalogs["a"] == {"type": "hadoop", "warehouse": "/env", "keep": "file", "client-region": "x"}
    assert cfg.default_catalog == "floe"
    cfg = load(
        tmp_path,
        {"spark.sql.catalog.a.warehouse": "/conf", "spark.sql.defaultCatalog": "a"},
        env=env,
    )
    assert cfg.catalogs["a"]["warehouse"] == "/conf"
    assert cfg.catalogs["a"]["keep"] == "file"
    assert cfg.default_catalog == "a"
    assert "spark.sql.defaultCatalog" not in cfg.spark_conf


def test_load_env_nested_key_double_underscore_is_dot(tmp_path: Path) -> None:
    cfg = load(
        tmp_path,
        env={
            "FLOE_CATALOG__PG__TYPE": "jdbc",
            "FLOE_CATALOG__PG__URI": "jdbc:postgresql://h/db",
            "FLOE_CATALOG__PG__JDBC__USER": "u",
        },
    )
    assert cfg.catalogs["pg"] == {"type": "sql", "uri": "postgresql+psycopg2://u@h/db"}


def test_load_user_defined_floe_catalog_replaces_embedded(tmp_path: Path) -> None:
    cfg = load(tmp_path, {"spark.sql.catalog.floe.type": "hadoop", "spark.sql.catalog.floe.warehouse": "/w"})
    assert cfg.catalogs["floe"] == {"type": "hadoop", "warehouse": "/w"}


def test_load_hive_style_iceberg_catalog_keys(tmp_path: Path) -> None:
    cfg = load(
        tmp_path,
        {"iceberg.catalog.hadoop_catalog.type": "hadoop", "iceberg.catalog.hadoop_catalog.warehouse": "/w"},
    )
    assert cfg.catalogs["hadoop_catalog"] == {"type": "hadoop", "warehouse": "/w"}


@pytest.mark.parametrize(
    ("overrides", "env", "message"),
    [
        ({"nonsense.key": "1"}, {}, "Unknown configuration key 'nonsense.key'"),
        ({"spark.sql.defaultCatalog": "nope"}, {}, "Default catalog 'nope' is not configured"),
        ({}, {"FLOE_CATALOG__ONLYNAME": "x"}, "FLOE_CATALOG__<NAME>__<KEY>"),
    ],
)
def test_load_bad_input_raises_validation_error(
    tmp_path: Path, overrides: dict[str, str], env: dict[str, str], message: str
) -> None:
    with pytest.raises(ValidationError, match=message.replace("*", r"\*")):
        load(tmp_path, overrides, env=env)


def test_load_invalid_toml_names_file(tmp_path: Path) -> None:
    (tmp_path / "floe.toml").write_text("[catalog.a\n")
    with pytest.raises(ValidationError, match="floe.toml"):
        load(tmp_path)


def test_catalog_properties_unknown_name_lists_configured(tmp_path: Path) -> None:
    cfg = load(tmp_path)
    with pytest.raises(NotFoundError, match=r"Unknown catalog 'x' \(configured: floe\)"):
        cfg.catalog_properties("x")


def _resolve(
    tmp_path: Path, name: str | None, props: dict[str, str] | None = None, env: dict[str, str] | None = None
) -> tuple[str, dict[str, str]]:
    environ = {"HOME": str(tmp_path / "home"), **(env or {})}
    return resolve_catalog_properties(name, props, environ=environ, cwd=tmp_path)


def test_resolve_catalog_precedence_keywords_over_env_over_file(tmp_path: Path) -> None:
    (tmp_path / "floe.toml").write_text(
        '[catalog.c]\ntype = "hadoop"\nwarehouse = "/file"\n"s3.endpoint" = "http://file"\nowner = "f"\n'
    )
    env = {"FLOE_CATALOG__C__WAREHOUSE": "/env", "FLOE_CATALOG__C__S3__ENDPOINT": "http://env"}
    name, props = _resolve(tmp_path, "c", {"warehouse": "/kw"}, env)
    assert name == "c"
    assert props == {"type": "hadoop", "warehouse": "/kw", "s3.endpoint": "http://env", "owner": "f"}


def test_resolve_catalog_no_name_is_default_catalog(tmp_path: Path) -> None:
    name, props = _resolve(tmp_path, None)
    assert name == EMBEDDED_CATALOG
    assert props["uri"] == f"sqlite:///{tmp_path / '.floe' / 'catalog.db'}"
    name, props = _resolve(
        tmp_path, None, env={"FLOE_DEFAULT_CATALOG": "w", "FLOE_CATALOG__W__WAREHOUSE": "/w"}
    )
    assert (name, props) == ("w", {"type": "hadoop", "warehouse": "/w"})


def test_resolve_catalog_name_falls_back_to_lower_case(tmp_path: Path) -> None:
    name, props = _resolve(tmp_path, "PROD", env={"FLOE_CATALOG__PROD__WAREHOUSE": "/p"})
    assert name == "PROD"
    assert props["warehouse"] == "/p"


def test_resolve_catalog_unknown_name_without_properties_names_fix(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match=r"FLOE_CATALOG__NOPE__TYPE.*\[catalog.nope\]"):
        _resolve(tmp_path, "nope")


@pytest.mark.parametrize(
    ("uri", "kind"),
    [
        ("postgresql+psycopg2://h/db", "sql"),
        ("mysql+pymysql://h/db", "sql"),
        ("sqlite:////tmp/x.db", "sql"),
        ("jdbc:sqlite:/tmp/x.db", "sql"),
        ("http://localhost:8181", "rest"),
        ("https://cat.example.com/api", "rest"),
    ],
)
def test_normalize_catalog_infers_type_from_uri(uri: str, kind: str) -> None:
    assert normalize_catalog_properties("c", {"uri": uri})["type"] == kind


# -- floe.catalog.names: the one table-name resolver -------------------------------------------------
def _names_config(tmp_path: Path) -> FloeConfig:
    return load(
        tmp_path,
        {"spark.sql.catalog.Prod.type": "hadoop", "spark.sql.catalog.Prod.warehouse": str(tmp_path / "dw")},
        env={"FLOE_HOME": str(tmp_path / "fh")},
    )


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("floe.db.t", ("floe", ("db", "t"))),
        ("Prod.db.t", ("Prod", ("db", "t"))),
        ("prod.a.b.t", ("Prod", ("a", "b", "t"))),  # catalog names match case-insensitively
        ("db.t", (EMBEDDED_CATALOG, ("db", "t"))),  # two parts: always namespace.table
        ("floe.t", (EMBEDDED_CATALOG, ("floe", "t"))),
        ("a.b.t", (EMBEDDED_CATALOG, ("a", "b", "t"))),  # nested namespace in the default catalog
        ("`my.db`.t", (EMBEDDED_CATALOG, ("my.db", "t"))),
        ("Prod.`x``y`.t", ("Prod", ("x`y", "t"))),
    ],
)
def test_resolve_table_identifier_names_resolve_to_catalog_and_identifier(
    tmp_path: Path, name: str, expected: tuple[str, tuple[str, ...]]
) -> None:
    from floe.catalog.names import resolve_table_identifier

    assert resolve_table_identifier(name, config=_names_config(tmp_path)) == expected


@pytest.mark.parametrize("name", ["t", "db..t", "`db.t", "/dw/db/t", "s3://b/db/t", "file:/dw/t", "x.metadata.json"])
def test_resolve_table_identifier_bad_or_location_raises(tmp_path: Path, name: str) -> None:
    from floe.catalog.names import resolve_table_identifier

    with pytest.raises(ValidationError):
        resolve_table_identifier(name, config=_names_config(tmp_path))


def test_load_table_by_name_identifier_and_location_open_same_table(tmp_path: Path) -> None:
    import pyarrow as pa

    from floe.catalog.names import is_location, load_table_by_name
    from floe.errors import NoSuchTableError

    cfg = _names_config(tmp_path)
    from floe.catalog.loader import open_catalog

    cat = open_catalog("Prod", cfg.catalog_properties("Prod"))
    cat.create_namespace(("a", "b"))  # type: ignore[attr-defined]
    created = cat.create_table(("a", "b", "t"), pa.schema([("id", pa.int64())]))  # type: ignore[attr-defined]
    by_name = load_table_by_name("prod.a.b.t", config=cfg)
    by_location = load_table_by_name(created.location(), config=cfg)
    assert is_location(created.location())
    assert by_name.metadata.table_uuid == by_location.metadata.table_uuid
    with pytest.raises(NoSuchTableError, match=r"a\.b\.missing in catalog Prod"):
        load_table_by_name("Prod.a.b.missing", config=cfg)


def test_load_iceberg_impl_classes_map_or_are_refused_by_key(tmp_path: Path) -> None:
    base = {"spark.sql.catalog.j": "org.apache.iceberg.spark.SparkCatalog", "spark.sql.catalog.j.uri": "jdbc:sqlite:/tmp/x.db",
            "spark.sql.catalog.j.catalog-impl": "org.apache.iceberg.jdbc.JdbcCatalog",
            "spark.sql.catalog.j.io-impl": "org.apache.iceberg.hadoop.HadoopFileIO", "spark.sql.catalog.j.cache-enabled": "false"}
    assert load(tmp_path, base).catalogs["j"] == {"type": "sql", "uri": "sqlite:////tmp/x.db"}
    with pytest.raises(ValidationError, match=r"j\.catalog-impl=org\.apache\.iceberg\.nessie\.NessieCatalog"):
        load(tmp_path, {**base, "spark.sql.catalog.j.catalog-impl": "org.apache.iceberg.nessie.NessieCatalog"})
    with pytest.raises(ValidationError, match=r"j\.io-impl=com\.example\.MyIO"):
        load(tmp_path, {**base, "spark.sql.catalog.j.io-impl": "com.example.MyIO"})
