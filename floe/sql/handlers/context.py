"""What every statement handler shares: name resolution, table loading, the lazy Spark session, errors.

Spark starts only when a handler asks for :meth:`HandlerContext.spark` (queries, writes, row-level
deletes); DDL and metadata statements answer from the catalog and metadata files alone.
"""

from __future__ import annotations

import datetime as dt
import logging
import uuid
import zoneinfo
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from floe.catalog.names import unknown_catalog_hint
from floe.errors import FloeError, NoSuchTableError, UnsupportedError, ValidationError
from floe.spec import properties as P
from floe.sql import commands as c
from floe.sql.identifiers import Name, ResolvedTable, format_name, resolve_table
from floe.sql.spark_engine import spark_engine

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from floe.sql.engine import SqlSession
    from floe.table.table import Table

__all__ = ["Handler", "HandlerContext", "spark_errors"]

Handler = Callable[["HandlerContext", c.Statement], Any]

_OVERWRITE_MODE_KEY = "spark.sql.sources.partitionOverwriteMode"
WAP_ID_CONF = "spark.wap.id"
WAP_BRANCH_CONF = "spark.wap.branch"
_TZ_KEY = "spark.sql.session.timeZone"
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


@contextmanager
def spark_errors(what: str) -> Iterator[None]:
    """Turn Spark's multi-line analysis/parse/runtime errors into one-line :class:`ValidationError`s.

    ``what`` names the statement (``SELECT``, ``INSERT INTO db.t``) so the line says where it failed.
    """
    try:
        yield
    except FloeError:
        raise
    except Exception as e:
        module = type(e).__module__
        if not module.startswith(("pyspark", "py4j")):
            raise
        lines = [line.strip() for line in str(e).strip().splitlines() if line.strip()]
        first = lines[0] if lines else type(e).__name__
        raise ValidationError(f"{what} failed: {first}") from e


def _quiet_query_context_loggers() -> None:
    """Silence PySpark's JSON "query context" error logs: the engine reports each error itself, in one line."""
    for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
        logging.getLogger(name).disabled = True


