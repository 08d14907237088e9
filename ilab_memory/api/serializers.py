"""Shapes in and out, as the schema documents them.

Input serializers declare what each endpoint accepts; the views check a body's shape against
them (``body_fields``: an object, known fields, required ones present) and leave the values to
the services, where every rule lives. Output serializers describe the frozen values of
``ilab_memory.types`` for the schema, field for field and in the same order; the views answer
with ``ilab_memory.encoding``, which is checked against them (``tests/test_encoding.py``).
"""

from __future__ import annotations

import dataclasses
import functools
import re
import types
import typing
from collections.abc import Mapping

from django.core.validators import RegexValidator
from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.exceptions import ErrorDetail
from rest_framework.settings import api_settings

from .. import encoding
from .. import types as records
from ..conf import get_config
from ..scopes import ALL, MAX_LISTED_SCOPES, SCOPE_PATTERN
from ..services import document
from ..services.privacy import shown_key
from ..validation import (
    CONTEXT_LIMIT,
    MAX_TTL_SECONDS,
    MEMORY_FIELDS,
    MIN_SCORE_MINIMUM,
    MOMENT,
    NO_DEFAULT,
    SEARCH_LIMIT,
    TIMELINE_AFTER,
    TIMELINE_BEFORE,
    Count,
    MemoryField,
    clean_min_score,
)

# ---------------------------------------------------------------------------------------- inputs


class StrictCharField(serializers.CharField):
    """A string as sent: no number-to-text coercion, no trimming; blank is the service's call."""

    default_error_messages = {"not_a_string": _("Must be a string.")}

    def __init__(self, **kwargs):
        kwargs.setdefault("trim_whitespace", False)
        kwargs.setdefault("allow_blank", True)
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("not_a_string")
        return super().to_internal_value(data)


class StrictInputSerializer(serializers.Serializer):
    """An input shape that refuses fields it does not know (a typo is a 400, never silently dropped).

    The views check a body against it with ``body_fields``; the serializer itself documents the
    body (schema, OPTIONS).
    """

    def to_internal_value(self, data):
        if isinstance(data, Mapping):
            refuse_unknown_fields(data, tuple(self.fields))
        return super().to_internal_value(data)


UNKNOWN_FIELD = _("Is not a field of this endpoint; it accepts: {accepted}.")


def refuse_unknown_fields(data: Mapping, accepted: tuple[str, ...]) -> None:
    """400 naming every key of ``data`` not in ``accepted`` (a key holding a private block as ``?``)."""
    unknown = [key for key in data if key not in accepted]
    if unknown:
        message = UNKNOWN_FIELD.format(accepted=", ".join(accepted) or "no fields")
        raise serializers.ValidationError(
            {shown_key(key): [ErrorDetail(message, code="unknown_field")] for key in unknown}
        )


