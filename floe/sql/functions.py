"""Iceberg's Spark functions in SQL run by Floe: ``<catalog>.system.bucket(16, id)`` and the others of
floe.spark.runtime.iceberg_functions, anywhere an expression goes (SELECT lists, WHERE, GROUP BY, DML conditions).

Spark cannot call a catalog's functions without Iceberg's jar, and what a call computes (and its result
type) depends on its arguments' types, which only Spark's analysis knows. So a statement with calls runs
in two passes over its parsed tree:

1. each call becomes a typed marker, ``hash('__floe_call_<i>', args...)`` (cast to the call's result
   type, or for ``truncate`` an expression of its value's type) and Spark analyses the statement; the
   marker's children in the analysed plan give each argument's type, printed form and constant value;
2. each call becomes the Spark SQL floe.spark.runtime.iceberg_functions binds for those types (wrong types are
   refused there with Java's message), and an unaliased call in the top SELECT list takes Java's result
   column name.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from floe.errors import NotFoundError, UnsupportedError
from floe.sql.spark_engine import spark_engine

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from floe.spark.runtime.iceberg_functions import ArgInfo

__all__ = ["IcebergCall", "bind_functions", "iceberg_calls"]

_MARKER = "__floe_call_"
_EXPR_ID = re.compile(r"#\d+L?")
_FUNCTIONS = ("bucket", "truncate", "years", "months", "days", "hours", "iceberg_version")


@dataclass(frozen=True, slots=True)
class IcebergCall:
    """One ``<catalog>.system.<name>(args)`` in a parsed tree (``catalog`` None: ``system.<name>``)."""

    node: exp.Expression
    catalog: str | None
    name: str
    args: tuple[exp.Expression, ...]


def _call_of(node: exp.Dot, is_catalog: Callable[[str], bool]) -> IcebergCall | None:
    fn = node.expression
    if not isinstance(fn, exp.Anonymous):
        return None
    qualifier = node.this
    catalog: str | None
    if isinstance(qualifier, exp.Dot) and isinstance(qualifier.this, exp.Identifier) \
            and isinstance(qualifier.expression, exp.Identifier):
        catalog, system = qualifier.this.name, qualifier.expression.name
        if not is_catalog(catalog):
            return None
    elif isinstance(qualifier, (exp.Identifier, exp.Column)) and not isinstance(qualifier, exp.Dot):
        catalog, system = None, qualifier.name
    else:
        return None
    if system.lower() != "system":
        return None
    return IcebergCall(node, catalog, str(fn.this).lower(), tuple(fn.expressions))


def iceberg_calls(node: exp.Expression, is_catalog: Callable[[str], bool]) -> list[IcebergCall]:
    """Calls of ``<catalog>.system.*`` functions of the catalogs ``is_catalog`` accepts (and ``system.*``)."""
    out = []
    for dot in node.find_all(exp.Dot):
        call = _call_of(dot, is_catalog)
        if call is not None:
            out.append(call)
    return out


def _check_known(call: IcebergCall, current_catalog: str) -> None:
    if call.name not in _FUNCTIONS:
        where = call.catalog or current_catalog
        raise NotFoundError(f"Cannot resolve function `{where}`.`system`.`{call.name}`: Iceberg's functions are "
                            f"{', '.join(_FUNCTIONS)}")


def _key(call: IcebergCall) -> str:
    return call.node.sql(dialect="spark").lower()


_TYPED_LITERALS = {exp.DataType.Type.DATE: "DATE", exp.DataType.Type.TIMESTAMPTZ: "TIMESTAMP",
                   exp.DataType.Type.TIMESTAMP: "TIMESTAMP", exp.DataType.Type.TIMESTAMPNTZ: "TIMESTAMP_NTZ"}


def _as_written(arg: exp.Expression) -> exp.Expression:
    """Typed literals as written (sqlglot reads ``DATE '2021-01-02'`` and ``1.5BD`` as casts): Spark then
    analyses a literal, which it prints in a result column name as its value, as Java's names show it."""
    value = arg.this if isinstance(arg, (exp.Cast, exp.TryCast)) else None
    if not (isinstance(value, exp.Literal) and value.is_string):
        return arg.copy()
    to = arg.args["to"].this
    if type(arg) is exp.Cast and to in _TYPED_LITERALS:
        return exp.var(f"{_TYPED_LITERALS[to]} {value.sql(dialect='spark')}")
    if to == exp.DataType.Type.DECIMAL and re.fullmatch(r"-?\d+(\.\d*)?", value.name):
        return exp.var(f"{value.name}BD")
    return arg.copy()


def _marker(i: int, call: IcebergCall) -> exp.Expression:
    args = [_as_written(a) for a in call.args]
    hashed = exp.Anonymous(this="hash", expressions=[exp.Literal.string(f"{_MARKER}{i}"), *args])
    if call.name == "truncate" and len(call.args) == 2:
        value = call.args[1].copy()
        return exp.If(this=exp.Is(this=hashed, expression=exp.Null()), true=value, false=value.copy())
    if call.name == "days":
        return exp.Anonymous(this="date_from_unix_date", expressions=[hashed])
    to = "STRING" if call.name == "iceberg_version" else "INT"
    return exp.Cast(this=hashed, to=exp.DataType.build(to))


