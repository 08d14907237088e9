"""Sessions in the admin: the list, a session's page, the sweep, and the erasure of their users."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.contrib.admin.models import CHANGE
from django.core.exceptions import PermissionDenied
from django.db import models
from django.db.models.functions import Substr
from django.http import HttpResponseNotAllowed, HttpResponseRedirect
from django.urls import path
from django.utils.html import format_html, format_html_join
from django.utils.text import Truncator
from django.utils.translation import gettext, ngettext
from django.utils.translation import gettext_lazy as _

from ..conf import get_config
from ..exceptions import ValidationError as MemoryValidationError
from ..models import Observation, Session
from ..services.sessions import clean_summary, sessions_close_idle
from ..visibility import expired_q
from . import console
from .common import (
    AUDIT_BATCH,
    AUTO,
    HUMAN,
    NONE,
    ScopeFilter,
    ServiceOwnedAdmin,
    SummaryKindFilter,
    UserIdFilter,
    admin_url,
    audit,
    badge,
    clip,
    moment_column,
    times,
    when,
)

SUMMARY_HEAD_CHARS = 120
# Rows listed inline on a change page; the rest are one click away in the filtered list.
INLINE_ROWS = 50


def _resubmitted(request, action: str) -> list[tuple[str, str]]:
    """The hidden fields that send an action's selection again from its confirmation page."""
    selected = request.POST.getlist(helpers.ACTION_CHECKBOX_NAME)
    return [(helpers.ACTION_CHECKBOX_NAME, pk) for pk in selected] + [("action", action)]


def summary_kind(session) -> str:
    """AUTO, HUMAN or NONE, from the list's ``summary_head`` annotation (the text is deferred)."""
    if session.is_auto_generated:
        return AUTO
    return HUMAN if getattr(session, "summary_head", session.summary) else NONE


class SessionAdminForm(forms.ModelForm):
    """Only a narrative summary is editable, through the same redaction and limit as the API."""

    summary = forms.CharField(label=_("Summary"), widget=forms.Textarea, required=False, strip=False)

    class Meta:
        model = Session
        fields = ("summary",)

    def clean_summary(self):
        value = self.cleaned_data.get("summary")
        try:
            text, blocks = clean_summary(value, config=get_config(), allow_blank=True)
        except MemoryValidationError as exc:
            raise forms.ValidationError(f"{exc.field}: {exc.message}", code=exc.code) from None
        if text is None and self.instance.summary:
            raise forms.ValidationError(
                _("summary: a stored summary cannot be blanked; write a new one instead."), code="blank"
            )
        self.redacted_blocks = blocks
        return text


