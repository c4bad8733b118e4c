"""FileIO: read, write, list and delete table files on local disk, S3 and HDFS through ``pyarrow.fs``.

One :class:`FileIO` serves every scheme a table uses; file systems are created lazily per scheme (HDFS
connects only when first used). Properties use Iceberg's names (``s3.endpoint``, ``s3.access-key-id``...).

``pyarrow.fs`` is imported on first use, and local files are read (``read_bytes``, ``exists``, ``length``)
with plain Python IO: reading a table's metadata and manifests (``floe history``, ``floe files``) then
never imports pyarrow and numpy, which would cost the command ~0.2 s of start-up.

Exclusive creation (``OutputFile.create(overwrite=False)``) is what makes file-system catalogs safe: two
writers racing on ``v<N>.metadata.json`` must not both win.
- local: content goes to a temporary file in the same directory which is then hard-linked to the final
  name; ``link`` fails if the name exists, atomically, and readers never see a half-written file. Where
  hard links are unavailable the final name is claimed with ``O_CREAT | O_EXCL`` instead.
- S3: ``PutObject`` with ``If-None-Match: *`` through boto3 (pyarrow's S3 client has no conditional
  writes). Without boto3 installed Floe falls back to check-then-write, which is NOT atomic; the loser
  of a race may then overwrite the winner. Install ``floe[s3]`` for catalogs that commit on S3.
- HDFS: pyarrow cannot create exclusively; check-then-write, not atomic.
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from threading import Lock
from typing import IO, TYPE_CHECKING, Any, NamedTuple

from floe.errors import FileAlreadyExistsError, NoSuchFileError, UnsupportedError, ValidationError
from floe.io.locations import LOCAL_SCHEMES, S3_SCHEMES, scheme_of, split_bucket, to_local_path

if TYPE_CHECKING:
    import pyarrow.fs as pafs

__all__ = [
    "S3_ACCESS_KEY_ID",
    "S3_ENDPOINT",
    "S3_PATH_STYLE_ACCESS",
    "S3_REGION",
    "S3_SECRET_ACCESS_KEY",
    "S3_SESSION_TOKEN",
    "FileEntry",
    "FileIO",
    "InputFile",
    "OutputFile",
]

# Iceberg's FileIO property names (S3FileIOProperties / PyIceberg's names).
S3_ENDPOINT = "s3.endpoint"
S3_ACCESS_KEY_ID = "s3.access-key-id"
S3_SECRET_ACCESS_KEY = "s3.secret-access-key"
S3_SESSION_TOKEN = "s3.session-token"
S3_REGION = "s3.region"
S3_PATH_STYLE_ACCESS = "s3.path-style-access"

_DEFAULT_DELETE_WORKERS = 16


class FileEntry(NamedTuple):
    """A file found by :meth:`FileIO.list_prefix`: its location, size in bytes and modification time (epoch ms)."""

    location: str
    size: int
    mtime_ms: int


def _pafs() -> Any:
    """``pyarrow.fs``, imported on first use (see the module docstring)."""
    import pyarrow.fs

    return pyarrow.fs


def _truthy(value: str | None) -> bool:
    return value is not None and value.strip().lower() in ("true", "1", "yes")


@dataclass(frozen=True, slots=True)
class _Resolved:
    fs: pafs.FileSystem
    path: str  # the path pyarrow understands (local path, or bucket/key)
    scheme: str


class FileIO:
    """Access to files in any location a table uses; cheap to create, file systems made on first use."""

    def __init__(self, properties: Mapping[str, str] | None = None) -> None:
        """Create a FileIO.

        Args:
            properties: Iceberg FileIO properties (``s3.endpoint``, ``s3.region``, ...).
        """
        self.properties: dict[str, str] = dict(properties or {})
        self._filesystems: dict[str, pafs.FileSystem] = {}
        self._s3_client: Any = None
        self._lock = Lock()

    @classmethod
    def for_location(cls, location: str, properties: Mapping[str, str] | None = None) -> FileIO:
        """A FileIO able to access ``location`` (its scheme is checked now).

        Raises:
            UnsupportedError: the scheme is not local, S3 or HDFS.
        """
        _check_scheme(location)
        return cls(properties)

    # -- resolution ------------------------------------------------------------------------------
    def resolve(self, location: str) -> tuple[pafs.FileSystem, str]:
        """The pyarrow file system and in-file-system path for a location (for pyarrow readers/writers)."""
        r = self._resolve(location)
        return r.fs, r.path

    def _resolve(self, location: str) -> _Resolved:
        scheme = _check_scheme(location)
        if scheme in LOCAL_SCHEMES:
            return _Resolved(self._fs("file"), os.path.abspath(to_local_path(location)), "file")
        if scheme in S3_SCHEMES:
            _, bucket, key = split_bucket(location)
            return _Resolved(self._fs("s3"), f"{bucket}/{key}", "s3")
        # hdfs / viewfs: the path keeps the authority out; the file system is per namenode
        _, authority, key = split_bucket(location)
        return _Resolved(self._fs(f"{scheme}://{authority}"), "/" + key, "hdfs")

    def _fs(self, key: str) -> pafs.FileSystem:
        with self._lock:
            fs = self._filesystems.get(key)
            if fs is None:
                fs = self._make_fs(key)
                self._filesystems[key] = fs
            return fs

    def _make_fs(self, key: str) -> pafs.FileSystem:
        fs_module = _pafs()
        if key == "file":
            return fs_module.LocalFileSystem()
        if key == "s3":
            return fs_module.S3FileSystem(**_s3_options(self.properties))
        # HDFS needs libhdfs and a JVM classpath; connecting only here keeps other schemes free of it.
        try:
            fs, _ = fs_module.FileSystem.from_uri(key)
        except (OSError, ValueError) as e:
            raise UnsupportedError(f"Cannot connect to {key}: {e}") from e
        return fs

    def _boto_s3(self) -> Any:
        """A boto3 S3 client with the same settings, or None when boto3 is not installed."""
        with self._lock:
            if self._s3_client is None:
                try:
                    import boto3  # optional dependency (floe[s3]); only needed for conditional S3 writes
                    from botocore.config import Config
                except ImportError:
                    return None
                p = self.properties
                style = "path" if _truthy(p.get(S3_PATH_STYLE_ACCESS, "true")) else "virtual"
                self._s3_client = boto3.client(
                    "s3",
                    endpoint_url=p.get(S3_ENDPOINT),
                    aws_access_key_id=p.get(S3_ACCESS_KEY_ID),
                    aws_secret_access_key=p.get(S3_SECRET_ACCESS_KEY),
                    aws_session_token=p.get(S3_SESSION_TOKEN),
                    region_name=p.get(S3_REGION),
                    config=Config(s3={"addressing_style": style}),
                )
            return self._s3_client

    # -- files -----------------------------------------------------------------------------------
    def new_input(self, location: str) -> InputFile:
        """A handle to read ``location`` (nothing is opened yet)."""
        return InputFile(self, location)

    def new_output(self, location: str) -> OutputFile:
        """A handle to create ``location`` (nothing is written yet)."""
        return OutputFile(self, location)

    def exists(self, location: str) -> bool:
        """Whether a file exists at ``location``."""
        local = _local_path(location)
        if local is not None:
            return os.path.isfile(local)
        r = self._resolve(location)
        return bool(r.fs.get_file_info(r.path).type == _pafs().FileType.File)

    def delete(self, location: str, *, missing_ok: bool = True) -> None:
        """Delete one file.

        Raises:
            NoSuchFileError: the file does not exist and ``missing_ok`` is False.
        """
        r = self._resolve(location)
        try:
            r.fs.delete_file(r.path)
        except FileNotFoundError as e:
            if not missing_ok:
                raise NoSuchFileError(f"Cannot delete {location}: file does not exist") from e

    def delete_many(
        self, locations: Iterable[str], *, max_workers: int = _DEFAULT_DELETE_WORKERS
    ) -> dict[str, OSError]:
        """Delete files in parallel; missing files count as deleted.

        Returns:
            The locations that could not be deleted, with their errors (empty when all succeeded).
        """
        failures: dict[str, OSError] = {}

        def one(loc: str) -> None:
            try:
                self.delete(loc)
            except OSError as e:
                failures[loc] = e

        from concurrent.futures import ThreadPoolExecutor  # on use: reading paths need no threads

        with ThreadPoolExecutor(max_workers=max_workers) as pool:
            list(pool.map(one, dict.fromkeys(locations)))
        return failures

    def list_prefix(self, prefix: str) -> Iterator[FileEntry]:
        """Every file under a directory-like prefix, at any depth, spelled with the prefix's scheme.

        A missing prefix lists nothing. Used by orphan-file removal, which compares the locations
        returned here with the ones metadata references.
        """
        r = self._resolve(prefix)
        fs_module = _pafs()
        selector = fs_module.FileSelector(r.path.rstrip("/") or "/", recursive=True, allow_not_found=True)
        base = prefix.rstrip("/")
        root = selector.base_dir
        for info in r.fs.get_file_info(selector):
            if info.type != fs_module.FileType.File:
                continue
            rel = info.path[len(root) :].lstrip("/")
            mtime = info.mtime_ns // 1_000_000 if info.mtime_ns is not None else 0
            yield FileEntry(f"{base}/{rel}", info.size or 0, mtime)

    def rename(self, source: str, target: str) -> None:
        """Rename a local file without overwriting ``target`` (atomic on POSIX file systems).

        Raises:
            FileAlreadyExistsError: ``target`` exists.
            NoSuchFileError: ``source`` does not exist.
            UnsupportedError: the locations are not local (object stores cannot rename atomically).
        """
        if scheme_of(source) not in LOCAL_SCHEMES or scheme_of(target) not in LOCAL_SCHEMES:
            raise UnsupportedError(f"Atomic rename is only supported for local files: {source} -> {target}")
        src, dst = to_local_path(source), to_local_path(target)
        os.makedirs(os.path.dirname(os.path.abspath(dst)), exist_ok=True)
        try:
            os.link(src, dst)
        except FileExistsError as e:
            raise FileAlreadyExistsError(f"Cannot rename {source} to {target}: target exists") from e
        except FileNotFoundError as e:
            raise NoSuchFileError(f"Cannot rename {source}: file does not exist") from e
        os.unlink(src)

    def mkdirs(self, location: str) -> None:
        """Create a directory and its parents (a no-op on object stores, which have no directories)."""
        r = self._resolve(location)
        if r.scheme == "s3":
            return
        r.fs.create_dir(r.path, recursive=True)


class InputFile:
    """A readable file; every method names the location when the file is missing."""

    def __init__(self, io_: FileIO, location: str) -> None:
        self.io = io_
        self.location = location

    def exists(self) -> bool:
        return self.io.exists(self.location)

    def length(self) -> int:
        """Size in bytes.

        Raises:
            NoSuchFileError: the file does not exist.
        """
        local = _local_path(self.location)
        if local is not None:
            if not os.path.isfile(local):
                raise NoSuchFileError(f"File does not exist: {self.location}")
            return os.path.getsize(local)
        r = self.io._resolve(self.location)
        info = r.fs.get_file_info(r.path)
        if info.type != _pafs().FileType.File or info.size is None:
            raise NoSuchFileError(f"File does not exist: {self.location}")
        return int(info.size)

    def open(self) -> IO[bytes]:
        """A seekable binary stream (pyarrow ``NativeFile``: read/seek/tell; usable by pyarrow and fastavro).

        Raises:
            NoSuchFileError: the file does not exist.
        """
        r = self.io._resolve(self.location)
        try:
            return r.fs.open_input_file(r.path)  # type: ignore[no-any-return]
        except FileNotFoundError as e:
            raise NoSuchFileError(f"File does not exist: {self.location}") from e
        except OSError as e:
            if r.fs.get_file_info(r.path).type == _pafs().FileType.NotFound:
                raise NoSuchFileError(f"File does not exist: {self.location}") from e
            raise

    def read_bytes(self) -> bytes:
        """The whole file.

        Raises:
            NoSuchFileError: the file does not exist.
        """
        local = _local_path(self.location)
        if local is not None:
            try:
                with open(local, "rb") as f:
                    return f.read()
            except FileNotFoundError as e:
                raise NoSuchFileError(f"File does not exist: {self.location}") from e
        with self.open() as f:
            return bytes(f.read())

    def __repr__(self) -> str:
        return f"InputFile({self.location!r})"


class OutputFile:
    """A file to be written; see the module docstring for the exclusive-create guarantees per scheme."""

    def __init__(self, io_: FileIO, location: str) -> None:
        self.io = io_
        self.location = location

    def exists(self) -> bool:
        return self.io.exists(self.location)

    def to_input_file(self) -> InputFile:
        return InputFile(self.io, self.location)

    def create(self, *, overwrite: bool = False) -> IO[bytes]:
        """Open a binary stream that writes the file; parent directories are created as needed.

        With ``overwrite=False`` the file must not exist. The check happens now and, atomically, again
        when the stream is closed (local and S3 with boto3): a writer that loses a race gets
        :class:`FileAlreadyExistsError` from ``close()`` and its content is discarded.

        Raises:
            FileAlreadyExistsError: ``overwrite`` is False and the file exists.
        """
        r = self.io._resolve(self.location)
        if not overwrite and r.fs.get_file_info(r.path).type != _pafs().FileType.NotFound:
            raise FileAlreadyExistsError(f"Cannot create {self.location}: file already exists")
        if r.scheme == "file":
            return _local_stream(r.path, self.location, overwrite=overwrite)
        if r.scheme == "s3" and not overwrite:
            client = self.io._boto_s3()
            if client is not None:
                bucket, _, key = r.path.partition("/")
                return _ConditionalS3Stream(client, bucket, key, self.location)
        if r.scheme != "s3":
            r.fs.create_dir(os.path.dirname(r.path), recursive=True)
        return r.fs.open_output_stream(r.path)  # type: ignore[no-any-return]

    def write_bytes(self, data: bytes, *, overwrite: bool = False) -> None:
        """Write the whole file at once (see :meth:`create` for ``overwrite``)."""
        with self.create(overwrite=overwrite) as f:
            f.write(data)

    def __repr__(self) -> str:
        return f"OutputFile({self.location!r})"


def _local_path(location: str) -> str | None:
    """The absolute path of a local location (as :meth:`FileIO.resolve` spells it), else None."""
    if _check_scheme(location) not in LOCAL_SCHEMES:
        return None
    return os.path.abspath(to_local_path(location))


def _check_scheme(location: str) -> str:
    if not location:
        raise ValidationError("Empty file location")
    scheme = scheme_of(location)
    if scheme in LOCAL_SCHEMES or scheme in S3_SCHEMES or scheme in ("hdfs", "viewfs"):
        return scheme
    raise UnsupportedError(f"Unsupported file system scheme {scheme!r} in location {location!r}")


def _s3_options(p: Mapping[str, str]) -> dict[str, Any]:
    opts: dict[str, Any] = {}
    if endpoint := p.get(S3_ENDPOINT):
        # pyarrow takes host[:port] and the scheme separately; with an endpoint override it uses
        # path-style addressing unless virtual addressing is forced.
        scheme, sep, host = endpoint.partition("://")
        opts["endpoint_override"] = host if sep else endpoint
        if sep:
            opts["scheme"] = scheme
    if key_id := p.get(S3_ACCESS_KEY_ID):
        opts["access_key"] = key_id
        opts["secret_key"] = p.get(S3_SECRET_ACCESS_KEY)
        if token := p.get(S3_SESSION_TOKEN):
            opts["session_token"] = token
    if region := p.get(S3_REGION):
        opts["region"] = region
    if S3_PATH_STYLE_ACCESS in p and not _truthy(p[S3_PATH_STYLE_ACCESS]):
        opts["force_virtual_addressing"] = True
    return opts


class _LocalExclusiveStream(io.BufferedWriter):
    """Writes a temporary sibling file, then publishes it under the final name with ``link`` (no overwrite)."""

    def __init__(self, tmp_path: str, final_path: str, location: str) -> None:
        super().__init__(io.FileIO(tmp_path, "wb"))
        self._tmp, self._final, self._location = tmp_path, final_path, location

    def close(self) -> None:
        if self.closed:
            return
        try:
            self.flush()
            os.fsync(self.fileno())
        finally:
            super().close()
        try:
            _publish_exclusive(self._tmp, self._final, self._location)
        finally:
            if os.path.exists(self._tmp):
                os.unlink(self._tmp)

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is not None:
            # the writer failed: never publish a partial file
            super().close()
            if os.path.exists(self._tmp):
                os.unlink(self._tmp)
            return
        self.close()


def _publish_exclusive(tmp: str, final: str, location: str) -> None:
    try:
        os.link(tmp, final)
        return
    except FileExistsError as e:
        raise FileAlreadyExistsError(f"Cannot create {location}: file already exists") from e
    except OSError:
        pass  # hard links unsupported here (e.g. some FUSE/SMB mounts): claim the name with O_EXCL
    try:
        fd = os.open(final, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError as e:
        raise FileAlreadyExistsError(f"Cannot create {location}: file already exists") from e
    with os.fdopen(fd, "wb") as out, open(tmp, "rb") as src:
        while chunk := src.read(1 << 20):
            out.write(chunk)


def _local_stream(path: str, location: str, *, overwrite: bool) -> IO[bytes]:
    directory = os.path.dirname(path)
    os.makedirs(directory, exist_ok=True)
    if overwrite:
        return open(path, "wb")
    import tempfile  # on use: only writers need it

    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=directory)
    os.close(fd)
    return _LocalExclusiveStream(tmp, path, location)


class _ConditionalS3Stream(io.BytesIO):
    """Buffers the object and uploads it on close with ``If-None-Match: *`` (create only if absent)."""

    def __init__(self, client: Any, bucket: str, key: str, location: str) -> None:
        super().__init__()
        self._client, self._bucket, self._key, self._location = client, bucket, key, location
        self._failed = False

    def close(self) -> None:
        if self.closed:
            return
        data = self.getvalue()
        super().close()
        if self._failed:
            return
        from botocore.exceptions import BotoCoreError, ClientError  # present: this stream needs boto3

        try:
            self._client.put_object(Bucket=self._bucket, Key=self._key, Body=data, IfNoneMatch="*")
        except ClientError as e:
            # 412: the object exists; 409: a concurrent conditional write to the same key is in flight
            if e.response.get("Error", {}).get("Code") in (
                "PreconditionFailed",
                "ConditionalRequestConflict",
            ):
                raise FileAlreadyExistsError(f"Cannot create {self._location}: file already exists") from e
            raise OSError(f"Cannot write {self._location}: {e}") from e
        except BotoCoreError as e:
            raise OSError(f"Cannot write {self._location}: {e}") from e

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        self._failed = exc_type is not None
        self.close()
