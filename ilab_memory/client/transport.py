"""One HTTP exchange with the memory API over the standard library (``urllib.request``): the
token, a timeout on every call, retries on connection failures for reads only, and the API's
error bodies turned back into the exceptions the facade raises. No Django import."""

from __future__ import annotations

import http.client
import json
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from email.message import Message
from typing import Any

from ..exceptions import Conflict, NoActiveSession, ObservationNotFound, SessionNotFound, ValidationError
from .errors import AccessDenied, ApiError, NotAuthenticated, RateLimited, ServiceUnavailable

NOT_FOUND = {error.code: error for error in (NoActiveSession, ObservationNotFound, SessionNotFound)}

# Only a GET is sent again after a connection failure. A POST or PATCH may have been carried
# out before the connection broke (a save would be stored twice, a revise would add a
# revision), and a DELETE carried out the first time answers 404 the second, reporting a
# failure for what succeeded.
RETRIED_METHODS = frozenset({"GET"})

# What a broken or refused connection raises from urllib (wrapped in URLError or not).
CONNECTION_ERRORS = (urllib.error.URLError, ConnectionError, http.client.HTTPException, TimeoutError, socket.timeout)


class Transport:
    """Sends requests to ``base_url`` (the API's prefix, e.g. ``http://host/api/memory/``)."""

    def __init__(self, base_url: str, token: str, *, timeout: float, retries: int, backoff: float):
        if not isinstance(token, str) or not token:
            raise ValueError("token must be the API token of an account (a non-empty string).")
        if retries < 0:
            raise ValueError("retries must be 0 or more.")
        self.base_url = base_url.rstrip("/") + "/"
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self._headers = {"Authorization": f"Token {token}", "Accept": "application/json"}

    def request(self, method: str, path: str, *, query: list[tuple[str, str]] | None = None,
                body: dict[str, Any] | None = None) -> Any:
        """The answer's JSON (None for an empty answer); raises the error the answer means."""
        url = self.base_url + path
        if query:
            url = _with_query(url, query)
        headers = dict(self._headers)
        data = None
        if body is not None:
            data = encode_body(body)
            headers["Content-Type"] = "application/json"
        attempts = 1 + (self.retries if method in RETRIED_METHODS else 0)
        for attempt in range(attempts):
            request = urllib.request.Request(url, data=data, headers=headers, method=method)
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    status, raw = response.status, response.read()
                return _json(status, raw)
            except urllib.error.HTTPError as answer:  # an answer, not a connection failure
                with answer:
                    raise error_for(answer.code, answer.read(), answer.headers, url=url,
                                    base_url=self.base_url) from None
            except CONNECTION_ERRORS as failure:
                if attempt + 1 < attempts:
                    time.sleep(self.backoff * 2**attempt)
                    continue
                raise ServiceUnavailable(
                    f"{method} {path}: the memory API did not answer ({_reason(failure)})."
                ) from failure
        raise AssertionError("unreachable")


# A longer URL (path and query string) is refused here, naming its longest parameter: servers
# refuse one with a page that names no field, and the smallest common limit is gunicorn's request
# line (4,094 bytes with the method and the protocol). A query of 400 characters fits even in a
# 3-byte script (each character sent as 9 bytes).
MAX_URL_BYTES = 4000
FIELD_OF_PARAMETER = {"q": "query"}


def _with_query(url: str, query: list[tuple[str, str]]) -> str:
    """``url`` with ``query``; a ValidationError when the whole is too long to send."""
    encoded = urllib.parse.urlencode(query)
    size = len(urllib.parse.urlsplit(url).path) + 1 + len(encoded)
    if size > MAX_URL_BYTES:
        name = max(query, key=lambda item: len(urllib.parse.quote_plus(str(item[1]))))[0]
        raise ValidationError(FIELD_OF_PARAMETER.get(name, name),
                              f"makes the request's URL {size} bytes long (encoded); "
                              f"the limit is {MAX_URL_BYTES} bytes.",
                              code="max_length", limit=MAX_URL_BYTES, size=size)
    return f"{url}?{encoded}"


def encode_body(body: dict[str, Any]) -> bytes:
    """``body`` as JSON; a value JSON cannot carry is the facade's ValidationError naming its field."""
    try:
        return json.dumps(body, allow_nan=False).encode("utf-8")
    except (TypeError, ValueError):
        pass
    for field, value in body.items():
        try:
            json.dumps(value, allow_nan=False)
        except ValueError:
            raise ValidationError(field, "numbers must be finite.", code="invalid_number") from None
        except TypeError as error:
            raise ValidationError(field, f"is not JSON ({error}).", code="invalid_type") from None
    raise AssertionError("unreachable")


def error_for(status: int, raw: bytes, headers: Message | Mapping[str, str] | None, *, url: str = "",
              base_url: str = "") -> Exception:
    """The exception an error answer means: the facade's own for bad input and a missing row;
    a 404 that is not the API's JSON says where the API must be (``url`` is what was asked)."""
    try:
        body = json.loads(raw) if raw else {}
    except ValueError:
        body = {}
    if not isinstance(body, dict):
        body = {}
    code = str(body.get("code") or "http_error")
    detail = str(body.get("detail") or http.client.responses.get(status, "error"))
    if status == 400:
        errors = body.get("errors") or {"non_field_errors": [detail]}
        field, messages = next(iter(errors.items()))
        message = messages[0] if isinstance(messages, list) and messages else str(messages)
        error = ValidationError(field, str(message), code=code, limit=body.get("limit"), size=body.get("size"))
        error.errors = errors  # every field's messages, when the API named several
        return error
    if status == 404 and code in NOT_FOUND:
        return NOT_FOUND[code](detail)
    if status == 404 and "code" not in body:
        # Not the memory API's 404 (its answers all have a code): the site's, for a base_url
        # that is not where the API is mounted.
        return ApiError(status, code, f"No memory API at {url}. base_url must be the API's mount, where the site "
                                      f"includes ilab_memory.api.urls (http://127.0.0.1:8000/api/memory/ on the "
                                      f"demo site); it is {base_url}.")
    if status == 409 and code == Conflict.code:
        return Conflict(detail)
    if status == 413:
        return ValidationError("body", detail, code=code)
    if status == 401:
        return NotAuthenticated(status, code, detail)
    if status == 403:
        return AccessDenied(status, code, detail)
    if status == 429:
        retry_after = headers.get("Retry-After") if headers is not None else None
        return RateLimited(status, code, detail, float(retry_after) if retry_after else None)
    return ApiError(status, code, detail)


def _json(status: int, raw: bytes) -> Any:
    """A success's JSON body (None when empty); a body that is not JSON came from something
    other than the memory API (a proxy's page, a wrong base URL)."""
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        raise ApiError(status, "not_json", "The answer is not the memory API's JSON; check base_url.") from None


def _reason(failure: Exception) -> str:
    reason = getattr(failure, "reason", None) or failure
    return str(reason) or type(reason).__name__
