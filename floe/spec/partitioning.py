"""Partition specs (spec "Partitioning", Appendix C "Partition Specs"): frozen values plus a builder.

Partition field ids start at 1000 (``PARTITION_FIELD_ID_START``); a new field takes the table's last
assigned partition id + 1. Default field names follow Iceberg Java (``id_bucket``, ``ts_day`` ...).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from floe.errors import ValidationError
from floe.spec.schema import Schema
from floe.spec.transforms import (
    BucketTransform,
    DayTransform,
    HourTransform,
    IdentityTransform,
    MonthTransform,
    Transform,
    TruncateTransform,
    UnknownTransform,
    VoidTransform,
    YearTransform,
)
from floe.spec.types import (
    IcebergType,
    ListType,
    MapType,
    NestedField,
    PrimitiveType,
    StructType,
    UnknownType,
)

__all__ = [
    "INITIAL_SPEC_ID",
    "PARTITION_FIELD_ID_START",
    "UNPARTITIONED_SPEC",
    "PartitionField",
    "PartitionSpec",
    "PartitionSpecBuilder",
    "default_partition_name",
    "url_encode",
]

PARTITION_FIELD_ID_START = 1000
INITIAL_SPEC_ID = 0


def url_encode(text: str) -> str:
    """Java's ``URLEncoder.encode(text, UTF_8)``: keep ``[A-Za-z0-9.*_-]``, space -> ``+``, else ``%XX``."""
    out: list[str] = []
    for byte in text.encode("utf-8"):
        ch = chr(byte)
        if ch.isascii() and (ch.isalnum() or ch in ".-*_"):
            out.append(ch)
        elif ch == " ":
            out.append("+")
        else:
            out.append(f"%{byte:02X}")
    return "".join(out)


@dataclass(frozen=True, slots=True)
class PartitionField:
    """One partition field: source column(s), partition field id, transform and name.

    ``source_ids`` holds every source of a v3 multi-argument transform; for ordinary transforms it is
    ``(source_id,)`` and ``source_id`` is always its first element.
    """

    source_id: int
    field_id: int
    transform: Transform
    name: str
    source_ids: tuple[int, ...] = field(default=())

    def __post_init__(self) -> None:
        if not self.source_ids:
            object.__setattr__(self, "source_ids", (self.source_id,))
        elif self.source_ids[0] != self.source_id:
            raise ValidationError(
                f"Partition field {self.name!r}: source_id {self.source_id} "
                f"is not the first of {self.source_ids}"
            )

    def __str__(self) -> str:
        return f"{self.field_id}: {self.name}: {self.transform}({self.source_id})"


