"""Schema evolution (spec "Schema Evolution"; Java ``SchemaUpdate``): add, drop, rename, promote, move.

Changes are recorded by name and replayed on the current schema at commit time, so a retry after a
concurrent schema change either applies cleanly or fails naming the column. New columns get ids above
the table's ``last-column-id``; existing ids never change, which is what keeps old data files readable.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from floe.errors import ValidationError
from floe.expressions.literals import convert_default
from floe.spec.schema import Schema
from floe.spec.table_metadata import TableMetadata
from floe.spec.types import IcebergType, ListType, MapType, NestedField, StructType, is_promotion_allowed
from floe.spec.updates import LAST_ADDED, AddSchema, SetCurrentSchema, TableUpdate
from floe.table.pending import PendingUpdate

if TYPE_CHECKING:
    from typing_extensions import Self  # typing.Self from Python 3.11; only read by type checkers here

    from floe.table.table import Table
    from floe.table.transaction import Transaction

__all__ = ["UpdateSchema"]

_ROOT = -1  # parent id of top-level columns


@dataclass
class _Tree:
    """A mutable view of a schema: fields by id and each struct's ordered child ids."""

    fields: dict[int, NestedField]
    children: dict[int, list[int]]  # struct owner id (or _ROOT) -> child field ids
    names: Callable[[int], str]
    last_id: int
    identifier_ids: list[int] = field(default_factory=list)

    @staticmethod
    def of(schema: Schema, last_column_id: int) -> _Tree:
        fields: dict[int, NestedField] = {}
        children: dict[int, list[int]] = {}

        def visit(owner: int, t: IcebergType) -> None:
            if isinstance(t, StructType):
                children[owner] = [f.field_id for f in t.fields]
                for f in t.fields:
                    fields[f.field_id] = f
                    visit(f.field_id, f.field_type)
            elif isinstance(t, ListType):
                visit(t.element_id, t.element_type)
            elif isinstance(t, MapType):
                visit(t.key_id, t.key_type)
                visit(t.value_id, t.value_type)

        visit(_ROOT, schema.as_struct())
        return _Tree(
            fields,
            children,
            lambda i: schema.find_column_name(i) or str(i),
            last_column_id,
            list(schema.identifier_field_ids),
        )

    def next_id(self) -> int:
        self.last_id += 1
        return self.last_id

    def build_type(self, owner: int, t: IcebergType) -> IcebergType:
        if isinstance(t, StructType):
            return StructType(*(self.build_field(i) for i in self.children.get(owner, [])))
        if isinstance(t, ListType):
            return ListType(t.element_id, self.build_type(t.element_id, t.element_type), t.element_required)
        if isinstance(t, MapType):
            return MapType(
                t.key_id,
                self.build_type(t.key_id, t.key_type),
                t.value_id,
                self.build_type(t.value_id, t.value_type),
                t.value_required,
            )
        return t

    def build_field(self, field_id: int) -> NestedField:
        f = self.fields[field_id]
        return NestedField(
            f.field_id,
            f.name,
            self.build_type(f.field_id, f.field_type),
            f.required,
            f.doc,
            f.initial_default,
            f.write_default,
        )

    def build(self) -> Schema:
        return Schema(
            *(self.build_field(i) for i in self.children[_ROOT]), identifier_field_ids=self.identifier_ids
        )