@functools.cache
def _declared(serializer_class) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The field names ``serializer_class`` accepts, and those of them that are required."""
    fields = serializer_class().fields
    return tuple(fields), tuple(name for name, field in fields.items() if field.required)


def body_fields(serializer_class, data) -> dict:
    """``data`` as a dict, if it is a JSON object that sends only fields of ``serializer_class``
    and every required one; a 400 in DRF's words otherwise. The values are not looked at: the
    services check them, for every face."""
    if not isinstance(data, Mapping):
        if data is None:  # a JSON null: DRF's Serializer.errors words it so (not translated)
            error = ErrorDetail("No data provided", code="null")
        else:
            message = serializers.Serializer.default_error_messages["invalid"]
            error = ErrorDetail(message.format(datatype=type(data).__name__), code="invalid")
        raise serializers.ValidationError({api_settings.NON_FIELD_ERRORS_KEY: [error]})
    accepted, required = _declared(serializer_class)
    refuse_unknown_fields(data, accepted)
    missing = [name for name in required if name not in data]
    if missing:
        message = serializers.Field.default_error_messages["required"]
        raise serializers.ValidationError({name: [ErrorDetail(str(message), code="required")] for name in missing})
    return dict(data)


class ActingUserSerializer(StrictInputSerializer):
    user_id = StrictCharField(
        required=False,
        help_text=_("Act for this user_id (needs the ilab_memory.act_for_any_user permission)."),
    )


# -- scopes: described here, checked by the services (``scopes.clean_*``) ----------------------

SCOPE_SLUG = _(
    "a slug of lowercase letters, digits, '_', '-' and '.', starting with a letter or digit, at most "
    "{n} characters (one of the SCOPES setting when the site lists them)"
)
SCOPE_BOUND = _(
    "An account bound to a scope (the site's ADAPTER decides) acts in that scope when the "
    "request names none; naming any other is a 403 (code scope_bound)."
)
SCOPE_HELP = {
    "write": _('The scope this write lands in: {slug}. "", null or absent: the shared space. {bound}'),
    "target": _(
        "The scope the observation must be in: {slug}; '*' for any of the user's scopes. \"\" or absent "
        "(or null in a body): the shared space. {bound}"
    ),
    "read": _(
        "What to read. A scope ({slug}) reads that scope and the user's shared space; \"\" or absent: the "
        "shared space only; '*': every scope of the user; the parameter repeated (?scope=a&scope=b): "
        "exactly those scopes (at most {most}). {bound}"
    ),
    "export": _(
        "What to export. '*' or absent: every scope of the user; a scope ({slug}): that scope alone, "
        "without the shared space, so the document imports back into it; \"\": the shared space; the "
        "parameter repeated: exactly those scopes (at most {most}). {bound}"
    ),
    "import": _(
        "Put every imported record in this scope: {slug}; \"\" is the shared space. Null or absent: each "
        "record keeps the scope it names (records of an export without scopes: the shared space). {bound}"
    ),
    "forget": _(
        "Erase only this scope's sessions, observations, revisions and index entries: {slug}; \"\" is "
        "the shared space. '*', null or absent: every row of the user. {bound}"
    ),
}


class ScopeField(StrictCharField):
    """A scope as the schema and OPTIONS describe it: the slug's pattern and length limit (read
    from the settings when the field is built, like ``CountField``), what a missing value means.

    Its validators are the description only: a body's values are never validated in the view,
    and the cleaners of ``scopes`` are the one check.
    """

    def __init__(self, use: str, **kwargs):
        self.use = use
        pattern = SCOPE_PATTERN.pattern
        if use in ("target", "forget", "read", "export"):
            pattern = f"{re.escape(ALL)}|{pattern}"
        limit = get_config().MAX_SCOPE_CHARS
        kwargs.setdefault("required", False)
        kwargs.setdefault("allow_null", use not in ("read", "export"))
        kwargs.setdefault("max_length", limit)
        slug = SCOPE_SLUG.format(n=limit)
        help_text = SCOPE_HELP[use].format(slug=slug, bound=SCOPE_BOUND, most=MAX_LISTED_SCOPES)
        kwargs.setdefault("help_text", help_text)
        super().__init__(**kwargs)
        # "" (the shared space) is documented by allow_blank, beside the pattern.
        self.validators.append(RegexValidator(f"^({pattern})$"))


class ScopedWriteSerializer(ActingUserSerializer):
    scope = ScopeField("write")


class SessionStartInputSerializer(ScopedWriteSerializer):
    pass


class SessionSummaryInputSerializer(ScopedWriteSerializer):
    summary = StrictCharField(help_text=_("Narrative summary; stored without closing the session."))


class SessionEndInputSerializer(ScopedWriteSerializer):
    summary = StrictCharField(
        required=False, allow_null=True, help_text=_("Optional summary; a blank one never wipes a stored one.")
    )


# -- time: described here, checked by the services (``validation.clean_moment``, ``clean_ttl``) ----


class MomentField(StrictCharField):
    """A point in time, as the schema describes it: a description only, like ``ScopeField``. The
    services read the value (``clean_moment``), so bad input is refused in the same words on
    every face."""

    def __init__(self, help_text, **kwargs):
        kwargs.setdefault("required", False)
        super().__init__(help_text=f"{help_text} {MOMENT}", **kwargs)


# An offset's "+" written unescaped in a query string arrives as a space ("…T09:30:00 01:00").
UNESCAPED_OFFSET = re.compile(r"^(\S+T[\d:.,]+) (\d{2}(:?\d{2})?)$")


class MomentQueryField(MomentField):
    """A point in time in the query string; a "+" the caller did not escape is put back."""

    def to_internal_value(self, data):
        return UNESCAPED_OFFSET.sub(r"\1+\2", super().to_internal_value(data))


class TtlField(serializers.IntegerField):
    """A time to live in seconds, as the schema describes it; ``clean_ttl`` is the check."""

    def __init__(self, help_text, **kwargs):
        kwargs.setdefault("required", False)
        super().__init__(min_value=1, max_value=MAX_TTL_SECONDS, help_text=help_text, **kwargs)


# -- a memory's fields: derived from their declaration (``validation.MEMORY_FIELDS``) ------------


def memory_input_field(field: MemoryField, *, update: bool) -> serializers.Field:
    """The body field a save (or an update) takes for ``field``: its shape and words, not its rule."""
    options: dict = {"required": field.required and not update}
    if field.nullable(update=update):
        options["allow_null"] = True
    if not update and field.default is not NO_DEFAULT:
        options["default"] = field.default
    words = field.on_update if update else field.on_save
    if field.kind in ("text", "slug"):
        return StrictCharField(**options)
    if field.kind == "object":
        return serializers.JSONField(**options)
    if field.kind == "moment":
        return MomentField(words, **options)
    if field.kind == "seconds":
        return TtlField(words, **options)
    raise TypeError(f"No serializer field for a memory field of kind {field.kind!r}")


def memory_input_serializer(name: str, base: type, *, update: bool, fields=MEMORY_FIELDS, doc=None) -> type:
    """``base`` (user_id, scope) with a field for each declared memory field, in their order."""
    attrs = {field.name: memory_input_field(field, update=update) for field in fields}
    return type(name, (base,), {**attrs, "__module__": __name__, "__doc__": doc})


ObservationCreateInputSerializer = memory_input_serializer(
    "ObservationCreateInputSerializer", ScopedWriteSerializer, update=False)


class ObservationTargetSerializer(ActingUserSerializer):
    scope = ScopeField("target")


ObservationUpdateInputSerializer = memory_input_serializer(
    "ObservationUpdateInputSerializer", ObservationTargetSerializer, update=True,
    doc="Only the fields present in the body are changed (``scope`` says where to find it).")


def scope_list(use: str) -> serializers.ListField:
    """The ``scope`` query parameter of a read: one value, or repeated for a list."""
    child = ScopeField(use)
    return serializers.ListField(
        child=child, required=False, max_length=MAX_LISTED_SCOPES, help_text=child.help_text
    )


class ScopeReadQuerySerializer(serializers.Serializer):
    """The ``scope`` parameter of a read, for the schema (the selectors read it)."""

    scope = scope_list("read")


class ScopeExportQuerySerializer(serializers.Serializer):
    scope = scope_list("export")


class ScopeTargetQuerySerializer(serializers.Serializer):
    """The ``scope`` parameter of a delete (no body), for the schema."""

    scope = ScopeField("target", allow_null=False)


class DeleteQuerySerializer(serializers.Serializer):
    hard = serializers.BooleanField(
        required=False, default=False, help_text=_("true: erase the row, its history and index entry.")
    )


class CountField(serializers.IntegerField):
    """A count query parameter (how many rows): parsed here, bounded by its ``validation.Count``.

    The bounds are shown in the schema and checked by ``Count.clean``, which raises the app's
    ValidationError: a 400 naming the field and the limit, in the words of every face.
    """

    def __init__(self, count: Count, **kwargs):
        self.count = count
        super().__init__(**kwargs)
        # Set after DRF's __init__, which would add validators of its own words: these are for
        # the schema, and Count.clean is the one check.
        self.min_value, self.max_value = count.bounds(get_config())

    def to_internal_value(self, data):
        return self.count.clean(super().to_internal_value(data), get_config())


class MinScoreField(serializers.FloatField):
    """``min_score``: a number at least 0, checked by ``validation.clean_min_score`` (the one
    check, in the words of every face); the minimum is shown in the schema."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.min_value = MIN_SCORE_MINIMUM  # for the schema only, as CountField's bounds

    def to_internal_value(self, data):
        if isinstance(data, str):
            try:
                data = float(data)
            except ValueError:
                pass  # refused below, in clean_min_score's words
        return clean_min_score(data)


