"""The console's own pages: the overview across users, one user's page, export and erasure.

They hang on the session admin's URLs (``admin/ilab_memory/session/overview/``, ``.../user/<id>/``)
so the app needs no model of its own for them, and they take the session and observation
permissions. Reads go through the selectors, writes through the services, as everywhere else.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.contrib import messages
from django.contrib.admin.models import DELETION
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404, HttpResponseRedirect, StreamingHttpResponse
from django.template.response import TemplateResponse
from django.urls import NoReverseMatch, path, reverse
from django.utils import timezone
from django.utils.http import urlencode
from django.utils.translation import gettext, ngettext

from .. import selectors
from ..adapter import user_id_is_primary_key
from ..conf import get_config
from ..exceptions import ValidationError as MemoryValidationError
from ..models import Observation, Session
from ..scopes import ALL, SHARED
from ..services.erasure import user_forget
from ..services.export import user_export_json
from ..services.search import observation_search
from ..validation import clean_user_id
from . import selectors as admin_selectors
from .charts import bar_rows, day_columns
from .common import SHARED_CHOICE, SHARED_LABEL, SOON, admin_url, audit, duration, error_text

USER_ROWS = 20
SEARCH_RESULTS = 20


def urls(model_admin) -> list:
    wrap = model_admin.admin_site.admin_view

    def view(fn):
        return wrap(lambda request, **kwargs: fn(model_admin, request, **kwargs))

    return [
        path("overview/", view(overview_view), name="ilab_memory_overview"),
        path("user-export/<path:user_id>/", view(user_export_view), name="ilab_memory_user_export"),
        path("user-forget/<path:user_id>/", view(user_forget_view), name="ilab_memory_user_forget"),
        path("user/<path:user_id>/", view(user_view), name="ilab_memory_user"),
    ]


def may_view(request) -> bool:
    return request.user.has_perms(["ilab_memory.view_session", "ilab_memory.view_observation"])


def may_forget(request) -> bool:
    """Erasure removes sessions and observations: it needs both delete permissions."""
    return request.user.has_perms(["ilab_memory.delete_session", "ilab_memory.delete_observation"])


def _context(model_admin, request, title: str, **extra) -> dict:
    return {
        **model_admin.admin_site.each_context(request),
        "title": title,
        "opts": model_admin.model._meta,
        "app_label": model_admin.model._meta.app_label,
        "media": model_admin.media,
        **extra,
    }


# -- The overview --------------------------------------------------------------------------------


def overview_view(model_admin, request):
    if not may_view(request):
        raise PermissionDenied
    config = get_config()
    now = timezone.now()
    data = admin_selectors.overview(now=now, timeout_hours=config.SESSION_TIMEOUT_HOURS, config=config)

    def user_url(user_id):
        return reverse(f"{model_admin.admin_site.name}:ilab_memory_user", args=[user_id])

    context = _context(
        model_admin,
        request,
        gettext("Memory overview"),
        data=data,
        window_days=len(data.days),
        days_chart=day_columns(data.days),
        types_chart=bar_rows(data.memories_by_type),
        users_chart=bar_rows(data.busiest_users, link=user_url),
        timeout_hours=config.SESSION_TIMEOUT_HOURS,
        hybrid=config.EMBEDDER is not None,
        sessions_url=admin_url(model_admin, Session, "changelist"),
        can_close_idle=model_admin.has_change_permission(request),
        service_accounts=admin_selectors.service_accounts(),
        expiring_chart=bar_rows(data.expiring_by_type, link=lambda type_: _expiring_url(model_admin, type_)),
        expiring_total=sum(n for _type, n in data.expiring_by_type),
        retention=[(type_, duration(period)) for type_, period in sorted(config.RETENTION.items())],
    )
    return TemplateResponse(request, "admin/ilab_memory/overview.html", context)


def _expiring_url(model_admin, type_: str) -> str:
    """The observation list filtered to what of ``type_`` expires soon (``ExpiresFilter``)."""
    return f"{admin_url(model_admin, Observation, 'changelist')}?{urlencode({'expires': SOON, 'type': type_})}"


# -- One user ----------------------------------------------------------------------------------


def host_user_url(model_admin, user_id: str) -> str | None:
    """The admin page of the host's user behind ``user_id``, when the default rule made it (the
    user's primary key, ``adapter.user_id_is_primary_key``) and that user exists; None otherwise."""
    if not user_id_is_primary_key():
        return None  # a site's own rule cannot be run backwards
    user_model = get_user_model()
    try:
        pk = user_model._meta.pk.to_python(user_id)
    except (DjangoValidationError, ValueError, TypeError):
        return None
    if not user_model._default_manager.filter(pk=pk).exists():
        return None
    opts = user_model._meta
    try:
        return reverse(f"{model_admin.admin_site.name}:{opts.app_label}_{opts.model_name}_change", args=[pk])
    except NoReverseMatch:
        return None  # the host's user model is not in this admin


