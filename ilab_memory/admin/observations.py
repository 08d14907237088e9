"""Observations in the admin: the list, edits through ``observation_update``, soft delete, restore.

An expired memory (past its ``expires_at`` or its type's ``RETENTION``) is not here: every read
stops seeing it at once, the console's too, and the sweep erases it.
"""

from __future__ import annotations

from typing import ClassVar

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import widgets
from django.contrib.admin.models import CHANGE
from django.utils.html import format_html, format_html_join
from django.utils.text import Truncator
from django.utils.translation import gettext, ngettext
from django.utils.translation import gettext_lazy as _

from ..conf import get_config
from ..exceptions import ObservationNotFound
from ..exceptions import ValidationError as MemoryValidationError
from ..models import Observation, ObservationRevision, Session
from ..scopes import ALL
from ..services.observations import observation_delete, observation_restore, observation_update
from ..visibility import expired_q
from .common import (
    DeletedFilter,
    ExpiresFilter,
    ScopeFilter,
    ServiceOwnedAdmin,
    SessionSummaryKindFilter,
    TypeFilter,
    UserIdFilter,
    admin_url,
    audit,
    badge,
    clip,
    error_text,
    expiry,
    expiry_text,
    moment_column,
    times,
    when,
)
from .sessions import INLINE_ROWS

# The texts the service may redact; the times it stores as given.
EDITABLE_TEXT_FIELDS = ("type", "title", "content", "topic_key", "metadata")
EDITABLE_OBSERVATION_FIELDS = (*EDITABLE_TEXT_FIELDS, "happened_at", "expires_at")
CORRECTION, USER_WRITE = "correction", "user_write"


class ObservationAdminForm(forms.ModelForm):
    """Edits go through ``observation_update``: redaction, limits, history, dedupe, search index.

    The operator says what the edit is: a correction (the default) stays in the observation's
    session and is nobody's activity; a write of the user moves it to the user's active session,
    exactly as ``mem_update``. The service runs during validation because some of its errors (a
    topic_key another live observation holds) only show inside its transaction; the admin view is
    atomic, so a later failure still rolls it back.
    """

    # strip=False: the service, not the form, decides what text is stored.
    title = forms.CharField(label=_("Title"), widget=forms.Textarea(attrs={"rows": 2}), strip=False)
    content = forms.CharField(label=_("Content"), widget=forms.Textarea, strip=False)
    topic_key = forms.CharField(label=_("Topic key"), required=False, strip=False, empty_value=None)
    # Declared, not derived from the model: its callable default would add a hidden "initial"
    # input that a form posted without it reads as a change.
    happened_at = forms.SplitDateTimeField(label=_("Happened at"), widget=widgets.AdminSplitDateTime)
    expires_at = forms.SplitDateTimeField(
        label=_("Expires at"), required=False, widget=widgets.AdminSplitDateTime,
        help_text=_("Empty: never by itself (its type's retention may still end it). From then on no read "
                    "sees it, and the sweep erases it."),
    )
    edit_kind = forms.ChoiceField(
        label=_("This edit is"),
        choices=[
            (CORRECTION, _("A correction: it stays in its session, and no session's activity changes")),
            (USER_WRITE, _("A write of the user: it moves to the user's active session, as mem_update does")),
        ],
        initial=CORRECTION,
        required=False,  # a form that does not send it (a script, an old page) makes a correction
        widget=forms.RadioSelect,
    )

    class Meta:
        model = Observation
        fields = EDITABLE_OBSERVATION_FIELDS
        labels: ClassVar = {"type": _("Type"), "metadata": _("Metadata")}

    def clean(self):
        cleaned = super().clean()
        changed = [name for name in self.changed_data if name in EDITABLE_OBSERVATION_FIELDS]
        if self.errors or not changed:
            return cleaned
        try:
            record = observation_update(
                user_id=self.instance.user_id,
                observation_id=self.instance.pk,
                scope=ALL,  # the operator acts in any scope; a row never changes scope
                keep_session=cleaned.get("edit_kind") != USER_WRITE,
                **{name: cleaned[name] for name in changed},
            )
        except MemoryValidationError as exc:
            field = exc.field if exc.field in self.fields else None
            self.add_error(field, forms.ValidationError(error_text(exc), code=exc.code))
            return cleaned
        except ObservationNotFound:
            raise forms.ValidationError(_("This observation was deleted meanwhile; restore it first.")) from None
        # The stored, redacted values replace what was typed, so nothing downstream (the
        # instance, the success message, the admin log) ever holds the private text.
        for name in EDITABLE_TEXT_FIELDS:
            cleaned[name] = getattr(record, name)
        self.stored = record
        return cleaned


