"""The operator console (SPEC §8): browse sessions and observations, tell Auto from Human summaries.

Rows are created only by the services, so nobody can add them here and nobody can hard-delete
them (erasure is ``mem_forget_user``). Every edit goes through the same redaction and limits as
the other faces. Lists stay fast on big tables: related rows joined, counts as per-page
subqueries, long texts left out of list queries, and no full-table count.

``REGISTER_ADMIN`` is read once, when Django imports this module at startup (autodiscover);
changing it later needs a restart.
"""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.options import IncorrectLookupParameters
from django.contrib.admin.views.main import ChangeList
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db import models
from django.db.models import Count, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce, Substr
from django.http import HttpResponseNotAllowed, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.functional import cached_property
from django.utils.html import format_html, format_html_join
from django.utils.text import Truncator
from django.utils.translation import gettext, gettext_lazy as _, ngettext

from .conf import get_config
from .exceptions import ObservationNotFound, ValidationError as MemoryValidationError
from .models import Observation, ObservationRevision, Session
from .services.observations import observation_delete, observation_restore, observation_update
from .services.data import user_forget
from .services.sessions import clean_summary, sessions_close_expired

AUTO, HUMAN, NONE = "auto", "human", "none"
SUMMARY_HEAD_CHARS = 120
# Rows listed inline on a change page; the rest are one click away in the filtered list.
INLINE_ROWS = 50

_BADGE_STYLE = {
    AUTO: "background:#fff4d6;color:#7a5200;border:1px solid #e0b84f",
    HUMAN: "background:#e3f4e6;color:#1d5e2b;border:1px solid #6cbf7d",
    NONE: "background:#eee;color:#555;border:1px solid #bbb",
}
_BADGE_LABEL = {AUTO: _("Auto"), HUMAN: _("Human"), NONE: _("none")}


# -- Shared pieces ---------------------------------------------------------------------------


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
        others = [
            (key, value)
            for key, values in changelist.params.items()
            if key not in (self.parameter_name, "p")
            for value in (values if isinstance(values, list) else [values])
        ]
        yield {"value": self.value() or "", "others": others, "parameter_name": self.parameter_name}

    def queryset(self, request, queryset):
        return queryset.filter(user_id=self.value()) if self.value() else queryset


def summary_kind(session) -> str:
    """AUTO, HUMAN or NONE, from the list's ``summary_head`` annotation (the text is deferred)."""
    if session.is_auto_generated:
        return AUTO
    return HUMAN if session.summary_head else NONE


def badge(kind: str):
    return format_html(
        '<span class="ilab-badge ilab-badge--{}" style="{};border-radius:8px;padding:1px 7px;'
        'font-size:11px;font-weight:bold;white-space:nowrap">{}</span>',
        kind,
        _BADGE_STYLE[kind],
        _BADGE_LABEL[kind],
    )


def _admin_url(model_admin, model, view: str, *args) -> str:
    opts = model._meta
    return reverse(f"{model_admin.admin_site.name}:{opts.app_label}_{opts.model_name}_{view}", args=args)


def _error_text(exc: MemoryValidationError) -> str:
    # The service messages name the field, the limit and the size, never the value.
    return f"{exc.field}: {exc.message}"


class _ListWithoutLongText(ChangeList):
    """The changelist query leaves out columns that can hold tens of kilobytes per row."""

    def get_queryset(self, request, exclude_parameters=None):
        # PostgreSQL refuses NUL in text parameters with a DataError (a 500); the admin's own
        # answer to unusable parameters is a redirect to the plain list.
        if any("\x00" in key or any("\x00" in value for value in values) for key, values in request.GET.lists()):
            raise IncorrectLookupParameters
        queryset = super().get_queryset(request, exclude_parameters)
        return queryset.defer(*self.model_admin.list_deferred_fields)


