# Types of floe/serde/_entries_native.c, built at install when a C compiler is present.
from collections.abc import Callable
from typing import Any

class Builder:
    def __init__(
        self,
        layout: tuple[int, ...],
        status_of: tuple[Any, ...],
        content_of: tuple[Any, ...],
        data: Any,
        added: Any,
        formats: dict[str, Any],
        file_format: Callable[[str], Any],
        read_partition: Callable[[Any], Any] | None,
        new_df: Callable[..., Any],
        new_entry: Callable[..., Any],
    ) -> None: ...
    def build(
        self,
        records: list[tuple[Any, ...]],
        spec_id: int,
        inherited_snapshot_id: int | None,
        manifest_sequence_number: int | None,
        next_row_id: list[int | None],
    ) -> list[Any]: ...
