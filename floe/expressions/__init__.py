"""Row filters: predicates, literals, binding, parsing, and the visitors scan planning uses.

Build filters with the builder functions (``equal_to("id", 5) & greater_than("ts", "2021-12-01T00:00")``)
or parse them (``parse_filter("id = 5 and ts > '2021-12-01'")``), bind them to a schema with ``bind``,
then evaluate (``evaluate``), project onto partitions (``inclusive_projection`` / ``strict_projection``),
prune manifests and files (``ManifestEvaluator``, ``InclusiveMetricsEvaluator``,
``StrictMetricsEvaluator``), compute residuals (``ResidualEvaluator``) or convert for a reader
(``to_arrow_expression``, ``to_spark_sql``).
"""

from floe.expressions.base import AlwaysFalse, AlwaysTrue, And, BooleanExpression, Not, Or, and_, not_, or_
from floe.expressions.binding import bind, bind_reference
from floe.expressions.builders import (
    always_false,
    always_true,
    equal_to,
    greater_than,
    greater_than_or_equal,
    in_,
    is_nan,
    is_null,
    less_than,
    less_than_or_equal,
    not_equal_to,
    not_in,
    not_nan,
    not_null,
    not_starts_with,
    ref,
    starts_with,
)
from floe.expressions.evaluator import Evaluator, evaluate
from floe.expressions.literals import ABOVE_MAX, BELOW_MIN, convert_literal, format_literal
from floe.expressions.manifest_evaluator import ManifestEvaluator
from floe.expressions.metrics_evaluator import InclusiveMetricsEvaluator, StrictMetricsEvaluator
from floe.expressions.parser import parse_filter
from floe.expressions.predicates import (
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNaN,
    IsNull,
    LessThan,
    LessThanOrEqual,
    LiteralPredicate,
    NotEqualTo,
    NotIn,
    NotNaN,
    NotNull,
    NotStartsWith,
    Predicate,
    SetPredicate,
    StartsWith,
    UnaryPredicate,
)
from floe.expressions.projection import Projection, inclusive_projection, project_predicate, strict_projection
from floe.expressions.residual import PartitionEvaluator, ResidualEvaluator
from floe.expressions.terms import BoundReference, Reference
from floe.expressions.to_arrow import to_arrow_expression
from floe.expressions.to_spark_sql import to_spark_sql
from floe.expressions.visitors import BooleanExpressionVisitor, BoundPredicateVisitor, rewrite_not, visit

__all__ = [
    "ABOVE_MAX",
    "BELOW_MIN",
    "AlwaysFalse",
    "AlwaysTrue",
    "And",
    "BooleanExpression",
    "BooleanExpressionVisitor",
    "BoundPredicateVisitor",
    "BoundReference",
    "EqualTo",
    "Evaluator",
    "GreaterThan",
    "GreaterThanOrEqual",
    "In",
    "InclusiveMetricsEvaluator",
    "IsNaN",
    "IsNull",
    "LessThan",
    "LessThanOrEqual",
    "LiteralPredicate",
    "ManifestEvaluator",
    "Not",
    "NotEqualTo",
    "NotIn",
    "NotNaN",
    "NotNull",
    "NotStartsWith",
    "Or",
    "PartitionEvaluator",
    "Predicate",
    "Projection",
    "Reference",
    "ResidualEvaluator",
    "SetPredicate",
    "StartsWith",
    "StrictMetricsEvaluator",
    "UnaryPredicate",
    "always_false",
    "always_true",
    "and_",
    "bind",
    "bind_reference",
    "convert_literal",
    "equal_to",
    "evaluate",
    "format_literal",
    "greater_than",
    "greater_than_or_equal",
    "in_",
    "inclusive_projection",
    "is_nan",
    "is_null",
    "less_than",
    "less_than_or_equal",
    "not_",
    "not_equal_to",
    "not_in",
    "not_nan",
    "not_null",
    "not_starts_with",
    "or_",
    "parse_filter",
    "project_predicate",
    "ref",
    "rewrite_not",
    "starts_with",
    "strict_projection",
    "to_arrow_expression",
    "to_spark_sql",
    "visit",
]