class _ServiceOwnedAdmin(admin.ModelAdmin):
    """Rows only services create: no add, no hard delete; lists built for big tables."""

    paginator = CappedCountPaginator
    show_full_result_count = False
    show_facets = admin.ShowFacets.NEVER  # facet counts are one more COUNT per filter choice
    list_per_page = 50
    list_deferred_fields: tuple[str, ...] = ()

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    def get_changelist(self, request, **kwargs):
        return _ListWithoutLongText


# -- Sessions --------------------------------------------------------------------------------


class SessionAdminForm(forms.ModelForm):
    """Only a narrative summary is editable, through the same redaction and limit as the API."""

    summary = forms.CharField(label=_("summary"), widget=forms.Textarea, required=False, strip=False)

    class Meta:
        model = Session
        fields = ["summary"]

    def clean_summary(self):
        value = self.cleaned_data.get("summary")
        try:
            text, blocks = clean_summary(value, config=get_config(), allow_blank=True)
        except MemoryValidationError as exc:
            raise forms.ValidationError(_error_text(exc), code=exc.code) from None
        if text is None and self.instance.summary:
            raise forms.ValidationError(
                _("summary: a stored summary cannot be blanked; write a new one instead."), code="blank"
            )
        self.redacted_blocks = blocks
        return text