def _clean_user(user_id: str) -> str:
    try:
        return clean_user_id(user_id, limit=get_config().MAX_USER_ID_CHARS)
    except MemoryValidationError:
        raise Http404 from None  # not a user_id any row could carry


def _user_scope(request, user_id: str) -> str:
    """The ``scope`` parameter of a user's export or erasure: ``ALL`` when absent, else one of
    the scopes the user has (404 otherwise: there is nothing of that user to act on)."""
    scope = request.GET.get("scope", ALL)
    if scope != ALL and scope not in admin_selectors.user_scope_names(user_id=user_id, limit=None):
        raise Http404
    return scope


def scope_text(scope: str) -> str:
    """A scope as plain text (messages, the log): its slug, or the shared space's label."""
    return str(SHARED_LABEL) if scope == SHARED else scope


def _list_url(model_admin, model, user_id: str, scope: str | None = None) -> str:
    params = {"user_id": user_id}
    if scope is not None:
        params["scope"] = SHARED_CHOICE if scope == SHARED else scope
    return f"{admin_url(model_admin, model, 'changelist')}?{urlencode(params)}"


def user_view(model_admin, request, user_id: str):
    if not may_view(request):
        raise PermissionDenied
    user_id = _clean_user(user_id)
    config = get_config()
    query = request.GET.get("q", "")
    # The search reads as an agent of that scope does (the scope and the shared space), or
    # every scope; the service checks the value.
    read_as = request.GET.get("scope", ALL)
    results, search_error = None, None
    if query:
        try:
            found = observation_search(user_id=user_id, query=query, limit=SEARCH_RESULTS, scope=read_as,
                                       config=config)
            results = [(result, breakdown(result.score.breakdown if result.score else {})) for result in found]
        except MemoryValidationError as exc:
            search_error = error_text(exc)
    stats = selectors.stats(user_id=user_id, scope=ALL, config=config)
    scopes = [
        {
            "row": row,
            "scope": row.scope,
            "sessions_url": _list_url(model_admin, Session, user_id, row.scope),
            "observations_url": _list_url(model_admin, Observation, user_id, row.scope),
            "query": urlencode({"scope": row.scope}),
        }
        for row in admin_selectors.user_scopes(user_id=user_id, live_by_scope=stats.observations_by_scope)
    ]
    context = _context(
        model_admin,
        request,
        gettext("Memory of %(user_id)s") % {"user_id": user_id},
        user_id=user_id,
        stats=stats,
        scopes=scopes,
        read_as=read_as,
        hybrid=config.EMBEDDER is not None,
        sessions=admin_selectors.user_recent_sessions(user_id=user_id, limit=USER_ROWS),
        observations=admin_selectors.user_recent_observations(user_id=user_id, limit=USER_ROWS),
        query=query,
        results=results,
        search_error=search_error,
        host_user_url=host_user_url(model_admin, user_id),
        sessions_url=_list_url(model_admin, Session, user_id),
        observations_url=_list_url(model_admin, Observation, user_id),
        can_forget=may_forget(request),
    )
    return TemplateResponse(request, "admin/ilab_memory/user.html", context)


def breakdown(signals: dict) -> list[tuple[str, str]]:
    """A SearchScore's breakdown as short texts: numbers to three places, nested weights inline."""

    def text(value) -> str:
        if value is None:
            return "—"
        if isinstance(value, float):
            return f"{value:.3f}"
        if isinstance(value, dict):
            return ", ".join(f"{key} {text(item)}" for key, item in value.items())
        return str(value)

    return [(key, scope_text(value) if key == "scope" else text(value)) for key, value in signals.items()]


def user_export_view(model_admin, request, user_id: str):
    """The user's export document (the same as ``mem_export``), of every scope or of the one
    ``?scope=`` names, streamed as a download."""
    if not may_view(request):
        raise PermissionDenied
    user_id = _clean_user(user_id)
    scope = _user_scope(request, user_id)
    response = StreamingHttpResponse(user_export_json(user_id=user_id, scope=scope), content_type="application/json")
    name = user_id if scope == ALL else f"{user_id}-{scope or 'shared'}"
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)[:80]
    response["Content-Disposition"] = f'attachment; filename="ilab-memory-{safe}.json"'
    return response


