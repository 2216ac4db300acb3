"""The Chroma client (embedded or server) and the store's errors: a server that does not
answer is StoreUnavailable (transient: the same Store works again once it answers), a store built
with another embedding model or schema is StoreMismatch."""
from __future__ import annotations

from contextlib import contextmanager
from urllib.parse import urlparse

from ..config import Settings


class StoreError(RuntimeError):
    pass


class StoreMismatch(StoreError):
    """The store was built with another embedding model or schema."""


class StoreUnavailable(StoreError):
    """The Chroma server cannot be reached (stopped, restarting, unreachable). Transient: the
    same Store works again once the server answers, without restarting anything."""


def is_unreachable(exc: BaseException) -> bool:
    """True for the errors of a Chroma server that does not answer (connection refused or
    reset, timeouts) as chromadb's HTTP client raises them."""
    import httpx

    return isinstance(exc, (httpx.TransportError, ConnectionError, TimeoutError))


@contextmanager
def chroma_errors(location: str):
    """Raise an unreachable Chroma server as StoreUnavailable, with a message saying what to do
    (instead of a bare `ConnectError: [Errno 111] Connection refused`)."""
    try:
        yield
    except StoreError:
        raise
    except Exception as exc:
        if not is_unreachable(exc):
            raise
        raise StoreUnavailable(
            f"the Chroma server at {location} is not answering ({type(exc).__name__}: {exc}); "
            f"start it again and retry, nothing needs restarting here") from exc


def open_chroma_client(settings: Settings):
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    chroma_settings = ChromaSettings(anonymized_telemetry=False)
    if settings.chroma_url:
        url = urlparse(settings.chroma_url)
        if not url.hostname:
            raise StoreError(f"--chroma-url {settings.chroma_url!r} is not http://HOST:PORT")
        try:
            return chromadb.HttpClient(host=url.hostname, port=url.port or 8000,
                                       ssl=url.scheme == "https", settings=chroma_settings)
        except Exception as exc:
            raise StoreUnavailable(f"cannot reach the Chroma server at {settings.chroma_url}: {exc}") from exc
    settings.store_dir.mkdir(parents=True, exist_ok=True)
    return chromadb.PersistentClient(path=str(settings.store_dir), settings=chroma_settings)