class HandlerContext:
    """Per-session state of the statement handlers.

    Args:
        session: the SQL session (current catalog and namespace, settings, catalogs).
        spark: a SparkSession to use instead of creating one on first need (tests, notebooks).
    """

    def __init__(self, session: SqlSession, *, spark: SparkSession | None = None) -> None:
        self.session = session
        self._spark = spark
        self._owns_spark = False
        self._applied: dict[str, str] = {}

    # -- Spark ---------------------------------------------------------------------------------------
    @property
    def spark_started(self) -> bool:
        """Whether a SparkSession is in use (given or started)."""
        return self._spark is not None

    def spark(self) -> SparkSession:
        """The SparkSession, created on first use with the configuration's Spark settings."""
        _quiet_query_context_loggers()
        conf = {k: v for k, v in self.session.conf.items() if k.startswith("spark.")}
        if self._spark is None:
            self._spark = spark_engine().session(conf)
            self._owns_spark, self._applied = True, conf
        elif self._owns_spark and conf != self._applied:
            # SET spark.* after start-up: apply the runtime settings to the session Floe created. A session
            # passed in belongs to the caller and is left as configured.
            changed = {k: v for k, v in conf.items() if self._applied.get(k) != v}
            spark_engine().attach(self._spark, conf=changed)
            self._applied = conf
        return self._spark

    def view_name(self, hint: str = "t") -> str:
        """A fresh temporary view name (never clashes with user names)."""
        safe = "".join(ch if ch.isalnum() else "_" for ch in hint)[:40]
        return f"__floe_{safe}_{uuid.uuid4().hex[:12]}"

    def temp_view(self, df: DataFrame, hint: str = "t") -> str:
        """Register ``df`` as a temporary view; returns its name."""
        name = self.view_name(hint)
        df.createOrReplaceTempView(name)
        return name

    def drop_views(self, names: list[str]) -> None:
        """Drop temporary views registered for one statement (kept on Spark Connect: a Connect DataFrame is
        a plan the server analyses on each action, so a query returned lazily still names its views)."""
        if self._spark is None or type(self._spark).__module__.startswith("pyspark.sql.connect"):
            return
        for n in names:
            self._spark.catalog.dropTempView(n)

    # -- settings ------------------------------------------------------------------------------------
    def overwrite_mode(self) -> str:
        """``static`` or ``dynamic`` (``spark.sql.sources.partitionOverwriteMode``; Spark's default static)."""
        mode = self.session.conf.get(_OVERWRITE_MODE_KEY, "static").strip().lower()
        if mode not in ("static", "dynamic"):
            raise ValidationError(f"{_OVERWRITE_MODE_KEY} must be static or dynamic, got {mode!r}")
        return mode

    def time_zone(self) -> dt.tzinfo:
        """The session time zone (``spark.sql.session.timeZone``, default UTC) for timestamp literals."""
        name = self.session.conf.get(_TZ_KEY, "UTC")
        if name.upper() in ("UTC", "Z", "GMT"):
            return dt.timezone.utc
        try:
            return zoneinfo.ZoneInfo(name)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError) as e:
            raise ValidationError(f"Unknown time zone {name!r} in {_TZ_KEY}") from e

    def timestamp_ms(self, value: object) -> int:
        """Milliseconds since the epoch of a timestamp literal value (naive = session time zone).

        Raises:
            ValidationError: not a timestamp, date, number of milliseconds or ISO string.
        """
        if isinstance(value, bool):
            raise ValidationError(f"Not a timestamp: {value!r}")
        if isinstance(value, int):
            return value
        if isinstance(value, str):
            from floe.sql.literals import _timestamp

            try:
                value = _timestamp(value)
            except ValueError as e:
                raise ValidationError(f"Not a timestamp: {value!r}") from e
        if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
            value = dt.datetime(value.year, value.month, value.day)
        if isinstance(value, dt.datetime):
            aware = value if value.tzinfo is not None else value.replace(tzinfo=self.time_zone())
            return (aware - _EPOCH) // dt.timedelta(milliseconds=1)
        raise ValidationError(f"Not a timestamp: {value!r}")

    # -- tables --------------------------------------------------------------------------------------
    def catalog(self, name: str | None = None) -> Any:
        """The loaded catalog ``name`` (default: current)."""
        return self.session.catalog(name)

    def resolve(self, name: Name, *, allow_metadata: bool = False) -> ResolvedTable:
        """Resolve a table name against the session (see :func:`floe.sql.identifiers.resolve_table`).

        Raises:
            ValidationError: the name selects a metadata table or snapshot where a table is needed.
        """
        ref = resolve_table(
            name,
            current_catalog=self.session.current_catalog,
            current_namespace=self.session.namespace(),
            catalogs=self.session.catalog_properties,
            table_exists=self._table_exists,
        )
        if not allow_metadata and (
            ref.metadata_table or ref.branch or ref.tag or ref.snapshot_id is not None or ref.as_of_timestamp_ms is not None
        ):
            raise ValidationError(f"{format_name(name)} names a metadata table or snapshot, not a table")
        return ref

    def table_exists(self, ref: ResolvedTable) -> bool:
        """Whether the (plain) table a resolved name refers to exists (a path-based table always does)."""
        return ref.location is not None or self._table_exists(ref.catalog, ref.namespace, ref.name)

    def _table_exists(self, catalog: str, namespace: Name, table: str) -> bool:
        try:
            cat = self.session.catalog(catalog)
        except FloeError:
            return False
        exists = getattr(cat, "table_exists", None)
        return bool(exists((*namespace, table))) if exists is not None else False

    def load(self, ref: ResolvedTable | Name) -> Table:
        """Load the table a (resolved) name refers to.

        Raises:
            NoSuchTableError: it does not exist (the message names it as written, with its catalog).
        """
        if not isinstance(ref, ResolvedTable):
            ref = self.resolve(ref)
        if ref.location is not None:
            from floe.catalog import load_table

            return load_table(ref.location)
        cat = self.session.catalog(ref.catalog)
        loader = getattr(cat, "load_table", None)
        if loader is None:
            raise UnsupportedError(f"Catalog {ref.catalog} cannot load tables")
        try:
            return loader(ref.identifier)  # type: ignore[no-any-return]
        except NoSuchTableError:
            hint = unknown_catalog_hint((*ref.namespace, ref.name), self.session.catalog_names)
            raise NoSuchTableError(f"Table not found: {ref}{hint}") from None

    # -- write targets ------------------------------------------------------------------------------
    def wap_settings(self, table: Table) -> tuple[str | None, str | None]:
        """``(spark.wap.id, spark.wap.branch)`` as they apply to ``table`` (only with ``write.wap.enabled``)."""
        if str(table.properties.get(P.WRITE_AUDIT_PUBLISH_ENABLED, "false")).lower() != "true":
            return None, None
        conf = self.session.conf
        return conf.get(WAP_ID_CONF) or None, conf.get(WAP_BRANCH_CONF) or None

    def load_for_write(self, name: Name) -> tuple[Table, str | None]:
        """The table a write names and the branch it writes (None: main), as Iceberg's Spark writer picks it:
        ``t.branch_x`` names a branch; with ``write.wap.enabled``, ``spark.wap.branch`` redirects writes (the
        branch is created at the current snapshot if missing).

        Raises:
            ValidationError: a metadata table, tag, snapshot or missing branch, or both a branch name and a
                different ``spark.wap.branch``, or both ``spark.wap.id`` and ``spark.wap.branch``.
        """
        ref = self.resolve(name, allow_metadata=True)
        if ref.metadata_table or ref.tag or ref.snapshot_id is not None or ref.as_of_timestamp_ms is not None:
            what = f"tag {ref.tag!r}" if ref.tag else "a metadata table or snapshot"
            raise ValidationError(f"Cannot write to {format_name(name)}: it names {what}, not a table or branch")
        table = self.load(ResolvedTable(catalog=ref.catalog, namespace=ref.namespace, name=ref.name,
                                        location=ref.location))
        wap_id, wap_branch = self.wap_settings(table)
        if wap_id is not None and wap_branch is not None:
            raise ValidationError(
                f"Cannot set both {WAP_ID_CONF} and {WAP_BRANCH_CONF} when writing to table {table.name()}"
            )
        branch = ref.branch
        if wap_branch is not None:
            if branch is not None and branch != wap_branch:
                raise ValidationError(
                    f"Cannot write to branch {branch!r} of table {table.name()}: {WAP_BRANCH_CONF} is set to "
                    f"{wap_branch!r}"
                )
            if wap_branch not in table.refs():
                table.manage_snapshots().create_branch(None, wap_branch).commit()
            return table, wap_branch
        if branch is not None and branch not in table.refs():
            raise ValidationError(f"Cannot write to branch {branch!r} of table {table.name()}: it does not exist")
        return table, branch

    def read_branch(self, table: Table) -> str | None:
        """The branch plain reads of ``table`` see: ``spark.wap.branch`` when set, enabled and existing."""
        _, wap_branch = self.wap_settings(table)
        return wap_branch if wap_branch is not None and wap_branch in table.refs() else None
