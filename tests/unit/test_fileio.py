"""FileIO over local disk and S3 (moto), plus location helpers."""

from __future__ import annotations

import multiprocessing
import os
import threading
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from floe.errors import FileAlreadyExistsError, NoSuchFileError, UnsupportedError
from floe.io import locations
from floe.io.fileio import FileIO


# -- locations ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("location", "expected"),
    [
        ("/tmp/a b/x", "/tmp/a b/x"),
        ("file:/tmp/x", "/tmp/x"),
        ("file:///tmp/x", "/tmp/x"),
        ("file://localhost/tmp/x", "/tmp/x"),
    ],
)
def test_to_local_path_file_uri_forms_strip_scheme(location: str, expected: str) -> None:
    assert locations.to_local_path(location) == expected


def test_normalize_spark_file_path_encoded_uri_matches_manifest_style() -> None:
    spark_uri = "file:/tmp/a%20b/k%3D1/x%25y.parquet"
    assert locations.normalize_spark_file_path(spark_uri) == "/tmp/a b/k=1/x%y.parquet"
    assert (
        locations.normalize_spark_file_path(spark_uri, like="file:/tmp/a b")
        == "file:/tmp/a b/k=1/x%y.parquet"
    )
    assert (
        locations.normalize_spark_file_path(spark_uri, like="file:///w") == "file:///tmp/a b/k=1/x%y.parquet"
    )
    assert locations.normalize_spark_file_path("s3a://b/a%20b/x", like="s3://b/t") == "s3://b/a b/x"


def test_parent_join_basename_keep_scheme() -> None:
    assert locations.parent("s3://bucket/a/b/x.json") == "s3://bucket/a/b"
    assert locations.parent("file:/tmp/t/metadata/v1.json") == "file:/tmp/t/metadata"
    assert locations.parent("/tmp/t/x") == "/tmp/t"
    assert locations.join("s3://b/t/", "/metadata", "v1.json") == "s3://b/t/metadata/v1.json"
    assert locations.basename("s3://b/t/v1.json") == "v1.json"
    assert locations.comparison_key("file:/tmp/x/../y") == locations.comparison_key("/tmp/y")
    assert locations.comparison_key("s3a://b/k") == "s3://b/k"


# -- local -----------------------------------------------------------------------------------------
def test_local_write_read_roundtrip_all_accessors(tmp_path: Path) -> None:
    io = FileIO.for_location(str(tmp_path))
    loc = f"file:{tmp_path}/sub/dir/data.bin"
    io.new_output(loc).write_bytes(b"hello world")
    inp = io.new_input(loc)
    assert inp.exists()
    assert inp.length() == 11
    assert inp.read_bytes() == b"hello world"
    with inp.open() as f:
        f.seek(6)
        assert f.read() == b"world"


def test_local_missing_file_raises_no_such_file_naming_it(tmp_path: Path) -> None:
    io = FileIO()
    loc = str(tmp_path / "nope.json")
    for call in (io.new_input(loc).read_bytes, io.new_input(loc).length, io.new_input(loc).open):
        with pytest.raises(NoSuchFileError, match="nope.json"):
            call()
    with pytest.raises(NoSuchFileError, match="nope.json"):
        io.delete(loc, missing_ok=False)


def test_local_plain_io_reads_agree_with_pyarrow_file_system(tmp_path: Path) -> None:
    import pyarrow.fs as pafs

    (tmp_path / "d").mkdir()
    (tmp_path / "f.bin").write_bytes(b"abc")
    io, arrow = FileIO(), pafs.LocalFileSystem()
    for name in ("f.bin", "d", "missing"):
        path = str(tmp_path / name)
        info = arrow.get_file_info(path)
        for loc in (path, f"file:{path}", f"file://{path}"):
            inp = io.new_input(loc)
            assert inp.exists() == io.exists(loc) == (info.type == pafs.FileType.File), loc
            if info.type == pafs.FileType.File:
                assert (inp.length(), inp.read_bytes()) == (info.size, arrow.open_input_file(path).read())
            else:
                with pytest.raises((NoSuchFileError, OSError)):
                    inp.read_bytes()
                with pytest.raises(NoSuchFileError, match=name):
                    inp.length()