@dataclass(frozen=True, slots=True)
class PartitionSpec:
    """A partition spec: an id and an ordered tuple of partition fields."""

    spec_id: int
    fields: tuple[PartitionField, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "fields", tuple(self.fields))

    @property
    def is_unpartitioned(self) -> bool:
        """No fields, or only void fields (Iceberg Java's ``isUnpartitioned``)."""
        return all(f.transform.is_void for f in self.fields)

    @property
    def is_partitioned(self) -> bool:
        return not self.is_unpartitioned

    @property
    def last_assigned_field_id(self) -> int:
        """The highest partition field id, or 999 when there are no fields."""
        return max((f.field_id for f in self.fields), default=PARTITION_FIELD_ID_START - 1)

    @property
    def source_ids(self) -> set[int]:
        return {sid for f in self.fields for sid in f.source_ids}

    def fields_by_source_id(self, source_id: int) -> list[PartitionField]:
        """Every field whose sources include ``source_id``, in spec order."""
        return [f for f in self.fields if source_id in f.source_ids]

    def field_by_name(self, name: str) -> PartitionField | None:
        return next((f for f in self.fields if f.name == name), None)

    def field_by_id(self, field_id: int) -> PartitionField | None:
        return next((f for f in self.fields if f.field_id == field_id), None)

    def compatible_with(self, other: PartitionSpec) -> bool:
        """Equivalent per the spec: same fields in order with equal sources, transforms and names.

        Field ids are ignored, as in Iceberg Java's ``compatibleWith``.
        """
        if self is other:
            return True
        if len(self.fields) != len(other.fields):
            return False
        return all(
            a.source_ids == b.source_ids and str(a.transform) == str(b.transform) and a.name == b.name
            for a, b in zip(self.fields, other.fields, strict=True)
        )

    def bind(self, schema: Schema) -> PartitionSpec:
        """Check every field against ``schema``; returns ``self``.

        Raises:
            ValidationError: a source column is missing, not primitive, inside a list or map, or of a type
                the transform cannot apply to (the message names the column and spec).
        """
        for f in self.fields:
            for sid in f.source_ids:
                _check_source(schema, sid, f.transform, f"partition field {f.name!r} of spec {self.spec_id}")
        return self

    def partition_type(self, schema: Schema, *, history: Sequence[Schema] = ()) -> StructType:
        """The partition tuple's struct: one optional field per partition field (id = partition field id).

        A non-void field whose source column is not in ``schema`` takes its source type from the first
        schema of ``history`` holding that column: files written under an old spec keep their partition
        values after the column is dropped (the next spec makes the field void). A void field whose
        source column was dropped gets type ``unknown``.

        Args:
            schema: the schema the spec is bound to (normally the table's current schema).
            history: older schemas, newest first (see ``TableMetadata.partition_type``).

        Raises:
            ValidationError: a non-void field's source column is in neither ``schema`` nor ``history``.
        """
        out: list[NestedField] = []
        for f in self.fields:
            source = schema.find_field_or_none(f.source_id)
            is_void = f.transform.is_void or isinstance(f.transform, UnknownTransform)
            if source is None and not is_void:
                source = next(
                    (s for old in history if (s := old.find_field_or_none(f.source_id)) is not None), None
                )
            if source is None:
                if not is_void:
                    raise ValidationError(
                        f"Cannot find source column id {f.source_id} for partition field {f.name!r} "
                        f"of spec {self.spec_id} in schema {schema.schema_id}"
                        + (f" or any of {len(history)} older schemas" if history else "")
                    )
                result: IcebergType = (
                    UnknownType() if f.transform.is_void else f.transform.result_type(UnknownType())
                )
            else:
                result = f.transform.result_type(source.field_type)
            out.append(NestedField(f.field_id, f.name, result, required=False))
        return StructType(*out)

    def partition_path(self, values: Sequence[Any], schema: Schema) -> str:
        """The Hive-style path ``name=value/...`` Iceberg Java writes (values via ``to_human_string``).

        Args:
            values: the partition tuple, one value per field, in Floe's value representation.
            schema: the table schema the spec is bound to.
        """
        if len(values) != len(self.fields):
            raise ValidationError(
                f"Partition tuple has {len(values)} values but spec {self.spec_id} "
                f"has {len(self.fields)} fields"
            )
        ptype = self.partition_type(schema)
        parts = []
        for f, pf, value in zip(self.fields, ptype.fields, values, strict=True):
            human = f.transform.to_human_string(pf.field_type, value)
            parts.append(f"{url_encode(f.name)}={url_encode(human)}")
        return "/".join(parts)

    def __str__(self) -> str:
        if not self.fields:
            return "[]"
        return "[\n" + "\n".join(f"  {f}" for f in self.fields) + "\n]"


UNPARTITIONED_SPEC = PartitionSpec(INITIAL_SPEC_ID, ())


def _check_source(schema: Schema, source_id: int, transform: Transform, what: str) -> IcebergType:
    src = schema.find_field_or_none(source_id)
    if src is None:
        raise ValidationError(
            f"Cannot find source column id {source_id} for {what} in schema {schema.schema_id}"
        )
    name = schema.find_column_name(source_id)
    for ancestor in schema.accessor_path(source_id)[:-1]:
        if isinstance(schema.find_type(ancestor), (ListType, MapType)):
            raise ValidationError(f"Cannot partition by {name!r} ({what}): it is inside a list or map")
    if not isinstance(src.field_type, PrimitiveType) and not transform.is_void:
        raise ValidationError(
            f"Cannot partition by {name!r} ({what}): type {src.field_type} is not primitive"
        )
    if not transform.can_transform(src.field_type):
        raise ValidationError(
            f"Cannot partition by {transform} of column {name!r} of type {src.field_type} ({what})"
        )
    return src.field_type