class SessionAdmin(_ServiceOwnedAdmin):
    form = SessionAdminForm
    list_display = (
        "user_id",
        "status",
        "summary_badge",
        "summary_preview",
        "started_at",
        "last_activity_at",
        "ended_at",
        "observation_count",
    )
    list_display_links = ("user_id",)
    list_filter = (UserIdFilter, "status", SummaryKindFilter, "started_at", "last_activity_at", "ended_at")
    date_hierarchy = "started_at"
    search_fields = ("user_id__exact", "summary")
    search_help_text = _("An exact user_id, or words of the summary.")
    list_deferred_fields = ("summary",)
    readonly_fields = (
        "id",
        "user_id",
        "status",
        "summary_badge",
        "started_at",
        "last_activity_at",
        "ended_at",
        "redacted_blocks",
        "observation_count",
        "observation_list",
    )
    fieldsets = (
        (None, {"fields": ("id", "user_id", "status", "started_at", "last_activity_at", "ended_at")}),
        (_("Summary"), {"fields": ("summary_badge", "summary", "redacted_blocks")}),
        (_("Observations"), {"fields": ("observation_count", "observation_list")}),
    )
    def get_queryset(self, request):
        # A correlated subquery counts only the rows of the page shown, through the
        # (session, created_at) index; a GROUP BY join would aggregate the whole table first.
        live_count = (
            Observation.objects.live()
            .filter(session=OuterRef("pk"))
            .order_by()
            .values("session")
            .annotate(n=Count("pk"))
            .values("n")
        )
        return (
            super()
            .get_queryset(request)
            .annotate(
                observation_count=Coalesce(Subquery(live_count, output_field=models.IntegerField()), 0),
                summary_head=Substr("summary", 1, SUMMARY_HEAD_CHARS + 1),
            )
        )

    actions = ("forget_users",)

    def has_forget_permission(self, request):
        """Erasure removes sessions and observations: it needs both delete permissions."""
        return request.user.has_perms(["ilab_memory.delete_session", "ilab_memory.delete_observation"])

    @admin.action(description=_("Erase all data of the selected sessions' users"), permissions=["forget"])
    def forget_users(self, request, queryset):
        """Right to erasure, through ``user_forget``; asks for confirmation on a second page."""
        user_ids = sorted(set(queryset.values_list("user_id", flat=True)))
        if request.POST.get("confirm_forget") != "yes":
            context = {
                **self.admin_site.each_context(request),
                "title": gettext("Erase all data of these users?"),
                "opts": self.model._meta,
                "user_ids": user_ids,
                "selected": request.POST.getlist(admin.helpers.ACTION_CHECKBOX_NAME),
                "action_checkbox_name": admin.helpers.ACTION_CHECKBOX_NAME,
            }
            return TemplateResponse(request, "admin/ilab_memory/session/forget_confirmation.html", context)
        totals = {"sessions": 0, "observations": 0, "revisions": 0}
        for user_id in user_ids:
            for name, count in user_forget(user_id=user_id).items():
                totals[name] = totals.get(name, 0) + count
        self.message_user(
            request,
            gettext(
                "Erased %(users)d user(s): %(sessions)d sessions, %(observations)d observations, "
                "%(revisions)d revisions."
            )
            % {"users": len(user_ids), **totals},
            messages.SUCCESS,
        )
        return None

    def get_readonly_fields(self, request, obj=None):
        fields = list(super().get_readonly_fields(request, obj))
        if obj is not None and obj.is_auto_generated:
            fields.append("summary")  # Braess #2: a synthetic summary is never hand-edited
        return fields

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        if obj is not None and obj.is_auto_generated:
            context.update(show_save=False, show_save_and_continue=False)  # nothing to edit
        return super().render_change_form(request, context, add, change, form_url, obj)

    def save_model(self, request, obj, form, change):
        if "summary" not in form.changed_data:
            return
        # Only the summary columns, and only while it is still narrative: a full-row save
        # would write back a status or activity time a service changed meanwhile.
        updated = Session.objects.filter(pk=obj.pk, is_auto_generated=False).update(
            summary=form.cleaned_data["summary"],
            # The previous text's blocks were removed too; the count never goes down.
            redacted_blocks=models.F("redacted_blocks") + form.redacted_blocks,
        )
        if not updated:
            self.message_user(
                request, gettext("The session was auto-closed meanwhile; its summary was not changed."), messages.WARNING
            )

    @admin.display(description=_("summary kind"), ordering="is_auto_generated")
    def summary_badge(self, obj):
        return badge(summary_kind(obj))

    @admin.display(description=_("summary"))
    def summary_preview(self, obj):
        return format_html(
            '<span style="display:block;min-width:20em">{}</span>',
            Truncator(obj.summary_head or "").chars(SUMMARY_HEAD_CHARS) or "—",
        )

    @admin.display(description=_("observations"))
    def observation_count(self, obj):
        return obj.observation_count

    @admin.display(description=_("observations in this session"))
    def observation_list(self, obj):
        observations = list(
            Observation.objects.filter(session=obj)
            .only("id", "type", "title", "revision_count", "duplicate_count", "created_at", "deleted_at")
            .order_by("created_at", "id")[: INLINE_ROWS + 1]
        )
        if not observations:
            return _("None")
        rows = format_html_join(
            "",
            '<tr><td><a href="{}">{}</a></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>',
            (
                (
                    _admin_url(self, Observation, "change", o.pk),
                    Truncator(o.title).chars(80),
                    o.type,
                    o.revision_count,
                    o.duplicate_count,
                    o.created_at.strftime("%Y-%m-%d %H:%M"),
                    gettext("deleted") if o.deleted_at else gettext("live"),
                )
                for o in observations[:INLINE_ROWS]
            ),
        )
        more = ""
        if len(observations) > INLINE_ROWS:
            more = format_html(
                '<p><a href="{}?session={}">{}</a></p>',
                _admin_url(self, Observation, "changelist"),
                obj.pk,
                gettext("Show all observations of this session"),
            )
        return format_html(
            '<table class="ilab-observations"><thead><tr><th>{}</th><th>{}</th><th>{}</th><th>{}</th>'
            "<th>{}</th><th>{}</th></tr></thead><tbody>{}</tbody></table>{}",
            gettext("title"),
            gettext("type"),
            gettext("revisions"),
            gettext("duplicates"),
            gettext("created at"),
            gettext("state"),
            rows,
            more,
        )

    # The sweep is global, not a bulk action on selected rows, so it is a button and a URL.
    def get_urls(self):
        opts = self.model._meta
        return [
            path(
                "close-expired/",
                self.admin_site.admin_view(self.close_expired_view),
                name=f"{opts.app_label}_{opts.model_name}_close_expired",
            ),
            *super().get_urls(),
        ]

    def close_expired_view(self, request):
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        if not self.has_change_permission(request):
            raise PermissionDenied
        closed = sessions_close_expired()
        self.message_user(
            request,
            ngettext("Closed %(count)d expired session.", "Closed %(count)d expired sessions.", len(closed))
            % {"count": len(closed)},
            messages.SUCCESS,
        )
        return HttpResponseRedirect(_admin_url(self, Session, "changelist"))

    def changelist_view(self, request, extra_context=None):
        extra_context = {**(extra_context or {}), "can_close_expired": self.has_change_permission(request)}
        return super().changelist_view(request, extra_context)


