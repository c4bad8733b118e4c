# Types of the C decoder (floe/serde/_avro_native.c), built at install when a C compiler is present.
from typing import Any

class Program:
    def __init__(
        self,
        plan: tuple[Any, ...],
        prefilter: tuple[Any, ...] | None = None,
        paths: tuple[int, ...] | None = None,
        probe: tuple[Any, ...] | None = None,
    ) -> None: ...
    def __call__(self, buf: bytes, pos: int) -> tuple[Any, int]: ...
    def records(self, block: bytes, count: int) -> list[Any]: ...