class UpdateSchema(PendingUpdate):
    """Record schema changes, then ``commit()`` (or use as a context manager)."""

    def __init__(
        self,
        table: Table,
        transaction: Transaction | None = None,
        *,
        allow_incompatible_changes: bool = False,
        case_sensitive: bool = True,
    ) -> None:
        super().__init__(table, transaction)
        self._allow_incompatible = allow_incompatible_changes
        self._case_sensitive = case_sensitive
        self._ops: list[Callable[[_Tree, Schema, TableMetadata], None]] = []

    # -- name resolution ---------------------------------------------------------------------------
    def _find(self, schema: Schema, name: str | tuple[str, ...]) -> NestedField:
        dotted = name if isinstance(name, str) else ".".join(name)
        f = schema.find_field_or_none(dotted, self._case_sensitive)
        if f is None:
            raise ValidationError(f"Cannot find column {dotted!r} in table {self._table.name()}")
        return f

    def _struct_owner(self, tree: _Tree, schema: Schema, parent: str) -> int:
        """The id owning the struct that ``parent`` names (a struct column, a list's element, a map's value)."""
        f = self._find(schema, parent)
        t = f.field_type
        owner = f.field_id
        if isinstance(t, ListType):
            owner, t = t.element_id, t.element_type
        elif isinstance(t, MapType):
            owner, t = t.value_id, t.value_type
        if not isinstance(t, StructType):
            raise ValidationError(
                f"Cannot add a field to {parent!r} of table {self._table.name()}: it is {t}, not a struct"
            )
        return owner

    def _sibling_named(self, tree: _Tree, owner: int, name: str) -> int | None:
        for i in tree.children.get(owner, []):
            n = tree.fields[i].name
            if n == name or (not self._case_sensitive and n.lower() == name.lower()):
                return i
        return None

    def _owner_of(self, tree: _Tree, field_id: int) -> int:
        for owner, ids in tree.children.items():
            if field_id in ids:
                return owner
        raise ValidationError(f"Field id {field_id} is not a struct field in table {self._table.name()}")

    # -- changes -----------------------------------------------------------------------------------
    def add_column(
        self,
        path: str | tuple[str, ...],
        field_type: IcebergType,
        doc: str | None = None,
        required: bool = False,
        *,
        default: object = None,
    ) -> Self:
        """Add a column; ``path`` may be ``("parent", "child")`` or ``"parent.child"`` for nested fields.

        ``default`` (format v3) becomes the column's ``initial-default`` (the value rows written before it
        read) and ``write-default``. A required column needs a default or ``allow_incompatible_changes``
        (existing rows have no value for it).

        Raises (at commit):
            ValidationError: the default does not fit the type, or the table is older than format v3.
        """
        parts = tuple(path.split(".")) if isinstance(path, str) else tuple(path)
        if not parts or not all(parts):
            raise ValidationError(f"Invalid column path {path!r}")
        name = ".".join(parts)
        value = convert_default(default, field_type, column=name)
        if required and value is None and not self._allow_incompatible:
            raise ValidationError(
                f"Incompatible change: cannot add required column {name!r} (existing rows have no value)"
            )

        def op(tree: _Tree, schema: Schema, base: TableMetadata) -> None:
            owner = _ROOT if len(parts) == 1 else self._struct_owner(tree, schema, ".".join(parts[:-1]))
            if self._sibling_named(tree, owner, parts[-1]) is not None:
                raise ValidationError(
                    f"Cannot add column {name!r}: it already exists in table {self._table.name()}"
                )
            _needs_v3(base, name, self._table.name(), value)
            fid = tree.next_id()
            typ = _fresh_ids(field_type, tree.next_id)
            tree.fields[fid] = NestedField(fid, parts[-1], typ, required, doc, value, value)
            tree.children.setdefault(owner, []).append(fid)
            _register(tree, fid, typ)

        self._ops.append(op)
        return self

    def drop_column(self, name: str) -> Self:
        """Drop a column (not an identifier field, not a source of the current partition spec or sort order)."""

        def op(tree: _Tree, schema: Schema, base: TableMetadata) -> None:
            f = self._find(schema, name)
            if f.field_id in tree.identifier_ids:
                raise ValidationError(f"Cannot drop identifier field {name!r} of table {self._table.name()}")
            # a void field (v1's removed partition field) partitions nothing: its source may go (as in Java)
            if any(f.field_id in pf.source_ids for pf in base.spec().fields if not pf.transform.is_void):
                raise ValidationError(
                    f"Cannot drop column {name!r}: the current partition spec of {self._table.name()} uses it"
                )
            if any(f.field_id in sf.source_ids for sf in base.sort_order().fields):
                raise ValidationError(
                    f"Cannot drop column {name!r}: the sort order of {self._table.name()} uses it"
                )
            tree.children[self._owner_of(tree, f.field_id)].remove(f.field_id)

        self._ops.append(op)
        return self

    def delete_column(self, name: str) -> Self:
        """PyIceberg's name for :meth:`drop_column`."""
        return self.drop_column(name)

    def rename_column(self, name: str, new_name: str) -> Self:
        """Rename a column (data files keep working: columns are matched by id)."""

        def op(tree: _Tree, schema: Schema, base: TableMetadata) -> None:
            f = self._find(schema, name)
            owner = self._owner_of(tree, f.field_id)
            clash = self._sibling_named(tree, owner, new_name)
            if clash is not None and clash != f.field_id:
                raise ValidationError(
                    f"Cannot rename {name!r} to {new_name!r}: a column with that name exists"
                )
            cur = tree.fields[f.field_id]
            tree.fields[f.field_id] = NestedField(
                cur.field_id,
                new_name,
                cur.field_type,
                cur.required,
                cur.doc,
                cur.initial_default,
                cur.write_default,
            )

        self._ops.append(op)
        return self

    def update_column(
        self,
        name: str,
        field_type: IcebergType | None = None,
        required: bool | None = None,
        doc: str | None = None,
    ) -> Self:
        """Promote a column's type (int->long, float->double, wider decimal), change nullability or doc.

        Raises (at commit):
            ValidationError: the promotion is not allowed, or optional->required without
                ``allow_incompatible_changes``.
        """

        def op(tree: _Tree, schema: Schema, base: TableMetadata) -> None:
            f = self._find(schema, name)
            cur = tree.fields[f.field_id]
            new_type = cur.field_type
            if field_type is not None and field_type != cur.field_type:
                if not cur.field_type.is_primitive or not is_promotion_allowed(
                    cur.field_type, field_type, base.format_version
                ):
                    raise ValidationError(
                        f"Cannot change column {name!r} from {cur.field_type} to {field_type}"
                    )
                new_type = field_type
            new_required = cur.required if required is None else required
            if new_required and not cur.required and not self._allow_incompatible:
                raise ValidationError(f"Incompatible change: cannot make optional column {name!r} required")
            tree.fields[f.field_id] = NestedField(
                cur.field_id,
                cur.name,
                new_type,
                new_required,
                cur.doc if doc is None else doc,
                cur.initial_default,
                cur.write_default,
            )

        self._ops.append(op)
        return self

    def update_column_default(self, name: str, default: object) -> Self:
        """Set (or with ``None`` drop) a column's ``write-default`` (format v3): the value writers use when
        they omit the column. The ``initial-default`` never changes: rows already written keep reading it.

        Raises (at commit):
            ValidationError: the value does not fit the column's type, or the table is older than v3.
        """

        def op(tree: _Tree, schema: Schema, base: TableMetadata) -> None:
            f = self._find(schema, name)
            value = convert_default(default, f.field_type, column=name)
            _needs_v3(base, name, self._table.name(), value)
            tree.fields[f.field_id] = replace(tree.fields[f.field_id], write_default=value)

        self._ops.append(op)
        return self

    def make_column_optional(self, name: str) -> Self:
        """Allow nulls in a column."""
        return self.update_column(name, required=False)

    def update_column_doc(self, name: str, doc: str) -> Self:
        return self.update_column(name, doc=doc)

    def _move(self, name: str, place: Callable[[list[int], int], None]) -> Self:
        def op(tree: _Tree, schema: Schema, base: TableMetadata) -> None:
            f = self._find(schema, name)
            ids = tree.children[self._owner_of(tree, f.field_id)]
            ids.remove(f.field_id)
            place(ids, f.field_id)

        self._ops.append(op)
        return self

    def move_first(self, name: str) -> Self:
        """Move a column to the start of its struct."""
        return self._move(name, lambda ids, fid: ids.insert(0, fid))

    def _relative(self, name: str, other: str, offset: int) -> Self:
        holder: dict[str, int] = {}

        def resolve(tree: _Tree, schema: Schema, base: TableMetadata) -> None:
            f, o = self._find(schema, name), self._find(schema, other)
            if f.field_id == o.field_id:
                raise ValidationError(f"Cannot move {name!r} relative to itself")
            if self._owner_of(tree, f.field_id) != self._owner_of(tree, o.field_id):
                raise ValidationError(
                    f"Cannot move {name!r} next to {other!r}: they are in different structs"
                )
            holder["other"] = o.field_id

        self._ops.append(resolve)
        return self._move(name, lambda ids, fid: ids.insert(ids.index(holder["other"]) + offset, fid))

    def move_before(self, name: str, other: str) -> Self:
        """Move a column just before another column of the same struct."""
        return self._relative(name, other, 0)

    def move_after(self, name: str, other: str) -> Self:
        """Move a column just after another column of the same struct."""
        return self._relative(name, other, 1)

    def set_identifier_fields(self, *names: str) -> Self:
        """Set the row identifier columns (required primitive columns, not inside lists or maps)."""

        def op(tree: _Tree, schema: Schema, base: TableMetadata) -> None:
            tree.identifier_ids = [self._find(schema, n).field_id for n in names]

        self._ops.append(op)
        return self

    # -- PendingUpdate -----------------------------------------------------------------------------
    def apply(self, base: TableMetadata | None = None) -> Schema:
        """The schema these changes produce on ``base`` (default: the table's current metadata)."""
        md = base or self._table.metadata
        schema = md.schema()
        tree = _Tree.of(schema, md.last_column_id)
        for op in self._ops:
            op(tree, schema, md)
        new = tree.build()
        for fid in new.identifier_field_ids:
            f = new.find_field(fid)
            if not f.required or not f.field_type.is_primitive:
                raise ValidationError(
                    f"Identifier field {new.find_column_name(fid)!r} of table {self._table.name()} must be a required primitive"
                )
        return new

    def _apply(self, base: TableMetadata) -> list[TableUpdate]:
        new = self.apply(base)
        current = base.schema()
        if new.same_structure(current):
            return []
        existing = next((s for s in base.schemas if s.same_structure(new)), None)
        if existing is not None:
            return [SetCurrentSchema(existing.schema_id)]
        last = max(base.last_column_id, new.highest_field_id)
        return [AddSchema(new, last), SetCurrentSchema(LAST_ADDED)]