# -- Observations ----------------------------------------------------------------------------


EDITABLE_OBSERVATION_FIELDS = ("type", "title", "content", "topic_key", "metadata")


class ObservationAdminForm(forms.ModelForm):
    """Edits go through ``observation_update``: redaction, limits, history, dedupe, search index.

    The service runs during validation because some of its errors (a topic_key another live
    observation holds) only show inside its transaction; the admin view is atomic, so a later
    failure still rolls it back.
    """

    # strip=False: the service, not the form, decides what text is stored.
    title = forms.CharField(label=_("title"), widget=forms.Textarea(attrs={"rows": 2}), strip=False)
    content = forms.CharField(label=_("content"), widget=forms.Textarea, strip=False)
    topic_key = forms.CharField(label=_("topic key"), required=False, strip=False, empty_value=None)

    class Meta:
        model = Observation
        fields = list(EDITABLE_OBSERVATION_FIELDS)

    def clean(self):
        cleaned = super().clean()
        changed = [name for name in self.changed_data if name in EDITABLE_OBSERVATION_FIELDS]
        if self.errors or not changed:
            return cleaned
        try:
            record = observation_update(
                user_id=self.instance.user_id,
                observation_id=self.instance.pk,
                **{name: cleaned[name] for name in changed},
            )
        except MemoryValidationError as exc:
            field = exc.field if exc.field in self.fields else None
            self.add_error(field, forms.ValidationError(_error_text(exc), code=exc.code))
            return cleaned
        except ObservationNotFound:
            raise forms.ValidationError(_("This observation was deleted meanwhile; restore it first.")) from None
        # The stored, redacted values replace what was typed, so nothing downstream (the
        # instance, the success message, the admin log) ever holds the private text.
        for name in EDITABLE_OBSERVATION_FIELDS:
            cleaned[name] = getattr(record, name)
        self.stored = record
        return cleaned