class TimelineQuerySerializer(serializers.Serializer):
    before = CountField(TIMELINE_BEFORE, required=False, default=5)
    after = CountField(TIMELINE_AFTER, required=False, default=5)


class PeriodQuerySerializer(serializers.Serializer):
    """A read's period on happened_at; ``visibility.clean_window`` reads it."""

    since = MomentQueryField(_("Only memories that happened at or after this moment."))
    until = MomentQueryField(_("Only memories that happened before this moment (later than since)."))


class ContextQuerySerializer(PeriodQuerySerializer):
    limit = CountField(CONTEXT_LIMIT, required=False)


class SearchQuerySerializer(PeriodQuerySerializer):
    q = StrictCharField(help_text=_(
        "Words and \"quoted phrases\"; memories holding every term rank first. A date phrase (\"last week\", "
        "\"ayer\") favours memories that happened in the period it names, read at now (default: the "
        "request's time) in time_zone; it never filters."
    ))
    type = StrictCharField(required=False)
    limit = CountField(SEARCH_LIMIT, required=False)
    min_score = MinScoreField(required=False, help_text=_(
        "Leave out results whose score is below this number (at least 0). Scores are on one scale for every "
        "query; see docs/search.md for a suggested value when results go into a prompt."
    ))
    time_zone = StrictCharField(required=False, help_text=_(
        "The IANA time zone (Europe/Madrid) date phrases in q are read in; absent: the site's current time "
        "zone (TIME_ZONE, UTC by default)."
    ))
    now = MomentQueryField(_(
        "The moment date phrases in q are read from (\"yesterday\" is the day before it), e.g. when a "
        "conversation of the past is replayed; absent: the time of the request."
    ))