def test_local_reads_do_not_import_pyarrow(tmp_path: Path) -> None:
    import subprocess
    import sys

    (tmp_path / "f.bin").write_bytes(b"abc")
    code = (
        "import sys\n"
        "from floe.io.fileio import FileIO\n"
        f"inp = FileIO().new_input({str(tmp_path / 'f.bin')!r})\n"
        "got = (inp.exists(), inp.length(), inp.read_bytes())\n"
        "print(got, 'pyarrow' in sys.modules)\n"
        "inp.open().close()\n"  # streams are pyarrow's: now it is loaded
        "print('pyarrow' in sys.modules)\n"
    )
    repo = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(repo)}
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["(True, 3, b'abc') False", "True"]


def test_local_create_existing_without_overwrite_raises(tmp_path: Path) -> None:
    io = FileIO()
    loc = str(tmp_path / "v1.metadata.json")
    io.new_output(loc).write_bytes(b"first")
    with pytest.raises(FileAlreadyExistsError, match="v1.metadata.json"):
        io.new_output(loc).write_bytes(b"second")
    io.new_output(loc).write_bytes(b"third", overwrite=True)
    assert io.new_input(loc).read_bytes() == b"third"


def test_local_exclusive_create_loser_at_close_keeps_winner(tmp_path: Path) -> None:
    io = FileIO()
    loc = str(tmp_path / "v2.metadata.json")
    a = io.new_output(loc).create()
    b = io.new_output(loc).create()
    a.write(b"A" * 1000)
    b.write(b"B" * 1000)
    a.close()
    with pytest.raises(FileAlreadyExistsError):
        b.close()
    assert io.new_input(loc).read_bytes() == b"A" * 1000
    assert sorted(os.listdir(tmp_path)) == ["v2.metadata.json"]  # no temporary files left behind


def test_local_exclusive_create_failed_writer_publishes_nothing(tmp_path: Path) -> None:
    io = FileIO()
    loc = str(tmp_path / "v3.metadata.json")
    with pytest.raises(RuntimeError), io.new_output(loc).create() as f:
        f.write(b"partial")
        raise RuntimeError("writer crashed")
    assert not io.exists(loc)
    assert os.listdir(tmp_path) == []