def _needs_v3(base: TableMetadata, column: str, table: str, value: object) -> None:
    if value is not None and base.format_version < 3:
        raise ValidationError(
            f"Cannot set DEFAULT {value!r} on column {column!r} of table {table}: column defaults need format "
            f"version 3 (table is v{base.format_version}; set 'format-version'='3')"
        )


def _fresh_ids(t: IcebergType, next_id: Callable[[], int]) -> IcebergType:
    """Nested types of an added column get ids from the table's counter (callers' ids are placeholders)."""
    if isinstance(t, StructType):
        ids = [next_id() for _ in t.fields]
        return StructType(
            *(
                NestedField(i, f.name, _fresh_ids(f.field_type, next_id), f.required, f.doc)
                for i, f in zip(ids, t.fields)
            )
        )
    if isinstance(t, ListType):
        eid = next_id()
        return ListType(eid, _fresh_ids(t.element_type, next_id), t.element_required)
    if isinstance(t, MapType):
        kid, vid = next_id(), next_id()
        return MapType(
            kid, _fresh_ids(t.key_type, next_id), vid, _fresh_ids(t.value_type, next_id), t.value_required
        )
    return t


def _register(tree: _Tree, owner: int, t: IcebergType) -> None:
    """Make the structs inside a newly added type reachable for later changes in the same update."""
    if isinstance(t, StructType):
        tree.children[owner] = [f.field_id for f in t.fields]
        for f in t.fields:
            tree.fields[f.field_id] = f
            _register(tree, f.field_id, f.field_type)
    elif isinstance(t, ListType):
        _register(tree, t.element_id, t.element_type)
    elif isinstance(t, MapType):
        _register(tree, t.key_id, t.key_type)
        _register(tree, t.value_id, t.value_type)