class ForgetInputSerializer(ActingUserSerializer):
    confirm = StrictCharField(help_text=_("Must equal the user_id being erased."))
    scope = ScopeField("forget")


@functools.cache
def _checker(serializer_class) -> serializers.Serializer:
    return serializer_class()


def query_values(serializer_class, params) -> dict:
    """``params`` checked as ``serializer_class(data=params).is_valid()`` checks them (the same
    values, defaults and 400s), by one unbound instance per class: validation keeps no state on
    it, and building a serializer per request cost 0.05–0.12 ms (its fields are deep-copied)."""
    return _checker(serializer_class).run_validation(params)


# --------------------------------------------------------------------------------------- outputs


class ScoreSerializer(serializers.Serializer):
    kind = serializers.SerializerMethodField()
    value = serializers.FloatField()
    breakdown = serializers.DictField(child=serializers.JSONField())

    @extend_schema_field(serializers.ChoiceField(choices=sorted(encoding.SCORE_KINDS.values())))
    def get_kind(self, score) -> str:
        return encoding.score_kind(score)


@functools.cache
def record_serializer(cls: type, name: str | None = None) -> type[serializers.Serializer]:
    """The serializer describing the values of ``cls`` (a dataclass of ``types``) for the schema,
    field for field and in the same order, from the annotations and by the rules ``encoding``
    describes them with: a field added to a record is in the API's schema without a line here.
    ``name`` (default: the record's with ``Serializer``) names the schema's component."""
    hints = typing.get_type_hints(cls)
    attrs: dict = {field.name: _output_field(hints[field.name], field) for field in dataclasses.fields(cls)}
    return type(name or f"{cls.__name__}Serializer", (serializers.Serializer,), {**attrs, "__module__": __name__})


def _output_field(annotation, field: dataclasses.Field) -> serializers.Field:
    options: dict = {}
    text = encoding.description(field)
    if text is not None:
        options["help_text"] = text
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        members = [member for member in typing.get_args(annotation) if member is not type(None)]
        options["allow_null"] = len(members) < len(typing.get_args(annotation))
        if all(member in encoding.SCORE_KINDS for member in members):
            return ScoreSerializer(**options)
        (annotation,) = members
    name = field.name
    origin = typing.get_origin(annotation)
    if origin is list:
        (item,) = typing.get_args(annotation)
        return record_serializer(item)(many=True, **options)
    if origin is dict:
        _, item = typing.get_args(annotation)
        child = serializers.JSONField() if item is typing.Any else serializers.IntegerField(min_value=0)
        return serializers.DictField(child=child, **options)
    if isinstance(annotation, type) and dataclasses.is_dataclass(annotation):
        return record_serializer(annotation)(**options)
    if annotation is bool:
        return serializers.BooleanField(**options)
    if annotation is float:
        return serializers.FloatField(**options)
    if annotation is int:
        return serializers.IntegerField(min_value=1 if name in encoding.AT_LEAST_ONE else 0, **options)
    if name in encoding.CHOICES:
        return serializers.ChoiceField(choices=encoding.CHOICES[name], **options)
    if name in encoding.UUID_FIELDS:
        return serializers.UUIDField(**options)
    if name.endswith("_at"):
        return serializers.DateTimeField(**options)
    return serializers.CharField(allow_blank=name in encoding.BLANK_ALLOWED, **options)