def test_local_exclusive_create_thread_race_exactly_one_wins(tmp_path: Path) -> None:
    io = FileIO()
    loc = str(tmp_path / "v7.metadata.json")
    barrier = threading.Barrier(16)
    wins: list[int] = []
    losses: list[int] = []

    def attempt(i: int) -> None:
        barrier.wait()
        try:
            io.new_output(loc).write_bytes(f"writer-{i}".encode() * 100)
            wins.append(i)
        except FileAlreadyExistsError:
            losses.append(i)

    threads = [threading.Thread(target=attempt, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(wins) == 1
    assert len(losses) == 15
    assert io.new_input(loc).read_bytes() == f"writer-{wins[0]}".encode() * 100


def _process_attempt(
    loc: str, i: int, barrier: multiprocessing.synchronize.Barrier, out: multiprocessing.Queue
) -> None:  # type: ignore[type-arg]
    barrier.wait()
    try:
        FileIO().new_output(loc).write_bytes(f"proc-{i}".encode())
        out.put(("win", i))
    except FileAlreadyExistsError:
        out.put(("lose", i))


def test_local_exclusive_create_process_race_exactly_one_wins(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("fork")
    loc = str(tmp_path / "v9.metadata.json")
    barrier = ctx.Barrier(6)
    out = ctx.Queue()
    procs = [ctx.Process(target=_process_attempt, args=(loc, i, barrier, out)) for i in range(6)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=30)
    results = [out.get(timeout=5) for _ in procs]
    winners = [i for kind, i in results if kind == "win"]
    assert len(winners) == 1
    assert Path(loc).read_bytes() == f"proc-{winners[0]}".encode()


def test_local_list_prefix_then_delete_many_removes_all(tmp_path: Path) -> None:
    io = FileIO()
    base = f"file:{tmp_path}/table"
    names = ["data/a.parquet", "data/p=1/b.parquet", "metadata/v1.metadata.json"]
    for n in names:
        io.new_output(f"{base}/{n}").write_bytes(b"x" * 5)
    listed = sorted(io.list_prefix(base))
    assert [e.location for e in listed] == sorted(f"{base}/{n}" for n in names)
    assert all(e.size == 5 and e.mtime_ms > 0 for e in listed)
    assert list(io.list_prefix(f"{base}/missing")) == []
    failures = io.delete_many([e.location for e in listed] + [f"{base}/never-existed"])
    assert failures == {}
    assert list(io.list_prefix(base)) == []


def test_local_rename_no_overwrite(tmp_path: Path) -> None:
    io = FileIO()
    src, dst = str(tmp_path / "tmp.json"), str(tmp_path / "v1.json")
    io.new_output(src).write_bytes(b"1")
    io.new_output(dst).write_bytes(b"existing")
    with pytest.raises(FileAlreadyExistsError):
        io.rename(src, dst)
    io.delete(dst)
    io.rename(src, dst)
    assert io.new_input(dst).read_bytes() == b"1"
    assert not io.exists(src)
    with pytest.raises(NoSuchFileError):
        io.rename(src, str(tmp_path / "v2.json"))
    with pytest.raises(UnsupportedError):
        io.rename("s3://b/x", "s3://b/y")


def test_unknown_scheme_raises_unsupported() -> None:
    with pytest.raises(UnsupportedError, match="gopher"):
        FileIO.for_location("gopher://host/x")


def test_input_open_is_readable_by_pyarrow_parquet(tmp_path: Path) -> None:
    io = FileIO()
    loc = str(tmp_path / "t.parquet")
    fs, path = io.resolve(loc)
    pq.write_table(pa.table({"a": [1, 2, 3]}), path, filesystem=fs)
    with io.new_input(loc).open() as f:
        assert pq.read_table(f).column("a").to_pylist() == [1, 2, 3]


# -- S3 (moto server) ------------------------------------------------------------------------------
def test_s3_write_read_list_delete(s3_endpoint, s3_warehouse: str) -> None:  # type: ignore[no-untyped-def]
    io = FileIO.for_location(s3_warehouse, s3_endpoint.properties)
    locs = [f"{s3_warehouse}/data/{i}.bin" for i in range(3)]
    for i, loc in enumerate(locs):
        io.new_output(loc).write_bytes(bytes([i]) * (i + 1))
    assert io.new_input(locs[2]).read_bytes() == b"\x02\x02\x02"
    assert io.new_input(locs[1]).length() == 2
    with io.new_input(locs[2]).open() as f:
        f.seek(1)
        assert f.read() == b"\x02\x02"
    listed = sorted(io.list_prefix(s3_warehouse))
    assert [(e.location, e.size) for e in listed] == [(loc, i + 1) for i, loc in enumerate(locs)]
    assert io.delete_many(locs[:2]) == {}
    assert [e.location for e in io.list_prefix(s3_warehouse)] == [locs[2]]
    with pytest.raises(NoSuchFileError, match="0.bin"):
        io.new_input(locs[0]).read_bytes()


def test_s3_exclusive_create_second_writer_fails(s3_endpoint, s3_warehouse: str) -> None:  # type: ignore[no-untyped-def]
    io = FileIO(s3_endpoint.properties)
    loc = f"{s3_warehouse}/metadata/v1.metadata.json"
    first = io.new_output(loc).create()
    second = io.new_output(loc).create()  # both pass the early check: the race is decided at close
    first.write(b"winner")
    second.write(b"loser")
    first.close()
    with pytest.raises(FileAlreadyExistsError, match="v1.metadata.json"):
        second.close()
    assert io.new_input(loc).read_bytes() == b"winner"
    with pytest.raises(FileAlreadyExistsError):
        io.new_output(loc).write_bytes(b"again")


def test_s3a_alias_reaches_same_object(s3_endpoint, s3_warehouse: str) -> None:  # type: ignore[no-untyped-def]
    io = FileIO(s3_endpoint.properties)
    loc = f"{s3_warehouse}/x.bin"
    io.new_output(loc).write_bytes(b"abc")
    assert io.new_input("s3a" + loc[2:]).read_bytes() == b"abc"