def _replace(node: exp.Expression, calls: Sequence[IcebergCall],
             make: Callable[[int, IcebergCall], exp.Expression]) -> exp.Expression:
    """A copy of ``node`` with call ``i`` replaced by ``make(i, call)`` (a call's own arguments are kept)."""
    where = {id(c.node): i for i, c in enumerate(calls)}
    copy = node.copy()
    targets = [(n, where[id(o)]) for o, n in zip(node.walk(), copy.walk(), strict=True) if id(o) in where]
    for n, i in targets:
        made = make(i, calls[i])
        if n is copy:
            return made
        n.replace(made)
    return copy


def bind_functions(node: exp.Expression, calls: Sequence[IcebergCall], spark: SparkSession,
                   analyse: Callable[[exp.Expression], DataFrame], current_catalog: str) -> exp.Expression:
    """``node`` with each Iceberg function call replaced by Spark SQL computing it (module docstring).

    ``analyse`` runs Spark's analysis of a tree (the caller's statement, views and all).

    Raises:
        NotFoundError: an unknown function name under ``system``.
        ValidationError: arguments of types the function does not take (Java's message).
    """
    for call in calls:
        _check_known(call, current_catalog)
    for call in calls:
        inner = [c for c in calls if c is not call and any(n is call.node for n in c.node.walk())]
        if inner:
            raise UnsupportedError(f"Iceberg function {_key(inner[0])} inside another Iceberg function is not "
                                   "supported by Floe")
    # equal calls share a marker, so Spark still sees a SELECT item equal to its GROUP BY expression
    keys: dict[str, int] = {}
    number = [keys.setdefault(_key(c), len(keys)) for c in calls]
    probe = analyse(_replace(node, calls, lambda i, c: _marker(number[i], c)))
    infos = _marker_arguments(spark, probe)
    bound = []
    for i, call in enumerate(calls):
        arg_sql = [a.sql(dialect="spark") for a in call.args]
        bound.append(spark_engine().bind_call(spark, call.name, arg_sql, infos.get(number[i], [])))
    top = set()
    if isinstance(node, exp.Select):
        top = {id(e) for e in node.expressions}

    def real(i: int, call: IcebergCall) -> exp.Expression:
        import sqlglot

        tree = sqlglot.parse_one(bound[i].sql, read="spark")
        if id(call.node) in top:
            return exp.Alias(this=tree, alias=exp.to_identifier(bound[i].column_name, quoted=True))
        return exp.Paren(this=tree)

    return _replace(node, calls, real)


def _marker_arguments(spark: SparkSession, df: DataFrame) -> dict[int, list[ArgInfo]]:
    """Per marker number, its arguments as Spark analysed them (walks the analysed plan over the JVM)."""

    jvm: Any = spark._jvm
    if jvm is None:
        raise NotImplementedError("Iceberg functions need a classic Spark session (not Spark Connect)")
    conv = getattr(jvm, "scala.jdk.javaapi.CollectionConverters")  # one round trip (floe.spark.runtime.java_classes)
    subquery = getattr(jvm, "java.lang.Class").forName("org.apache.spark.sql.catalyst.expressions.SubqueryExpression")
    pretty = getattr(getattr(jvm, "org.apache.spark.sql.catalyst.util.package$"), "MODULE$")
    found: dict[int, list[ArgInfo]] = {}
    plans = [df._jdf.queryExecution().analyzed()]
    while plans:
        plan = plans.pop()
        plans.extend(conv.asJava(plan.children()))
        stack = list(conv.asJava(plan.expressions()))
        while stack:
            e = stack.pop()
            if subquery.isInstance(e):
                plans.append(e.plan())
            children = list(conv.asJava(e.children()))
            if e.getClass().getSimpleName() == "Murmur3Hash" and children:
                first = children[0]
                text = str(first.toString())
                if first.foldable() and text.startswith(_MARKER):
                    found[int(text[len(_MARKER):])] = [_arg_info(pretty, c) for c in children[1:]]
                    continue
            stack.extend(children)
    return found


def _arg_info(pretty: Any, e: Any) -> ArgInfo:
    """Spark prints a function's argument in a result column name as its ``toString`` (expression ids
    dropped), or as its SQL when the function's declared type makes Spark cast it."""
    foldable = bool(e.foldable())
    value = None
    if foldable:
        v = e.eval(None)
        value = int(v) if isinstance(v, int) and not isinstance(v, bool) else v
    shown_cast = pretty.toPrettySQL(e, getattr(pretty, "toPrettySQL$default$2")())
    info: ArgInfo = spark_engine().arg_info(
        spark_type=str(e.dataType().simpleString()), shown=_EXPR_ID.sub("", str(e.toString())),
        shown_cast=str(shown_cast), foldable=foldable, value=value,
    )
    return info
