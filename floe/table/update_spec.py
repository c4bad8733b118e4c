"""Partition evolution (spec "Partition Evolution"; Java ``BaseUpdatePartitionSpec``).

Old data keeps the spec it was written with; the new default spec applies to new files. Partition field
ids are never reused for a different (source, transform): v2 drops removed fields, v1 keeps them as
``void`` so positions stay stable (the spec requires it for v1 readers).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from floe.errors import ValidationError
from floe.spec.partitioning import PartitionField, PartitionSpec, default_partition_name
from floe.spec.table_metadata import TableMetadata
from floe.spec.transforms import IdentityTransform, Transform, VoidTransform, parse_transform
from floe.spec.updates import LAST_ADDED, AddPartitionSpec, SetDefaultSpec, TableUpdate
from floe.table.pending import PendingUpdate

if TYPE_CHECKING:
    from typing_extensions import Self  # typing.Self from Python 3.11; only read by type checkers here

    from floe.table.table import Table
    from floe.table.transaction import Transaction

__all__ = ["UpdateSpec"]


class UpdateSpec(PendingUpdate):
    """Record partition field changes, then ``commit()`` (or use as a context manager)."""

    def __init__(
        self, table: Table, transaction: Transaction | None = None, *, case_sensitive: bool = True
    ) -> None:
        super().__init__(table, transaction)
        self._case_sensitive = case_sensitive
        self._ops: list[Callable[[list[PartitionField], TableMetadata, list[int]], None]] = []

    def _find(self, fields: list[PartitionField], name: str) -> int:
        for i, f in enumerate(fields):
            if f.name == name or (not self._case_sensitive and f.name.lower() == name.lower()):
                return i
        raise ValidationError(f"Cannot find partition field {name!r} in table {self._table.name()}")

    def add_field(
        self, source: str, transform: Transform | str | None = None, name: str | None = None
    ) -> Self:
        """Partition new data by ``transform(source)`` (identity by default); ``name`` defaults to Java's."""
        t = parse_transform(transform) if isinstance(transform, str) else (transform or IdentityTransform())

        def op(fields: list[PartitionField], base: TableMetadata, counter: list[int]) -> None:
            schema = base.schema()
            src = schema.find_field(source, self._case_sensitive)
            if not t.can_transform(src.field_type):
                raise ValidationError(f"Cannot partition {source!r} ({src.field_type}) by {t}")
            for f in fields:
                if f.source_id == src.field_id and str(f.transform) == str(t):
                    raise ValidationError(
                        f"Cannot add duplicate partition field {f.name!r}: {t}({source}) exists"
                    )
            pname = name or default_partition_name(
                schema.find_column_name(src.field_id) or src.name, t, for_evolution=True
            )
            if any(f.name == pname for f in fields if not (base.format_version == 1 and f.transform.is_void)):
                raise ValidationError(f"Cannot add partition field {pname!r}: a field with that name exists")
            if pname in schema.column_names and not (isinstance(t, IdentityTransform) and pname == src.name):
                raise ValidationError(
                    f"Cannot add partition field {pname!r}: it conflicts with a column name"
                )
            known = {
                (pf.source_id, str(pf.transform)): pf.field_id
                for s in base.partition_specs
                for pf in s.fields
            }
            fid = known.get((src.field_id, str(t)))
            if fid is None:
                counter[0] += 1
                fid = counter[0]
            fields.append(PartitionField(src.field_id, fid, t, pname))

        self._ops.append(op)
        return self

    def add_identity(self, source: str) -> Self:
        """Partition new data by the value of ``source``."""
        return self.add_field(source, IdentityTransform())

    def remove_field(self, name: str) -> Self:
        """Stop partitioning new data by a field (v1: it becomes ``void``)."""

        def op(fields: list[PartitionField], base: TableMetadata, counter: list[int]) -> None:
            i = self._find(fields, name)
            if base.format_version == 1:
                f = fields[i]
                fields[i] = PartitionField(f.source_id, f.field_id, VoidTransform(), f.name)
            else:
                del fields[i]

        self._ops.append(op)
        return self

    def rename_field(self, name: str, new_name: str) -> Self:
        """Rename a partition field."""

        def op(fields: list[PartitionField], base: TableMetadata, counter: list[int]) -> None:
            i = self._find(fields, name)
            if any(f.name == new_name for f in fields):
                raise ValidationError(
                    f"Cannot rename partition field {name!r} to {new_name!r}: the name exists"
                )
            f = fields[i]
            fields[i] = PartitionField(f.source_id, f.field_id, f.transform, new_name, f.source_ids)

        self._ops.append(op)
        return self

    def apply(self, base: TableMetadata | None = None) -> PartitionSpec:
        """The spec these changes produce (its id is assigned when committed)."""
        md = base or self._table.metadata
        fields = list(md.spec().fields)
        counter = [md.last_partition_id]
        for op in self._ops:
            op(fields, md, counter)
        spec = PartitionSpec(max(md.specs_by_id()) + 1, tuple(fields))
        spec.bind(md.schema())
        return spec

    def _apply(self, base: TableMetadata) -> list[TableUpdate]:
        spec = self.apply(base)
        shape = _shape(spec)
        if shape == _shape(base.spec()):
            return []
        for existing in base.partition_specs:
            if _shape(existing) == shape:
                return [SetDefaultSpec(existing.spec_id)]
        return [AddPartitionSpec(spec), SetDefaultSpec(LAST_ADDED)]


def _shape(spec: PartitionSpec) -> tuple[tuple[tuple[int, ...], str, str, int], ...]:
    return tuple((f.source_ids, str(f.transform), f.name, f.field_id) for f in spec.fields)