class PartitionSpecBuilder:
    """Builds a validated ``PartitionSpec`` against a schema, assigning partition field ids.

    Example: ``PartitionSpecBuilder(schema).day("ts").bucket("id", 16).build()``.
    """

    def __init__(
        self,
        schema: Schema,
        *,
        spec_id: int = INITIAL_SPEC_ID,
        last_partition_id: int = PARTITION_FIELD_ID_START - 1,
        case_sensitive: bool = True,
    ) -> None:
        self._schema = schema
        self._spec_id = spec_id
        self._last_id = last_partition_id
        self._case_sensitive = case_sensitive
        self._fields: list[PartitionField] = []
        self._names: set[str] = set()
        self._dedup: dict[tuple[int, str], PartitionField] = {}

    @property
    def last_assigned_field_id(self) -> int:
        return self._last_id

    def _source(self, column: str | int) -> tuple[int, str]:
        f = self._schema.find_field(column, self._case_sensitive)
        name = self._schema.find_column_name(f.field_id) or f.name
        return f.field_id, name

    def add_field(
        self,
        column: str | int,
        transform: Transform,
        name: str | None = None,
        *,
        field_id: int | None = None,
    ) -> PartitionSpecBuilder:
        """Add ``transform(column)``; ``name`` defaults to Java's default and ``field_id`` to the next id.

        Raises:
            ValidationError: unknown column, inapplicable transform, duplicate or clashing name,
                or a redundant field (e.g. ``day(ts)`` next to ``hour(ts)``).
        """
        source_id, source_name = self._source(column)
        _check_source(self._schema, source_id, transform, f"partition {transform}({source_name})")
        pname = name if name is not None else default_partition_name(source_name, transform)
        self._check_name(pname, source_id, transform)
        key = (source_id, transform.dedup_name)
        if not transform.is_void and key in self._dedup:
            raise ValidationError(
                f"Cannot add redundant partition {transform}({source_name}) named {pname!r}: "
                f"conflicts with {self._dedup[key].transform}({source_name}) named {self._dedup[key].name!r}"
            )
        if field_id is None:
            self._last_id += 1
            field_id = self._last_id
        else:
            self._last_id = max(self._last_id, field_id)
        pf = PartitionField(source_id, field_id, transform, pname)
        self._fields.append(pf)
        self._names.add(pname)
        if not transform.is_void:
            self._dedup[key] = pf
        return self

    def _check_name(self, name: str, source_id: int, transform: Transform) -> None:
        if not name:
            raise ValidationError("Cannot use an empty partition field name")
        if name in self._names:
            raise ValidationError(f"Cannot use partition name more than once: {name!r}")
        clash = self._schema.find_field_or_none(name, self._case_sensitive)
        if clash is not None:
            is_own_identity = (
                isinstance(transform, (IdentityTransform, VoidTransform)) and clash.field_id == source_id
            )
            if not is_own_identity:
                raise ValidationError(
                    f"Cannot create partition {name!r} from {transform}: the name is a schema column "
                    "(only an identity partition of that column may use it)"
                )

    def identity(self, column: str | int, name: str | None = None) -> PartitionSpecBuilder:
        return self.add_field(column, IdentityTransform(), name)

    def bucket(self, column: str | int, num_buckets: int, name: str | None = None) -> PartitionSpecBuilder:
        return self.add_field(column, BucketTransform(num_buckets), name)

    def truncate(self, column: str | int, width: int, name: str | None = None) -> PartitionSpecBuilder:
        return self.add_field(column, TruncateTransform(width), name)

    def year(self, column: str | int, name: str | None = None) -> PartitionSpecBuilder:
        return self.add_field(column, YearTransform(), name)

    def month(self, column: str | int, name: str | None = None) -> PartitionSpecBuilder:
        return self.add_field(column, MonthTransform(), name)

    def day(self, column: str | int, name: str | None = None) -> PartitionSpecBuilder:
        return self.add_field(column, DayTransform(), name)

    def hour(self, column: str | int, name: str | None = None) -> PartitionSpecBuilder:
        return self.add_field(column, HourTransform(), name)

    def void(self, column: str | int, name: str | None = None) -> PartitionSpecBuilder:
        return self.add_field(column, VoidTransform(), name)

    def build(self) -> PartitionSpec:
        return PartitionSpec(self._spec_id, tuple(self._fields))


def default_partition_name(source_name: str, transform: Transform, *, for_evolution: bool = False) -> str:
    """Iceberg Java's default partition field name for ``transform(source_name)``.

    The spec builder (``CREATE TABLE ... PARTITIONED BY``) gives ``id_bucket``/``name_trunc``; partition
    evolution (``ALTER TABLE ... ADD PARTITION FIELD``) adds the parameter: ``id_bucket_16``/``name_trunc_4``.
    """
    if isinstance(transform, IdentityTransform):
        return source_name
    if isinstance(transform, BucketTransform):
        return f"{source_name}_bucket_{transform.num_buckets}" if for_evolution else f"{source_name}_bucket"
    if isinstance(transform, TruncateTransform):
        return f"{source_name}_trunc_{transform.width}" if for_evolution else f"{source_name}_trunc"
    if isinstance(transform, VoidTransform):
        return f"{source_name}_null"
    if isinstance(transform, (YearTransform, MonthTransform, DayTransform, HourTransform)):
        return f"{source_name}_{transform}"
    return f"{source_name}_{transform}".replace("[", "_").replace("]", "")