ObservationCompactSerializer = record_serializer(records.ObservationCompact)
ObservationRecordSerializer = record_serializer(records.ObservationRecord)
ObservationRevisionRecordSerializer = record_serializer(records.ObservationRevisionRecord)
SaveResultSerializer = record_serializer(records.SaveResult)
SessionSummaryCompactSerializer = record_serializer(records.SessionSummaryCompact)
SessionRecordSerializer = record_serializer(records.SessionRecord)
SessionStartSerializer = record_serializer(records.SessionStartResponse, "SessionStartSerializer")
TimelineSerializer = record_serializer(records.Timeline)
MemoryStatsSerializer = record_serializer(records.MemoryStats)


# -- the export document: described for the schema; services/document.py builds and checks it --
# The record serializers are classes made when this module loads (record_serializer): mypy cannot
# follow one as a base class, hence the ignores below.


class ExportSessionSerializer(SessionRecordSerializer):  # type: ignore[misc, valid-type]
    user_id = observation_count = None  # the document's user_id, once; no count is exported
    redacted_blocks = serializers.IntegerField(min_value=0)


class ExportObservationSerializer(ObservationRecordSerializer):  # type: ignore[misc, valid-type]
    user_id = None  # the document's, once


class ExportRevisionSerializer(ObservationRevisionRecordSerializer):  # type: ignore[misc, valid-type]
    observation_id = serializers.UUIDField()


class ExportDocumentSerializer(serializers.Serializer):
    """What ``GET export/`` answers: a document of the current version (``POST import/`` takes
    it and older ones: ``ImportDocumentSerializer``)."""

    format = serializers.CharField(help_text=_('Always "ilab_memory.export".'))
    version = serializers.IntegerField(min_value=1)
    user_id = serializers.CharField()
    exported_at = serializers.DateTimeField()
    sessions = ExportSessionSerializer(many=True)
    observations = ExportObservationSerializer(many=True)
    revisions = ExportRevisionSerializer(many=True)


class AsImported:
    """An export serializer as an import reads it: only ``import_requires`` must be there (the
    other fields have defaults, and older versions lack some)."""

    import_requires: tuple[str, ...] = ()

    def get_fields(self):
        fields = super().get_fields()
        for name, field in fields.items():
            field.required = name in self.import_requires
        return fields


class ImportSessionSerializer(AsImported, ExportSessionSerializer):
    import_requires = document.SESSION_REQUIRED


class ImportObservationSerializer(AsImported, ExportObservationSerializer):
    import_requires = document.OBSERVATION_REQUIRED


class ImportRevisionSerializer(AsImported, ExportRevisionSerializer):
    import_requires = document.REVISION_REQUIRED


class ImportDocumentSerializer(AsImported, ExportDocumentSerializer):
    """An export document as ``POST import/`` reads it: version 1 has no ``scope``; versions 1
    and 2 no ``happened_at`` or ``expires_at``."""

    import_requires = document.DOCUMENT_REQUIRED
    sessions = ImportSessionSerializer(many=True)
    observations = ImportObservationSerializer(many=True)
    revisions = ImportRevisionSerializer(many=True)


@extend_schema_field(ImportDocumentSerializer)
class ImportDocumentField(serializers.JSONField):
    """Any JSON here: the import's own checks (services/document.py) name each bad field."""


class ImportInputSerializer(ActingUserSerializer):
    # A field named like Serializer.data (and .errors below): DRF takes declared fields out of the
    # class, so the property stays; the stubs see a clash (hence the ignores).
    data = ImportDocumentField(  # type: ignore[assignment]
        help_text=_("An export document, as returned by GET export/ (older versions too).")
    )
    scope = ScopeField("import")


class ErrorSerializer(serializers.Serializer):
    detail = serializers.CharField()
    code = serializers.CharField()
    errors = serializers.DictField(  # type: ignore[assignment]
        child=serializers.ListField(child=serializers.CharField()),
        required=False,
        help_text=_("Field errors of a 400: field name → messages."),
    )
    limit = serializers.IntegerField(required=False)
    size = serializers.IntegerField(required=False)
