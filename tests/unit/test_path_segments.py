"""floe.catalog.path_segments: which names may become one path segment, and the inside-the-warehouse check."""

from __future__ import annotations

import pytest

from floe.catalog.path_segments import (
    check_identifier_segments,
    check_namespace_segments,
    check_path_segment,
    require_inside,
)
from floe.errors import ValidationError


@pytest.mark.parametrize(
    "name", ["t", "a.b", "...", "a..b", ".hidden", "x..", "with space", "ünïcode", "a:b"]
)
def test_check_path_segment_safe_name_passes(name: str) -> None:
    check_path_segment(name, kind="table", catalog="demo")


@pytest.mark.parametrize(
    ("name", "rule"),
    [
        ("", "a name cannot be empty"),
        (".", "a name cannot be '.' or '..'"),
        ("..", "a name cannot be '.' or '..'"),
        ("../..", "a name cannot contain '/' or '\\'"),
        ("/abs", "a name cannot contain '/' or '\\'"),
        ("a\\b", "a name cannot contain '/' or '\\'"),
        ("a\x00b", "a name cannot contain control characters"),
        ("a\tb", "a name cannot contain control characters"),
        ("a\x7fb", "a name cannot contain control characters"),
        ("a\x85b", "a name cannot contain control characters"),
    ],
)
def test_check_path_segment_unsafe_name_raises_naming_name_and_catalog(name: str, rule: str) -> None:
    with pytest.raises(ValidationError) as info:
        check_path_segment(name, kind="table", catalog="demo")
    assert str(info.value) == f"Invalid table name {name!r} in catalog 'demo': {rule}"


def test_check_path_segment_message_is_one_line_for_newline_name() -> None:
    with pytest.raises(ValidationError) as info:
        check_path_segment("a\nb", kind="table", catalog="demo")
    assert "\n" not in str(info.value)


def test_check_namespace_segments_names_the_bad_level() -> None:
    with pytest.raises(ValidationError, match=r"^Invalid namespace name '\.\.' in catalog 'demo'"):
        check_namespace_segments(("ok", ".."), catalog="demo")


def test_check_identifier_segments_names_the_table() -> None:
    with pytest.raises(ValidationError, match=r"^Invalid table name 'a/b' in catalog 'demo'"):
        check_identifier_segments(("db", "a/b"), catalog="demo")


def test_check_identifier_segments_names_a_namespace_level() -> None:
    with pytest.raises(ValidationError, match=r"^Invalid namespace name '\.' in catalog 'demo'"):
        check_identifier_segments((".", "t"), catalog="demo")


@pytest.mark.parametrize(
    ("path", "parent"),
    [
        ("/wh/db/t", "/wh"),
        ("/wh/db/t", "/wh/"),
        ("/wh/./db/t", "/wh"),
        ("/wh/db/../t", "/wh"),
        ("bucket/wh/db/t", "bucket/wh"),
        ("/x", "/"),
    ],
)
def test_require_inside_path_below_parent_passes(path: str, parent: str) -> None:
    require_inside(path, parent, what="drop table db.t")


@pytest.mark.parametrize(
    ("path", "parent"),
    [
        ("/wh", "/wh"),
        ("/wh/", "/wh"),
        ("/wh/db/..", "/wh"),
        ("/wh/db/../..", "/wh"),
        ("/wh/a/../../other", "/wh"),
        ("/wh2/t", "/wh"),
        ("/other", "/wh"),
        ("/", "/"),
        ("bucket/wh/../x", "bucket/wh"),
    ],
)
def test_require_inside_path_outside_or_equal_raises(path: str, parent: str) -> None:
    with pytest.raises(
        ValidationError, match=r"^Refusing to drop table db\.t: .* is not inside the warehouse "
    ):
        require_inside(path, parent, what="drop table db.t")