class ObservationAdmin(_ServiceOwnedAdmin):
    form = ObservationAdminForm
    list_display = (
        "short_title",
        "type",
        "user_id",
        "session_link",
        "revision_count",
        "duplicate_count",
        "updated_at",
        "deleted",
    )
    list_display_links = ("short_title",)
    list_filter = (UserIdFilter, TypeFilter, DeletedFilter, SessionSummaryKindFilter, "updated_at")
    list_select_related = ("session",)
    search_fields = ("title", "content", "user_id__exact")
    search_help_text = _("Words of the title or content, or an exact user_id.")
    list_deferred_fields = ("content", "metadata", "session__summary")
    readonly_fields = (
        "id",
        "user_id",
        "session_link",
        "revision_count",
        "duplicate_count",
        "redacted_blocks",
        "created_at",
        "updated_at",
        "last_seen_at",
        "deleted_at",
        "revision_history",
    )
    fieldsets = (
        (None, {"fields": ("id", "user_id", "session_link", "type", "title", "content", "topic_key", "metadata")}),
        (
            _("Counters and times"),
            {
                "fields": (
                    ("revision_count", "duplicate_count", "redacted_blocks"),
                    ("created_at", "updated_at", "last_seen_at", "deleted_at"),
                )
            },
        ),
        (_("Revision history"), {"fields": ("revision_history",)}),
    )
    actions = ("soft_delete_selected", "restore_selected")

    def get_readonly_fields(self, request, obj=None):
        fields = list(super().get_readonly_fields(request, obj))
        if obj is not None and obj.is_deleted:
            fields.extend(EDITABLE_OBSERVATION_FIELDS)  # the service edits live rows only
        return fields

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        if obj is not None and obj.is_deleted:
            context.update(show_save=False, show_save_and_continue=False)  # restore it to edit it
        return super().render_change_form(request, context, add, change, form_url, obj)

    def save_model(self, request, obj, form, change):
        pass  # already written by observation_update in the form's validation

    def lookup_allowed(self, lookup, value, request=None):
        # The session page links to "all observations of this session" (?session=<id>).
        return lookup == "session" or super().lookup_allowed(lookup, value, request)

    @admin.display(description=_("title"), ordering="title")
    def short_title(self, obj):
        return Truncator(obj.title).chars(80)

    @admin.display(description=_("session"), ordering="session__started_at")
    def session_link(self, obj):
        return format_html(
            '<a href="{}">{} · {}</a>',
            _admin_url(self, Session, "change", obj.session_id),
            str(obj.session_id)[:8],
            obj.session.started_at.strftime("%Y-%m-%d %H:%M"),
        )

    @admin.display(description=_("deleted"), boolean=True, ordering="deleted_at")
    def deleted(self, obj):
        return obj.deleted_at is not None

    @admin.display(description=_("revision history"))
    def revision_history(self, obj):
        revisions = ObservationRevision.objects.filter(observation=obj).order_by("-revision")[: INLINE_ROWS]
        rows = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            (
                (
                    r.revision,
                    r.type,
                    Truncator(r.title).chars(80),
                    Truncator(r.content).chars(200),
                    r.written_at.strftime("%Y-%m-%d %H:%M"),
                    r.replaced_at.strftime("%Y-%m-%d %H:%M"),
                )
                for r in revisions
            ),
        )
        if not rows:
            return _("No earlier versions.")
        return format_html(
            '<table class="ilab-revisions"><thead><tr><th>{}</th><th>{}</th><th>{}</th><th>{}</th>'
            "<th>{}</th><th>{}</th></tr></thead><tbody>{}</tbody></table>",
            gettext("revision"),
            gettext("type"),
            gettext("title"),
            gettext("content"),
            gettext("written at"),
            gettext("replaced at"),
            rows,
        )

    @admin.action(description=_("Soft-delete selected observations"), permissions=["change"])
    def soft_delete_selected(self, request, queryset):
        done = 0
        for pk, user_id in queryset.live().values_list("pk", "user_id"):
            try:
                observation_delete(user_id=user_id, observation_id=pk)
                done += 1
            except ObservationNotFound:
                pass  # deleted by someone else meanwhile: already in the wanted state
        self.message_user(
            request,
            ngettext("Soft-deleted %(count)d observation.", "Soft-deleted %(count)d observations.", done)
            % {"count": done},
            messages.SUCCESS,
        )

    @admin.action(description=_("Restore selected observations"), permissions=["change"])
    def restore_selected(self, request, queryset):
        done, refused = 0, 0
        for pk, user_id in queryset.deleted().values_list("pk", "user_id"):
            try:
                observation_restore(user_id=user_id, observation_id=pk)
                done += 1
            except MemoryValidationError:
                refused += 1  # its topic_key is held by another live observation now
            except ObservationNotFound:
                pass
        self.message_user(
            request,
            ngettext("Restored %(count)d observation.", "Restored %(count)d observations.", done)
            % {"count": done},
            messages.SUCCESS,
        )
        if refused:
            self.message_user(
                request,
                ngettext(
                    "%(count)d observation was not restored: another live observation now has its topic key.",
                    "%(count)d observations were not restored: other live observations now have their topic keys.",
                    refused,
                )
                % {"count": refused},
                messages.WARNING,
            )


def register(site: admin.AdminSite = admin.site) -> bool:
    """Register the models on ``site`` unless ``REGISTER_ADMIN`` is off; returns whether it did."""
    if not get_config().REGISTER_ADMIN:
        return False
    site.register(Session, SessionAdmin)
    site.register(Observation, ObservationAdmin)
    return True


register()
