"""JSON bodies, bounded: never larger than the host allows, never deep enough to crash the decoder."""

from __future__ import annotations

import json

from django.conf import settings
from django.utils.translation import gettext_lazy as _
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

from .errors import PayloadTooLarge


def max_body_bytes() -> int | None:
    """The host's ``DATA_UPLOAD_MAX_MEMORY_SIZE`` (None: no limit), read at call time."""
    return settings.DATA_UPLOAD_MAX_MEMORY_SIZE


class BoundedJSONParser(JSONParser):
    """Reads at most the allowed number of bytes (413 beyond) and turns decoder crashes into 400."""

    def parse(self, stream, media_type=None, parser_context=None):
        limit = max_body_bytes()
        if stream is None:
            return {}
        # Content-Length may be absent (chunked bodies), so the limit is enforced on what is read.
        raw = stream.read() if limit is None else stream.read(limit + 1)
        if limit is not None and len(raw) > limit:
            raise PayloadTooLarge(limit)
        encoding = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)
        try:
            text = raw.decode(encoding)
            return json.loads(text, parse_constant=_reject_constant)
        except (ValueError, UnicodeDecodeError) as exc:
            raise ParseError(_("The body is not valid JSON: {error}").format(error=exc)) from None
        except RecursionError:
            # A body of a few hundred thousand nested brackets exhausts the decoder's stack.
            raise ParseError(_("The body is nested too deeply.")) from None


def _reject_constant(name: str):
    raise ValueError(f"{name} is not valid JSON")
