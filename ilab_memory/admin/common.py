"""Pieces the session and observation admins share: big-table lists, filters, cells, the audit."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import ClassVar

from django.contrib import admin
from django.contrib.admin.models import LogEntry
from django.contrib.admin.options import IncorrectLookupParameters
from django.contrib.admin.views.main import ChangeList
from django.contrib.contenttypes.models import ContentType
from django.core.paginator import Paginator
from django.db.models import Q
from django.urls import reverse
from django.utils import timezone
from django.utils.functional import cached_property
from django.utils.html import format_html
from django.utils.text import Truncator
from django.utils.translation import gettext, ngettext
from django.utils.translation import gettext_lazy as _

from ..conf import get_config
from ..exceptions import ValidationError as MemoryValidationError
from ..scopes import SHARED, Reach
from . import selectors as admin_selectors

AUTO, HUMAN, NONE = "auto", "human", "none"
SOON = "soon"
_BADGE_LABEL = {
    AUTO: _("Auto"),
    HUMAN: _("Human"),
    NONE: _("none"),
    "active": _("active"),
    "completed": _("completed"),
    "live": _("live"),
    "deleted": _("deleted"),
}
# Log entries are written in batches of this many rows (an erasure can touch thousands).
AUDIT_BATCH = 500
# The shared space's value in a list's URL: its own, "", reads as "no filter". No scope
# starts with "-" (scopes.SCOPE_PATTERN).
SHARED_CHOICE = "-"
SHARED_LABEL = _("(shared)")


class CappedCountPaginator(Paginator):
    """Counts at most ``cap`` rows, so a page of a huge table never costs a full ``COUNT(*)``.

    Past the cap the list shows the first ``cap`` matching rows; filters, search and the date
    hierarchy narrow it down.
    """

    cap = 10_000

    @cached_property
    def count(self):
        # min(rows, cap) depends neither on order nor on annotations; keeping them would sort
        # the whole table and compute per-row subqueries just to count.
        return self.object_list.order_by().values("pk")[: self.cap].count()


def summary_kind_q(kind: str, prefix: str = "") -> Q:
    """The rows whose session summary is of ``kind``; ``prefix`` reaches a related session."""
    auto = Q(**{f"{prefix}is_auto_generated": True})
    missing = Q(**{f"{prefix}summary__isnull": True}) | Q(**{f"{prefix}summary": ""})
    if kind == AUTO:
        return auto
    if kind == HUMAN:
        return ~auto & ~missing
    return ~auto & missing


class SummaryKindFilter(admin.SimpleListFilter):
    title = _("summary kind")
    parameter_name = "summary_kind"
    field_prefix = ""

    def lookups(self, request, model_admin):
        return [(AUTO, _("Auto-generated")), (HUMAN, _("Human")), (NONE, _("No summary"))]

    def queryset(self, request, queryset):
        if self.value() in (AUTO, HUMAN, NONE):
            return queryset.filter(summary_kind_q(self.value(), self.field_prefix))
        return queryset


class SessionSummaryKindFilter(SummaryKindFilter):
    title = _("summary kind of its session")
    parameter_name = "session_summary_kind"
    field_prefix = "session__"


class DeletedFilter(admin.SimpleListFilter):
    title = _("state")
    parameter_name = "state"

    def lookups(self, request, model_admin):
        return [("live", _("Live")), ("deleted", _("Deleted"))]

    def queryset(self, request, queryset):
        if self.value() == "live":
            return queryset.live()
        if self.value() == "deleted":
            return queryset.deleted()
        return queryset


class ExpiresFilter(admin.SimpleListFilter):
    """Live memories that expire within ``EXPIRING_DAYS``: by their own date or their type's
    ``RETENTION`` (the overview links here, per type)."""

    title = _("expires")
    parameter_name = "expires"

    def lookups(self, request, model_admin):
        days = admin_selectors.EXPIRING_DAYS
        return [(SOON, ngettext("In the next %(days)d day", "In the next %(days)d days", days) % {"days": days})]

    def queryset(self, request, queryset):
        if self.value() == SOON:
            return queryset.filter(admin_selectors.expiring_q(get_config(), now=timezone.now()))
        return queryset


class TypeFilter(admin.SimpleListFilter):
    """Choices from the settings, not ``SELECT DISTINCT type``, which scans the whole table."""

    title = _("type")
    parameter_name = "type"

    def lookups(self, request, model_admin):
        config = get_config()
        types = list(config.OBSERVATION_TYPES or sorted(set(config.TYPE_WEIGHTS) | {"manual"}))
        # Any slug is allowed by default, so a type typed into the URL still gets a choice.
        if self.value() and self.value() not in types:
            types.append(self.value())
        return [(slug, slug) for slug in types]

    def queryset(self, request, queryset):
        return queryset.filter(type=self.value()) if self.value() else queryset


def other_params(changelist, name: str) -> list[tuple[str, str]]:
    """The list's other query parameters, for a filter's own form to keep (the page number goes)."""
    return [
        (key, value)
        for key, values in changelist.params.items()
        if key not in (name, "p")
        for value in (values if isinstance(values, list) else [values])
    ]


class UserIdFilter(admin.SimpleListFilter):
    """A text box for one exact user_id: an indexed lookup, unlike the free-text search."""

    title = _("user id")
    parameter_name = "user_id"
    template = "admin/ilab_memory/user_id_filter.html"

    def lookups(self, request, model_admin):
        return ()

    def has_output(self):
        return True

    def choices(self, changelist):
        others = other_params(changelist, self.parameter_name)
        yield {"value": self.value() or "", "others": others, "parameter_name": self.parameter_name}

    def queryset(self, request, queryset):
        return queryset.filter(user_id=self.value()) if self.value() else queryset


class ScopeFilter(admin.SimpleListFilter):
    """The shared space, the scopes the settings name, and the scopes of the user the list is
    filtered to (read through that user's rows); a text box for any exact scope.

    Never ``SELECT DISTINCT scope`` over the whole table: any slug is a scope by default, so
    the choices cannot all be known, and the box reaches the others.
    """

    title = _("scope")
    parameter_name = "scope"
    template = "admin/ilab_memory/scope_filter.html"

    def lookups(self, request, model_admin):
        config = get_config()
        # Suggestions only (the box takes any scope): the allowed scopes, and those the deprecated
        # ACCOUNT_SCOPES binds accounts to; an adapter's own bindings cannot be listed.
        known = set(config.SCOPES or ()) | set(config.ACCOUNT_SCOPES.values())
        user_id = request.GET.get(UserIdFilter.parameter_name)
        if user_id:
            known.update(admin_selectors.user_scope_names(user_id=user_id))
        if self.value() and self.value() != SHARED_CHOICE:
            known.add(self.value())  # typed into the box or the URL: it gets its own choice
        known.discard(SHARED)
        return [(SHARED_CHOICE, SHARED_LABEL), *((scope, scope) for scope in sorted(known))]

    def choices(self, changelist):
        yield from super().choices(changelist)
        yield {
            "box": True,
            "value": "" if self.value() == SHARED_CHOICE else self.value() or "",
            "others": other_params(changelist, self.parameter_name),
            "parameter_name": self.parameter_name,
            "max_length": get_config().MAX_SCOPE_CHARS,
        }

    def queryset(self, request, queryset):
        if not self.value():
            return queryset
        scope = SHARED if self.value() == SHARED_CHOICE else self.value()
        return queryset.filter(Reach(scopes=(scope,), own=None).q())  # exactly as typed: "*" is no scope


# -- Cells: compact, and nothing that reads as an error on a healthy row ------------------------


def badge(kind: str):
    return format_html('<span class="ilab-badge ilab-badge--{}">{}</span>', kind, _BADGE_LABEL[kind])


def clip(text: str, chars: int, *, full: str | None = None):
    """``text`` cut to one line by the stylesheet, the whole of it (or ``full``) on hover."""
    shown = Truncator(text or "").chars(chars)
    return format_html('<span class="ilab-clip" title="{}">{}</span>', full or text or "", shown) if shown else "—"


def when(moment):
    """A date and time in two short pieces that wrap, the exact UTC instant on hover."""
    if moment is None:
        return "—"
    return format_html(
        '<time class="ilab-when" datetime="{}" title="{}">'
        '<span>{}</span> <span class="ilab-when__time">{}</span></time>',
        moment.isoformat(),
        moment.strftime("%Y-%m-%d %H:%M:%S UTC"),
        moment.strftime("%Y-%m-%d"),
        moment.strftime("%H:%M"),
    )


def expiry(observation, config) -> tuple[datetime | None, timedelta | None]:
    """When a live observation expires (``visibility``): the earlier of its own ``expires_at``
    and the end of its type's ``RETENTION``, counted from its last write; and that retention
    when it is what decides (None when its own date does, or nothing does)."""
    retention = config.RETENTION.get(observation.type)
    retained_until = observation.updated_at + retention if retention is not None else None
    own = observation.expires_at
    if retained_until is not None and (own is None or retained_until < own):
        return retained_until, retention
    return own, None


def duration(period: timedelta) -> str:
    """A ``RETENTION`` period in its largest whole unit: "90 days", "12 hours", "90 minutes"."""
    seconds = int(period.total_seconds())
    if seconds % 86400 == 0:
        return ngettext("%(n)d day", "%(n)d days", seconds // 86400) % {"n": seconds // 86400}
    if seconds % 3600 == 0:
        return ngettext("%(n)d hour", "%(n)d hours", seconds // 3600) % {"n": seconds // 3600}
    if seconds % 60 == 0:
        return ngettext("%(n)d minute", "%(n)d minutes", seconds // 60) % {"n": seconds // 60}
    return ngettext("%(n)d second", "%(n)d seconds", seconds) % {"n": seconds}


def expiry_text(observation, config) -> str:
    """When a live observation expires, and why, for its change page."""
    moment, retention = expiry(observation, config)
    if moment is None:
        return gettext("Never by itself.")
    at = moment.strftime("%Y-%m-%d %H:%M:%S UTC")
    if retention is None:
        return gettext("%(at)s: its own expiry date.") % {"at": at}
    return gettext("%(at)s: the retention of its type (%(period)s from its last write).") % {
        "at": at, "period": duration(retention)}


def scope_label(scope: str):
    """A scope as the console shows it: its slug, or a quiet label for the shared space."""
    if scope == SHARED:
        return format_html('<span class="ilab-scope ilab-scope--shared">{}</span>', SHARED_LABEL)
    return format_html('<code class="ilab-scope" title="{}">{}</code>', scope, scope)


def short_id(pk):
    return format_html('<code class="ilab-id" title="{}">{}</code>', pk, str(pk)[:8])


def moment_column(field: str, description):
    """A list column showing the moment ``field`` as every list shows times (``when``), sorted by it."""

    @admin.display(description=description, ordering=field)
    def column(model_admin, obj):
        return when(getattr(obj, field))

    return column


def times(count: int):
    """A counter that starts at zero for the reader: 1 revision is "never revised"."""
    return format_html('<span class="ilab-times">{}×</span>', count) if count else "—"


def admin_url(model_admin, model, view: str, *args) -> str:
    opts = model._meta
    return reverse(f"{model_admin.admin_site.name}:{opts.app_label}_{opts.model_name}_{view}", args=args)


def user_link(model_admin, user_id: str):
    """The user_id, linked to that user's page in the console."""
    return format_html(
        '<a class="ilab-user" href="{}" title="{}">{}</a>',
        reverse(f"{model_admin.admin_site.name}:ilab_memory_user", args=[user_id]),
        user_id,
        Truncator(user_id).chars(24),
    )


def error_text(exc: MemoryValidationError) -> str:
    # The service messages name the field, the limit and the size, never the value.
    return f"{exc.field}: {exc.message}"


# -- Audit -------------------------------------------------------------------------------------


def audit(request, model, rows, *, flag: int, message: str) -> int:
    """One admin log entry per (pk, label) of ``rows`` (who, what, when); returns how many.

    Written in batches, so a bulk action on thousands of rows costs a few INSERTs. ``message`` is
    stored as plain text in the language of the operator who acted.
    """
    content_type = ContentType.objects.get_for_model(model, for_concrete_model=False)
    entries = [
        LogEntry(
            user_id=request.user.pk,
            content_type_id=content_type.pk,
            object_id=str(pk),
            object_repr=str(label)[:200],
            action_flag=flag,
            change_message=str(message),
        )
        for pk, label in rows
    ]
    LogEntry.objects.bulk_create(entries, batch_size=AUDIT_BATCH)
    return len(entries)


class ListWithoutLongText(ChangeList):
    """The changelist query leaves out columns that can hold tens of kilobytes per row."""

    def get_queryset(self, request, exclude_parameters=None):
        # PostgreSQL refuses NUL in text parameters with a DataError (a 500); the admin's own
        # answer to unusable parameters is a redirect to the plain list.
        if any("\x00" in key or any("\x00" in value for value in values) for key, values in request.GET.lists()):
            raise IncorrectLookupParameters
        queryset = super().get_queryset(request, exclude_parameters)
        return queryset.defer(*self.model_admin.list_deferred_fields)


class ServiceOwnedAdmin(admin.ModelAdmin):
    """Rows only services create: no add, no hard delete; lists built for big tables."""

    paginator = CappedCountPaginator
    show_full_result_count = False
    show_facets = admin.ShowFacets.NEVER  # facet counts are one more COUNT per filter choice
    list_per_page = 50
    list_deferred_fields: tuple[str, ...] = ()

    class Media:
        css: ClassVar = {"all": ["ilab_memory/admin.css"]}

    def has_add_permission(self, request):
        return False

    # Every row here is one user's, in one scope: the two cells both lists show.
    @admin.display(description=_("User id"), ordering="user_id")
    def user(self, obj):
        return user_link(self, obj.user_id)

    @admin.display(description=_("Scope"), ordering="scope")
    def scope_label(self, obj):
        return scope_label(obj.scope)

    def has_delete_permission(self, request, obj=None):
        return False

    def get_changelist(self, request, **kwargs):
        return ListWithoutLongText

    def changelist_view(self, request, extra_context=None):
        extra_context = {**(extra_context or {}), "can_view_console": self.has_view_permission(request)}
        return super().changelist_view(request, extra_context)