def user_forget_view(model_admin, request, user_id: str):
    """Erase the user, or with ``?scope=`` one of its scopes, after a confirmation page."""
    if not may_forget(request):
        raise PermissionDenied
    user_id = _clean_user(user_id)
    scope = _user_scope(request, user_id)
    confirmed = request.method == "POST" and request.POST.get("confirm_forget") == "yes"
    if scope == ALL:
        if confirmed:
            forget(model_admin, request, [user_id])
            return HttpResponseRedirect(admin_url(model_admin, Session, "changelist"))
        return forget_confirmation(model_admin, request, [user_id], hidden=[])
    if confirmed:
        forget_scopes(model_admin, request, [(user_id, scope)])
        return HttpResponseRedirect(reverse(f"{model_admin.admin_site.name}:ilab_memory_user", args=[user_id]))
    return forget_confirmation(model_admin, request, [], targets=[(user_id, scope)], hidden=[])


# -- Erasure -------------------------------------------------------------------------------------


def forget_confirmation(model_admin, request, user_ids: list[str], *, hidden: list[tuple[str, str]],
                        targets: Sequence[tuple[str, str]] = ()):
    """The page that asks before an erasure: of whole users, or of (user_id, scope) ``targets``."""
    if targets:
        title = ngettext("Erase this scope of its user?", "Erase these scopes of their users?", len(targets))
    else:
        title = ngettext("Erase all data of this user?", "Erase all data of these users?", len(user_ids))
    context = _context(
        model_admin,
        request,
        title,
        user_ids=user_ids,
        targets=[(user_id, scope_text(scope)) for user_id, scope in targets],
        hidden=hidden,
    )
    return TemplateResponse(request, "admin/ilab_memory/forget_confirmation.html", context)


def forget(model_admin, request, user_ids: list[str]) -> None:
    """``user_forget`` for each user, a deletion entry in the admin log for each row it erased.

    The entries name sessions by user and date and observations by id only: an erasure must not
    leave the user's titles behind in the log (``user_forget`` makes earlier entries of those rows
    lose theirs too, whichever face erased them).
    """
    totals = {"sessions": 0, "observations": 0, "revisions": 0}
    for user_id in user_ids:
        _erase(request, user_id, ALL, totals)
    model_admin.message_user(
        request,
        ngettext(
            "Erased %(users)d user: %(sessions)s, %(observations)s, %(revisions)s.",
            "Erased %(users)d users: %(sessions)s, %(observations)s, %(revisions)s.",
            len(user_ids),
        )
        % {"users": len(user_ids), **_counted(totals)},
        messages.SUCCESS,
    )


def forget_scopes(model_admin, request, targets: list[tuple[str, str]]) -> None:
    """``user_forget`` of each (user_id, scope) in ``targets``: the users' other scopes stay.
    A deletion entry in the admin log for each row erased, as ``forget`` writes."""
    totals = {"sessions": 0, "observations": 0, "revisions": 0}
    erased = 0
    for user_id, scope in targets:
        try:
            _erase(request, user_id, scope, totals)
            erased += 1
        except MemoryValidationError as exc:
            # A scope the SCOPES setting no longer allows: say so, and erase the others.
            model_admin.message_user(request, f"{user_id} · {scope_text(scope)}: {error_text(exc)}", messages.ERROR)
    if not erased:
        return
    model_admin.message_user(
        request,
        ngettext(
            "Erased %(scopes)d scope: %(sessions)s, %(observations)s, %(revisions)s.",
            "Erased %(scopes)d scopes: %(sessions)s, %(observations)s, %(revisions)s.",
            erased,
        )
        % {"scopes": erased, **_counted(totals)},
        messages.SUCCESS,
    )


def _erase(request, user_id: str, scope: str, totals: dict) -> dict:
    """``user_forget`` of one user or one scope of it, its deletion entries, ``totals`` added up."""
    sessions, observation_ids = admin_selectors.user_rows_for_audit(user_id=user_id, scope=scope)
    counts = user_forget(user_id=user_id, scope=scope)
    for name in totals:
        totals[name] += counts.get(name, 0)
    if scope == ALL:
        message = gettext(
            "Erased with all data of user %(user_id)s: %(sessions)s, %(observations)s, %(revisions)s."
        ) % {"user_id": user_id, **_counted(counts)}
    else:
        message = gettext(
            "Erased with scope %(scope)s of user %(user_id)s: %(sessions)s, %(observations)s, %(revisions)s."
        ) % {"scope": scope_text(scope), "user_id": user_id, **_counted(counts)}
    audit(request, Session, sessions, flag=DELETION, message=message)
    audit(request, Observation, ((pk, pk) for pk in observation_ids), flag=DELETION, message=message)
    return counts


def _counted(counts: dict) -> dict:
    sessions, observations, revisions = counts["sessions"], counts["observations"], counts["revisions"]
    return {
        "sessions": ngettext("%(n)d session", "%(n)d sessions", sessions) % {"n": sessions},
        "observations": ngettext("%(n)d observation", "%(n)d observations", observations) % {"n": observations},
        "revisions": ngettext("%(n)d revision", "%(n)d revisions", revisions) % {"n": revisions},
    }
