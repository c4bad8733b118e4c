"""Run one SQL scenario on Floe and on Iceberg Java (jsql), and compare what each statement returns.

A scenario is a ``.sql`` file under ``tests/spark/parity/``: the statements a user of Iceberg on Spark types,
on a catalog named ``cat`` (JDBC on SQLite for both engines, each in a folder of its own). Java's results are
recorded once, per scenario, in ``parity/java/<name>.json`` (``python tests/spark/_sql_parity.py record``);
the tests run Floe and compare with the record, and a slow test re-records Java to check the record.

Statements may name a snapshot that only exists at run time: ``${snapshot:db.t:0}`` is the table's first
snapshot id (in commit order), ``${snapshot:db.t:-1}`` its latest, ``${timestamp:db.t:N}`` that snapshot's
commit time (``yyyy-MM-dd HH:mm:ss.SSS``, UTC), ``${millis:db.t:N}`` the same in epoch milliseconds, and
``${root}`` the engine's own scratch folder (for Parquet folders to import).

Results are compared after normalising what legitimately differs between engines and runs: snapshot ids and
epoch-millisecond times (integers of 12 digits or more), commit times (ISO times from 2025 on), UUIDs, file
names (not their folders, also in delete files' path bounds), byte sizes and lengths, and engine-identifying summary entries. Rows are compared as a multiset
unless the statement orders them. A statement Java refuses must fail on Floe too (the texts differ).
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import math
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

SCENARIOS = Path(__file__).parent / "parity"
RECORDS = SCENARIOS / "java"
CATALOG = "cat"

_PLACEHOLDER = re.compile(r"\$\{(snapshot|timestamp|millis):([^:}]+):(-?\d+)\}")
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_RECENT_TIME = re.compile(r"20(2[5-9]|[3-9]\d)-\d\d-\d\d[T ]\d\d:\d\d:\d\d(\.\d+)?")
_SESSION_STATEMENT = re.compile(r"^\s*(SET|RESET|USE|CREATE\s+(OR\s+REPLACE\s+)?TEMP(ORARY)?\s+VIEW)\b", re.IGNORECASE)
# Summary entries that name the engine, its run or byte sizes: they differ by construction.
_FILE_PATH_FIELD_ID = "2147483546"  # bounds of a position delete file's paths: binary, engine file names
_ENGINE_SUMMARY_KEYS = {"engine-version", "engine-name", "app-id", "spark.app.id", "iceberg-version"}


def catalog_conf(root: Path) -> dict[str, str]:
    """Spark confs of catalog ``cat`` (JDBC on SQLite) in ``root``; the same keys for both engines."""
    prefix = f"spark.sql.catalog.{CATALOG}"
    return {
        prefix: "org.apache.iceberg.spark.SparkCatalog",
        f"{prefix}.type": "jdbc",
        f"{prefix}.uri": f"jdbc:sqlite:{root}/catalog.db",
        f"{prefix}.warehouse": f"file:{root}/wh",
        f"{prefix}.jdbc.schema-version": "V1",
        "spark.sql.session.timeZone": "UTC",
    }


def scenario_names() -> list[str]:
    return sorted(p.stem for p in SCENARIOS.glob("*.sql"))


def statements_of(name: str) -> list[str]:
    from floe.sql.lexer import split_statements

    return [s.sql for s in split_statements((SCENARIOS / f"{name}.sql").read_text(encoding="utf-8"))]


# -- placeholders ----------------------------------------------------------------------------------
def resolve_placeholders(sql: str, root: Path) -> str:
    """Replace ``${snapshot|timestamp|millis:table:N}`` with values read from the catalog in ``root``."""
    if "${" not in sql:
        return sql
    sql = sql.replace("${root}", str(root))

    def value(m: re.Match[str]) -> str:
        from floe.catalog.loader import open_catalog
        from floe.config import normalize_catalog_properties

        props = {k.removeprefix(f"spark.sql.catalog.{CATALOG}."): v for k, v in catalog_conf(root).items()
                 if k.startswith(f"spark.sql.catalog.{CATALOG}.")}
        catalog = open_catalog(CATALOG, normalize_catalog_properties(CATALOG, props))
        table = catalog.load_table(tuple(m.group(2).split(".")))
        snapshots = sorted(table.metadata.snapshots, key=lambda s: s.sequence_number or s.timestamp_ms)
        snap = snapshots[int(m.group(3))]
        if m.group(1) == "snapshot":
            return str(snap.snapshot_id)
        if m.group(1) == "millis":
            return str(snap.timestamp_ms)
        when = dt.datetime.fromtimestamp(snap.timestamp_ms / 1000, tz=dt.UTC)
        return when.strftime("%Y-%m-%d %H:%M:%S.") + f"{snap.timestamp_ms % 1000:03d}"

    return _PLACEHOLDER.sub(value, sql)


# -- the two engines -----------------------------------------------------------------------------
def run_java(jsql: Path, statements: Sequence[str], root: Path) -> list[dict[str, Any]]:
    """Each statement's ``{"sql", "columns", "rows"}`` or ``{"sql", "error"}`` from Iceberg Java.

    Statements with snapshot placeholders start a new jsql process (after resolving them from the catalog);
    the session statements run before (SET, USE, temporary views) are replayed there first, unreported.
    Spark's own session tables do not survive a new process: scenarios create them after the last such
    placeholder, or do without.
    """
    args = [str(jsql), "--keep-going"]
    for key, value in catalog_conf(root).items():
        args += ["--conf", f"{key}={value}"]
    results: list[dict[str, Any]] = []
    session: list[str] = []
    chunk: list[str] = []

    def flush() -> None:
        if not chunk:
            return
        with tempfile.NamedTemporaryFile("w", suffix=".sql", delete=False) as f:
            f.write(";\n".join([*session, *chunk]) + ";\n")
        proc = subprocess.run([*args, "-f", f.name], capture_output=True, text=True, timeout=900, check=False)
        Path(f.name).unlink()
        out = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
        if len(out) != len(session) + len(chunk):
            raise RuntimeError(f"jsql printed {len(out)} results for {len(session) + len(chunk)} statements: "
                               f"{proc.stderr[-3000:]}")
        results.extend(out[len(session):])
        session.extend(s for s in chunk if _SESSION_STATEMENT.match(s))
        chunk.clear()

    for sql in statements:
        sql = sql.replace("${root}", str(root))  # known before the run: no new process needed
        if "${" in sql:
            flush()
            sql = resolve_placeholders(sql, root)
        chunk.append(sql)
    flush()
    return results


# Session settings a scenario may change, reset before the next one.
_SCENARIO_CONFS = ("spark.wap.id", "spark.wap.branch", "spark.sql.sources.partitionOverwriteMode")


def run_floe(spark: Any, statements: Sequence[str], root: Path) -> list[dict[str, Any]]:
    """Each statement's result through ``spark.sql`` of the session attached to Floe (the way a user's
    PySpark program runs it: Floe's statements by Floe, the rest by Spark), in Java's JSON shapes.

    The session is reset first (temporary views, current catalog, scenario settings) and detached after.
    """
    import floe.spark

    for view in spark.catalog.listTables():
        if view.isTemporary:
            spark.catalog.dropTempView(view.name)
    spark.catalog.setCurrentCatalog("spark_catalog")
    for key in _SCENARIO_CONFS:
        spark.conf.unset(key)
    session = floe.spark.attach(spark, conf=catalog_conf(root))
    out: list[dict[str, Any]] = []
    try:
        for raw in statements:
            sql = raw
            try:
                sql = resolve_placeholders(raw, root)
                df = session.sql(sql)
                rows = [[json_value(v) for v in row] for row in df.collect()]
            except Exception as e:  # noqa: BLE001 - every failure is a result to compare, as jsql reports it
                out.append({"sql": sql, "error": f"{type(e).__name__}: {e}".splitlines()[0]})
                continue
            out.append({"sql": sql, "columns": list(df.columns), "rows": rows})
    finally:  # leave the shared session as other tests expect it: Spark's catalog current, no `cat`
        session.sql("USE spark_catalog.default")
        floe.spark.detach(session)
        for key in [*catalog_conf(root), *_SCENARIO_CONFS]:
            if key != "spark.sql.session.timeZone":
                session.conf.unset(key)
        for view in session.catalog.listTables():
            if view.isTemporary:
                session.catalog.dropTempView(view.name)
    return out


def json_value(v: Any) -> Any:
    """A Python result value in jsql's JSON form (ISO times, decimals as text, binary as base64)."""
    if isinstance(v, dt.datetime):
        if v.tzinfo is not None:
            v = v.astimezone(dt.UTC).replace(tzinfo=None)
        return v.isoformat()
    if isinstance(v, dt.date | dt.time):
        return v.isoformat()
    if isinstance(v, Decimal):
        return str(v)
    if isinstance(v, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(v)).decode()
    if hasattr(v, "asDict"):  # a pyspark Row (a tuple): a struct
        return {str(k): json_value(x) for k, x in v.asDict(recursive=False).items()}
    if isinstance(v, dict):
        return {str(k): json_value(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        if v and all(isinstance(x, tuple) and len(x) == 2 for x in v):  # an Arrow map
            return {str(k): json_value(x) for k, x in v}
        return [json_value(x) for x in v]
    return v


# -- normalising -----------------------------------------------------------------------------------
def normalise(result: dict[str, Any], root: Path) -> dict[str, Any]:
    """What must match between engines: error or not; columns; rows with run-specific values masked."""
    if "error" in result:
        return {"error": True}
    where = [f"file:{root}/wh", f"file://{root}/wh", f"{root}/wh"]
    roots = [f"file:{root}", f"file://{root}", str(root)]
    columns = [str(c) for c in result["columns"]]
    rows = [[_mask(columns[i] if i < len(columns) else "", v, where, roots) for i, v in enumerate(r)]
            for r in result["rows"]]
    if not re.search(r"\border\s+by\b", result["sql"], re.IGNORECASE):
        rows.sort(key=lambda r: json.dumps(r, sort_keys=True, default=str))
    return {"columns": columns, "rows": rows}


def _mask(column: str, v: Any, where: list[str], roots: list[str]) -> Any:
    if "size" in column or column == "length" or column.endswith("_bytes_count"):
        return "<size>"  # bytes: each engine's writer encodes differently
    if isinstance(v, dict):
        return {k: ("<size>" if "size" in k else "<path>" if k == _FILE_PATH_FIELD_ID else _mask(k, x, where, roots))
                for k, x in sorted(v.items()) if k not in _ENGINE_SUMMARY_KEYS}
    if isinstance(v, list):
        return [_mask(column, x, where, roots) for x in v]
    if isinstance(v, bool) or v is None:
        return v
    if isinstance(v, int):
        return "<id>" if abs(v) >= 10**12 else v
    if isinstance(v, float):
        return "NaN" if math.isnan(v) else v
    if isinstance(v, str):
        return _mask_text(v, where, roots)
    return v


def _mask_text(s: str, where: list[str], roots: list[str]) -> str:
    for prefix in where:
        s = s.replace(prefix, "<wh>")
    for prefix in roots:
        s = s.replace(prefix, "<root>")
    s = re.sub(r"(<wh>/(?:[^/\s\"]+/)*)[^/\s\"]+\.(parquet|avro|orc|puffin|metadata\.json)",
               lambda m: f"{m.group(1)}<file>.{m.group(2)}", s)
    s = _UUID.sub("<uuid>", s)
    s = re.sub(r"\b\d{12,}\b", "<id>", s)
    return _RECENT_TIME.sub("<now>", s)


# -- comparing ---------------------------------------------------------------------------------------
@dataclass
class Comparison:
    """Per statement: whether Floe ran it (where Java did) and whether the results match."""

    name: str
    statements: list[str]
    java: list[dict[str, Any]]
    floe: list[dict[str, Any]]
    mismatches: list[int] = field(default_factory=list)

    @property
    def java_ran(self) -> int:
        return sum("error" not in r for r in self.java)

    @property
    def floe_ran(self) -> int:
        return sum("error" not in j and "error" not in f for j, f in zip(self.java, self.floe, strict=True))

    @property
    def matches(self) -> bool:
        return not self.mismatches

    def report(self) -> str:
        lines = [f"{self.name}: {len(self.mismatches)} of {len(self.statements)} statements differ"]
        for i in self.mismatches:
            lines.append(f"  [{i}] {self.statements[i][:160]}")
            lines.append(f"      java: {json.dumps(self.java[i], default=str)[:600]}")
            lines.append(f"      floe: {json.dumps(self.floe[i], default=str)[:600]}")
        return "\n".join(lines)


def compare(name: str, java: list[dict[str, Any]], java_root: Path, floe: list[dict[str, Any]],
            floe_root: Path) -> Comparison:
    statements = statements_of(name)
    out = Comparison(name, statements, java, floe)
    for i, (j, f) in enumerate(zip(java, floe, strict=True)):
        if normalise(j, java_root) != normalise(f, floe_root):
            out.mismatches.append(i)
    return out


def load_record(name: str) -> tuple[list[dict[str, Any]], Path]:
    data = json.loads((RECORDS / f"{name}.json").read_text(encoding="utf-8"))
    return data["results"], Path(data["root"])


def record_is_of(statements: Sequence[str], recorded: Sequence[dict[str, Any]], root: Path) -> str | None:
    """None when ``recorded`` ran exactly ``statements`` (placeholders and ``${root}`` as resolved), else what differs."""
    if len(statements) != len(recorded):
        return f"{len(recorded)} statements recorded, the scenario has {len(statements)}"
    for i, (sql, result) in enumerate(zip(statements, recorded, strict=True)):
        # each placeholder stands for the value resolved at record time: "\0" marks it through re.escape
        marked = _PLACEHOLDER.sub("\0", sql.replace("${root}", str(root)))
        pattern = re.escape(marked).replace(re.escape("\0"), ".+?")
        if not re.fullmatch(pattern, result["sql"], re.DOTALL):
            return f"statement {i + 1} differs: {sql[:80]!r}"
    return None


def record(jsql: Path, names: Sequence[str], log: Callable[[str], None] = print) -> None:
    """Run each scenario on Iceberg Java and store its results (with the folder it ran in)."""
    RECORDS.mkdir(exist_ok=True)
    for name in names:
        with tempfile.TemporaryDirectory(prefix=f"parity-{name}-") as tmp:
            results = run_java(jsql, statements_of(name), Path(tmp))
        (RECORDS / f"{name}.json").write_text(
            json.dumps({"root": tmp, "results": results}, indent=1, default=str) + "\n", encoding="utf-8")
        log(f"{name}: {sum('error' not in r for r in results)}/{len(results)} statements ran on Java")


def compare_all(names: Sequence[str], log: Callable[[str], None] = print) -> list[Comparison]:
    """Run each scenario on Floe (one local SparkSession) against Java's record; print a summary."""
    from floe.spark.runtime.configure import session

    spark = session({"spark.master": "local[2]", "spark.sql.session.timeZone": "UTC"}, app_name="parity")
    out = []
    for name in names:
        java, java_root = load_record(name)
        with tempfile.TemporaryDirectory(prefix=f"parity-{name}-") as tmp:
            floe = run_floe(spark, statements_of(name), Path(tmp))
            out.append(compare(name, java, java_root, floe, Path(tmp)))
        log(out[-1].report())
    ran = sum(c.floe_ran for c in out)
    log(f"statements Java ran: {sum(c.java_ran for c in out)}, Floe ran {ran}; "
        f"scenarios matching: {sum(c.matches for c in out)} of {len(out)}")
    return out


def _jsql_command() -> Path:
    setup = Path(__file__).resolve().parents[3] / "shared" / "tools" / "java-iceberg" / "setup.sh"
    proc = subprocess.run(["bash", str(setup)], capture_output=True, text=True, check=True)
    return Path(proc.stdout.strip().splitlines()[-1])


if __name__ == "__main__":  # python tests/spark/_sql_parity.py record|compare [scenario ...]
    if len(sys.argv) < 2 or sys.argv[1] not in ("record", "compare"):
        sys.exit("usage: _sql_parity.py record|compare [scenario ...]")
    chosen = sys.argv[2:] or scenario_names()
    if sys.argv[1] == "record":
        record(_jsql_command(), chosen)
    else:
        compare_all(chosen)