class SessionAdmin(ServiceOwnedAdmin):
    form = SessionAdminForm
    list_display = (
        "started",
        "user",
        "scope_label",
        "state",
        "summary_preview",
        "last_activity",
        "ended",
        "observation_count",
    )
    list_display_links = ("started",)
    list_filter = (UserIdFilter, ScopeFilter, "status", SummaryKindFilter, "started_at", "last_activity_at", "ended_at")
    date_hierarchy = "started_at"
    search_fields = ("user_id__exact", "scope__exact", "summary")
    search_help_text = _("An exact user_id or scope, or words of the summary.")
    list_deferred_fields = ("summary",)
    readonly_fields = (
        "id",
        "user",
        "scope_label",
        "status",
        "summary_badge",
        "started",
        "last_activity",
        "ended",
        "redacted_blocks",
        "observation_count",
        "observation_list",
    )
    fieldsets = (
        (None, {"fields": ("id", "user", "scope_label", "status", "started", "last_activity", "ended")}),
        (_("Summary"), {"fields": ("summary_badge", "summary", "redacted_blocks")}),
        (_("Observations"), {"fields": ("observation_count", "observation_list")}),
    )
    actions = ("forget_users", "forget_scopes")

    def get_queryset(self, request):
        return (
            super().get_queryset(request).with_observation_count()
            .annotate(summary_head=Substr("summary", 1, SUMMARY_HEAD_CHARS + 1))
        )

    def has_forget_permission(self, request):
        """Erasure removes sessions and observations: it needs both delete permissions."""
        return console.may_forget(request)

    @admin.action(description=_("Erase all data of the selected sessions' users"), permissions=["forget"])
    def forget_users(self, request, queryset):
        """Right to erasure, through ``user_forget``; asks for confirmation on a second page."""
        user_ids = sorted(set(queryset.values_list("user_id", flat=True)))
        if request.POST.get("confirm_forget") != "yes":
            return console.forget_confirmation(self, request, user_ids, hidden=_resubmitted(request, "forget_users"))
        console.forget(self, request, user_ids)
        return None

    @admin.action(description=_("Erase the selected sessions' scopes (only those scopes of their users)"),
                  permissions=["forget"])
    def forget_scopes(self, request, queryset):
        """``user_forget`` of each (user, scope) the selected sessions are in; the users' other
        scopes stay. Asks for confirmation on a second page."""
        targets = sorted(set(queryset.values_list("user_id", "scope")))
        if request.POST.get("confirm_forget") != "yes":
            return console.forget_confirmation(
                self, request, [], targets=targets, hidden=_resubmitted(request, "forget_scopes")
            )
        console.forget_scopes(self, request, targets)
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
                request,
                gettext("The session was auto-closed meanwhile; its summary was not changed."),
                messages.WARNING,
            )

    # -- cells ------------------------------------------------------------------------------

    @admin.display(description=_("State"), ordering="status")
    def state(self, obj):
        # Completed: its summary kind. Active: that, and a narrative summary it may already hold.
        kind = summary_kind(obj)
        if obj.status != "active":
            return badge(kind)
        return badge("active") if kind == NONE else format_html("{} {}", badge("active"), badge(kind))

    @admin.display(description=_("Summary kind"), ordering="is_auto_generated")
    def summary_badge(self, obj):
        return badge(summary_kind(obj))

    @admin.display(description=_("Summary"))
    def summary_preview(self, obj):
        head = obj.summary_head or ""
        return clip(head, SUMMARY_HEAD_CHARS, full=Truncator(head).chars(SUMMARY_HEAD_CHARS))

    started = moment_column("started_at", _("Started"))
    last_activity = moment_column("last_activity_at", _("Last activity"))
    ended = moment_column("ended_at", _("Ended"))

    @admin.display(description=_("Memories"))
    def observation_count(self, obj):
        return obj.observation_count

    @admin.display(description=_("Observations in this session"))
    def observation_list(self, obj):
        observations = list(
            Observation.objects.filter(session=obj)
            .exclude(expired_q(get_config()))  # gone for every read, before the sweep erases them
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
                    admin_url(self, Observation, "change", o.pk),
                    Truncator(o.title).chars(80),
                    o.type,
                    times(o.revision_count - 1),
                    times(o.duplicate_count - 1),
                    when(o.created_at),
                    badge("deleted" if o.deleted_at else "live"),
                )
                for o in observations[:INLINE_ROWS]
            ),
        )
        more = ""
        if len(observations) > INLINE_ROWS:
            more = format_html(
                '<p><a href="{}?session={}">{}</a></p>',
                admin_url(self, Observation, "changelist"),
                obj.pk,
                gettext("Show all observations of this session"),
            )
        return format_html(
            '<table class="ilab-observations"><thead><tr><th>{}</th><th>{}</th><th>{}</th><th>{}</th>'
            "<th>{}</th><th>{}</th></tr></thead><tbody>{}</tbody></table>{}",
            gettext("Title"),
            gettext("Type"),
            gettext("Revised"),
            gettext("Repeated"),
            gettext("Created"),
            gettext("State"),
            rows,
            more,
        )

    # -- the sweep, and the console's pages --------------------------------------------------

    def get_urls(self):
        # The sweep is global, not a bulk action on selected rows, so it is a button and a URL.
        # The console's pages hang here too: they need no model of their own (no migration).
        opts = self.model._meta
        wrap = self.admin_site.admin_view
        return [
            path(
                "close-idle/",
                wrap(self.close_idle_view),
                name=f"{opts.app_label}_{opts.model_name}_close_idle",
            ),
            *console.urls(self),
            *super().get_urls(),
        ]

    def close_idle_view(self, request):
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        if not self.has_change_permission(request):
            raise PermissionDenied
        closed = sessions_close_idle()
        message = ngettext(
            "Closed %(count)d idle session.", "Closed %(count)d idle sessions.", len(closed)
        ) % {"count": len(closed)}
        note = gettext("Auto-closed by the sweep from the admin (%(count)d sessions closed in this run).") % {
            "count": len(closed)
        }
        for start in range(0, len(closed), AUDIT_BATCH):
            chunk = Session.objects.filter(pk__in=closed[start : start + AUDIT_BATCH])
            audit(request, Session, ((s.pk, s) for s in chunk.only("id", "user_id", "started_at", "status")),
                  flag=CHANGE, message=note)
        self.message_user(request, message, messages.SUCCESS)
        return HttpResponseRedirect(admin_url(self, Session, "changelist"))

    def changelist_view(self, request, extra_context=None):
        extra_context = {**(extra_context or {}), "can_close_idle": self.has_change_permission(request)}
        return super().changelist_view(request, extra_context)