class ObservationAdmin(ServiceOwnedAdmin):
    form = ObservationAdminForm
    list_display = (
        "short_title", "kind", "user", "scope_label", "session_link", "revised", "repeated", "happened", "state",
    )
    list_display_links = ("short_title",)
    list_filter = (UserIdFilter, ScopeFilter, TypeFilter, DeletedFilter, ExpiresFilter, SessionSummaryKindFilter,
                   "happened_at", "updated_at")
    list_select_related = ("session",)
    search_fields = ("title", "content", "user_id__exact", "scope__exact")
    search_help_text = _("Words of the title or content, or an exact user_id or scope.")
    list_deferred_fields = ("content", "metadata", "session__summary")
    readonly_fields = (
        "id",
        "user",
        "scope_label",
        "session_link",
        "history",
        "redacted_blocks",
        "created",
        "updated",
        "last_seen",
        "deleted",
        "expiry",
        "revision_history",
    )
    fieldsets = (
        (None, {"fields": ("id", "user", "scope_label", "session_link", "type", "title", "content", "topic_key",
                           "metadata", "happened_at", "expires_at")}),
        (_("Edit"), {"fields": ("edit_kind",)}),
        (
            _("Counters and times"),
            {"fields": (("history", "redacted_blocks"), ("created", "updated", "last_seen", "deleted"), "expiry")},
        ),
        (_("Revision history"), {"fields": ("revision_history",)}),
    )
    actions = ("soft_delete_selected", "restore_selected")

    def get_queryset(self, request):
        # Expired rows are gone for every read (``visibility``); the sweep erases them.
        return super().get_queryset(request).exclude(expired_q(get_config()))

    def get_readonly_fields(self, request, obj=None):
        fields = list(super().get_readonly_fields(request, obj))
        if obj is not None and obj.is_deleted:
            fields.extend(EDITABLE_OBSERVATION_FIELDS)  # the service edits live rows only
        return fields

    def get_fieldsets(self, request, obj=None):
        fieldsets = super().get_fieldsets(request, obj)
        if obj is not None and obj.is_deleted or not self.has_change_permission(request, obj):
            return [fs for fs in fieldsets if fs[1]["fields"] != ("edit_kind",)]
        return fieldsets

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        if obj is not None and obj.is_deleted:
            context.update(show_save=False, show_save_and_continue=False)  # restore it to edit it
        return super().render_change_form(request, context, add, change, form_url, obj)

    def save_model(self, request, obj, form, change):
        pass  # already written by observation_update in the form's validation

    def construct_change_message(self, request, form, formsets, add=False):
        message = super().construct_change_message(request, form, formsets, add)
        if form.cleaned_data.get("edit_kind") == USER_WRITE:
            note = gettext("as a write of the user (moved to the active session)")
        else:
            note = gettext("as a correction (kept in its session)")
        fields = [str(form.fields[name].label) for name in form.changed_data if name in EDITABLE_OBSERVATION_FIELDS]
        return gettext("Changed %(fields)s, %(note)s.") % {"fields": ", ".join(fields), "note": note} if message else ""

    def lookup_allowed(self, lookup, value, request=None):
        # The session page links to "all observations of this session" (?session=<id>).
        return lookup == "session" or super().lookup_allowed(lookup, value, request)

    # -- cells ------------------------------------------------------------------------------

    @admin.display(description=_("Title"), ordering="title")
    def short_title(self, obj):
        return clip(obj.title, 80)

    @admin.display(description=_("Type"), ordering="type")
    def kind(self, obj):
        return clip(obj.type, 40)

    @admin.display(description=_("Session"), ordering="session__started_at")
    def session_link(self, obj):
        return format_html(
            '<a href="{}" title="{} · {}"><code class="ilab-id">{}</code></a>',
            admin_url(self, Session, "change", obj.session_id),
            obj.session_id,
            obj.session.started_at.strftime("%Y-%m-%d %H:%M UTC"),
            str(obj.session_id)[:8],
        )

    @admin.display(description=_("Revised"), ordering="revision_count")
    def revised(self, obj):
        return times(obj.revision_count - 1)

    @admin.display(description=_("Repeated"), ordering="duplicate_count")
    def repeated(self, obj):
        return times(obj.duplicate_count - 1)

    happened = moment_column("happened_at", _("Happened"))
    updated = moment_column("updated_at", _("Updated"))


    @admin.display(description=_("Expires (in effect)"))
    def expiry(self, obj):
        return expiry_text(obj, get_config())

    # The change page shows times as the lists do (``when``), not in the locale's long form.
    @admin.display(description=_("Created"))
    def created(self, obj):
        return when(obj.created_at)

    @admin.display(description=_("Last seen"))
    def last_seen(self, obj):
        return when(obj.last_seen_at)

    @admin.display(description=_("Deleted"))
    def deleted(self, obj):
        return when(obj.deleted_at)

    @admin.display(description=_("State"), ordering="deleted_at")
    def state(self, obj):
        # When it expires goes under its state: the list has no room for a column of its own.
        state = badge("deleted" if obj.deleted_at else "live")
        ends = expiry(obj, get_config())[0]
        if ends is None:
            return state
        return format_html('{}<br><span class="ilab-expires">{} {}</span>', state, gettext("expires"), when(ends))

    @admin.display(description=_("History"))
    def history(self, obj):
        if obj.revision_count == 1 and obj.duplicate_count == 1:
            return gettext("Written once, never revised or repeated.")
        revised = ngettext("revised %(n)d time", "revised %(n)d times", obj.revision_count - 1) % {
            "n": obj.revision_count - 1
        }
        repeated = ngettext("saved again %(n)d time", "saved again %(n)d times", obj.duplicate_count - 1) % {
            "n": obj.duplicate_count - 1
        }
        return f"{revised}; {repeated}".capitalize()

    @admin.display(description=_("Revision history"))
    def revision_history(self, obj):
        revisions = ObservationRevision.objects.filter(observation=obj).order_by("-revision")[:INLINE_ROWS]
        rows = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            (
                (
                    r.revision,
                    r.type,
                    Truncator(r.title).chars(80),
                    Truncator(r.content).chars(200),
                    when(r.written_at),
                    when(r.replaced_at),
                )
                for r in revisions
            ),
        )
        if not rows:
            return _("No earlier versions.")
        return format_html(
            '<table class="ilab-revisions"><thead><tr><th>{}</th><th>{}</th><th>{}</th><th>{}</th>'
            "<th>{}</th><th>{}</th></tr></thead><tbody>{}</tbody></table>",
            gettext("Version"),
            gettext("Type"),
            gettext("Title"),
            gettext("Content"),
            gettext("Written"),
            gettext("Replaced"),
            rows,
        )

    # -- actions ------------------------------------------------------------------------------

    @admin.action(description=_("Soft-delete selected observations"), permissions=["change"])
    def soft_delete_selected(self, request, queryset):
        done = []
        for observation in queryset.live().select_related(None).only("id", "user_id", "type", "title"):
            try:
                observation_delete(user_id=observation.user_id, observation_id=observation.pk, scope=ALL)
                done.append(observation)
            except ObservationNotFound:
                pass  # deleted by someone else meanwhile: already in the wanted state
        message = ngettext("Soft-deleted %(count)d observation.", "Soft-deleted %(count)d observations.", len(done)) % {
            "count": len(done)
        }
        self._audit(request, done, gettext("Soft-deleted"))
        self.message_user(request, message, messages.SUCCESS)

    @admin.action(description=_("Restore selected observations"), permissions=["change"])
    def restore_selected(self, request, queryset):
        done, refused = [], 0
        for observation in queryset.deleted().select_related(None).only("id", "user_id", "type", "title"):
            try:
                observation_restore(user_id=observation.user_id, observation_id=observation.pk, scope=ALL)
                done.append(observation)
            except MemoryValidationError:
                refused += 1  # its topic_key is held by another live observation now
            except ObservationNotFound:
                pass
        self._audit(request, done, gettext("Restored"))
        self.message_user(
            request,
            ngettext("Restored %(count)d observation.", "Restored %(count)d observations.", len(done))
            % {"count": len(done)},
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

    def _audit(self, request, observations, what: str) -> None:
        """One log entry per observation the action changed, saying how many it changed in all."""
        count = len(observations)
        message = ngettext(
            "%(what)s (an action on %(count)d observation).", "%(what)s (an action on %(count)d observations).", count
        ) % {"what": what, "count": count}
        audit(request, Observation, ((o.pk, o) for o in observations), flag=CHANGE, message=message)
