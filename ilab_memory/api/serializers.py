"""Shapes in and out, as the schema documents them.

Input serializers declare what each endpoint accepts; the views check a body's shape against
them (``body_fields``: an object, known fields, required ones present) and leave the values to
the services, where every rule lives. Output serializers describe the frozen values of
``ilab_memory.types`` for the schema, field for field and in the same order; the views answer
with ``ilab_memory.encoding``, which is checked against them (``tests/api/test_encoding.py``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping

from django.core.validators import RegexValidator
from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.exceptions import ErrorDetail
from rest_framework.settings import api_settings

from .. import encoding
from ..conf import get_config
from ..scopes import ALL, MAX_LISTED_SCOPES, SCOPE_PATTERN
from ..services import document
from ..services.privacy import shown_key
from ..validation import (
    CONTEXT_LIMIT,
    MAX_TTL_SECONDS,
    MIN_SCORE_MINIMUM,
    SEARCH_LIMIT,
    TIMELINE_AFTER,
    TIMELINE_BEFORE,
    Count,
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
        raise serializers.ValidationError({name: [ErrorDetail(message, code="required")] for name in missing})
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

MOMENT = _("An ISO 8601 date-time with a UTC offset (2026-03-01T09:30:00+01:00, 2026-03-01T08:30:00Z) or a "
           "date (2026-03-01: its midnight, UTC); a date-time without an offset is refused.")


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
        super().__init__(required=False, min_value=1, max_value=MAX_TTL_SECONDS, help_text=help_text, **kwargs)


TTL_INPUT = _("Seconds from now until it expires (1 to a century); not with expires_at.")


class ObservationCreateInputSerializer(ScopedWriteSerializer):
    title = StrictCharField()
    content = StrictCharField()
    type = StrictCharField(required=False, default="manual")
    topic_key = StrictCharField(required=False, allow_null=True, default=None)
    metadata = serializers.JSONField(required=False, allow_null=True, default=None)
    happened_at = MomentField(_("When what it says happened (null or absent: now)."), allow_null=True)
    expires_at = MomentField(_("When it expires, in the future; from then on no read sees it. Not with ttl. "
                               "Null or absent: never (or when its type's RETENTION ends it)."), allow_null=True)
    ttl = TtlField(TTL_INPUT, allow_null=True)


class ObservationUpdateInputSerializer(ActingUserSerializer):
    """Only the fields present in the body are changed (``scope`` says where to find it)."""

    scope = ScopeField("target")

    title = StrictCharField(required=False)
    content = StrictCharField(required=False)
    type = StrictCharField(required=False)
    topic_key = StrictCharField(required=False, allow_null=True)
    metadata = serializers.JSONField(required=False, allow_null=True)
    happened_at = MomentField(_("When what it says happened; the old value goes to the history."))
    expires_at = MomentField(_("When it expires, in the future; from then on no read sees it. Not with ttl. "
                               "Null: never (its type's RETENTION may still end it)."), allow_null=True)
    ttl = TtlField(TTL_INPUT)


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


HAPPENED_AT = _("When what it says happened (UTC): the time it was saved unless the writer said.")
EXPIRES_AT = _(
    "When it expires by itself (UTC), or null: never (its type's RETENTION setting may still end it). "
    "From then on no read sees it."
)


class ScoreSerializer(serializers.Serializer):
    kind = serializers.SerializerMethodField()
    value = serializers.FloatField()
    breakdown = serializers.DictField(child=serializers.JSONField())

    @extend_schema_field(serializers.ChoiceField(choices=sorted(encoding.SCORE_KINDS.values())))
    def get_kind(self, score) -> str:
        return encoding.score_kind(score)


class ObservationCompactSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    type = serializers.CharField()
    title = serializers.CharField()
    preview = serializers.CharField()
    topic_key = serializers.CharField(allow_null=True)
    session_id = serializers.UUIDField()
    updated_at = serializers.DateTimeField()
    happened_at = serializers.DateTimeField(help_text=HAPPENED_AT)
    scope = serializers.CharField(allow_blank=True, help_text=encoding.DESCRIPTIONS["scope"])
    score = ScoreSerializer(allow_null=True)


class ObservationRecordSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    user_id = serializers.CharField()
    scope = serializers.CharField(allow_blank=True, help_text=encoding.DESCRIPTIONS["scope"])
    session_id = serializers.UUIDField()
    type = serializers.CharField()
    title = serializers.CharField()
    content = serializers.CharField()
    topic_key = serializers.CharField(allow_null=True)
    metadata = serializers.DictField(child=serializers.JSONField())
    revision_count = serializers.IntegerField(min_value=1)
    duplicate_count = serializers.IntegerField(min_value=1)
    redacted_blocks = serializers.IntegerField(min_value=0)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    happened_at = serializers.DateTimeField(help_text=HAPPENED_AT)
    last_seen_at = serializers.DateTimeField()
    deleted_at = serializers.DateTimeField(allow_null=True)
    expires_at = serializers.DateTimeField(allow_null=True, help_text=EXPIRES_AT)


class ObservationRevisionRecordSerializer(serializers.Serializer):
    revision = serializers.IntegerField(min_value=0)
    session_id = serializers.UUIDField(allow_null=True)
    type = serializers.CharField()
    title = serializers.CharField()
    content = serializers.CharField()
    topic_key = serializers.CharField(allow_null=True)
    metadata = serializers.DictField(child=serializers.JSONField())
    happened_at = serializers.DateTimeField(help_text=_("When what this version says happened."))
    written_at = serializers.DateTimeField()
    replaced_at = serializers.DateTimeField()


class SaveResultSerializer(serializers.Serializer):
    action = serializers.ChoiceField(choices=encoding.CHOICES["action"])
    observation = ObservationRecordSerializer()


class SessionSummaryCompactSerializer(serializers.Serializer):
    session_id = serializers.UUIDField()
    started_at = serializers.DateTimeField()
    ended_at = serializers.DateTimeField(allow_null=True)
    summary = serializers.CharField(allow_null=True)
    is_auto_generated = serializers.BooleanField()
    observation_count = serializers.IntegerField(min_value=0)
    scope = serializers.CharField(allow_blank=True, help_text=encoding.DESCRIPTIONS["scope"])


class SessionRecordSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    user_id = serializers.CharField()
    scope = serializers.CharField(allow_blank=True, help_text=encoding.DESCRIPTIONS["scope"])
    status = serializers.ChoiceField(choices=encoding.CHOICES["status"])
    started_at = serializers.DateTimeField()
    last_activity_at = serializers.DateTimeField()
    ended_at = serializers.DateTimeField(allow_null=True)
    summary = serializers.CharField(allow_null=True)
    is_auto_generated = serializers.BooleanField()
    observation_count = serializers.IntegerField(min_value=0)


class SessionStartSerializer(serializers.Serializer):
    session_id = serializers.UUIDField()
    is_new = serializers.BooleanField()
    sessions_context = SessionSummaryCompactSerializer(many=True)
    memories = ObservationCompactSerializer(many=True)


class TimelineSerializer(serializers.Serializer):
    session_id = serializers.UUIDField()
    anchor = ObservationCompactSerializer()
    before = ObservationCompactSerializer(many=True)
    after = ObservationCompactSerializer(many=True)


class MemoryStatsSerializer(serializers.Serializer):
    user_id = serializers.CharField()
    scope = serializers.CharField(
        help_text=_("What was counted: '*' (every scope), or the scopes read joined by ',' (\"\": shared).")
    )
    sessions = serializers.IntegerField(min_value=0)
    active_sessions = serializers.IntegerField(min_value=0)
    completed_sessions = serializers.IntegerField(min_value=0)
    auto_summaries = serializers.IntegerField(min_value=0)
    human_summaries = serializers.IntegerField(min_value=0)
    observations = serializers.IntegerField(min_value=0, help_text=encoding.DESCRIPTIONS["observations"])
    deleted_observations = serializers.IntegerField(min_value=0)
    revisions = serializers.IntegerField(min_value=0)
    observations_by_type = serializers.DictField(child=serializers.IntegerField(min_value=0))
    observations_by_scope = serializers.DictField(
        child=serializers.IntegerField(min_value=0), help_text=encoding.DESCRIPTIONS["observations_by_scope"]
    )
    waiting_for_vector = serializers.IntegerField(
        min_value=0, help_text=encoding.DESCRIPTIONS["waiting_for_vector"]
    )


# -- the export document: described for the schema; services/document.py builds and checks it --


class ExportSessionSerializer(SessionRecordSerializer):
    user_id = observation_count = None  # the document's user_id, once; no count is exported
    redacted_blocks = serializers.IntegerField(min_value=0)


class ExportObservationSerializer(ObservationRecordSerializer):
    user_id = None  # the document's, once


class ExportRevisionSerializer(ObservationRevisionRecordSerializer):
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
    data = ImportDocumentField(help_text=_("An export document, as returned by GET export/ (older versions too)."))
    scope = ScopeField("import")


class ErrorSerializer(serializers.Serializer):
    detail = serializers.CharField()
    code = serializers.CharField()
    errors = serializers.DictField(
        child=serializers.ListField(child=serializers.CharField()),
        required=False,
        help_text=_("Field errors of a 400: field name → messages."),
    )
    limit = serializers.IntegerField(required=False)
    size = serializers.IntegerField(required=False)
