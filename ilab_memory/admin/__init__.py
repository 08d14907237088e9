"""The operator console: browse sessions and observations, tell Auto from Human summaries,
see the state of memory at a glance, and leave an audit trail of every change.

Rows are created only by the services, so nobody can add them here and nobody can hard-delete
them (erasure is ``mem_forget_user``). Every edit and action goes through the services, with the
same redaction and limits as the other faces, and writes Django's admin log. Lists stay fast on
big tables: related rows joined, counts as per-page subqueries, long texts left out of list
queries, and no full-table count.

Modules: ``common`` (lists, filters, cells, the audit), ``sessions``, ``observations``,
``console`` (the overview, a user's page, export and erasure), ``selectors`` (what the console
reads beyond the lists) and ``charts`` (SVG geometry).

``REGISTER_ADMIN`` is read once, when Django imports this module at startup (autodiscover);
changing it later needs a restart.
"""

from __future__ import annotations

from django.contrib import admin

from ..conf import get_config
from ..models import Observation, Session
from .common import CappedCountPaginator, SummaryKindFilter, TypeFilter, UserIdFilter
from .observations import ObservationAdmin, ObservationAdminForm
from .sessions import INLINE_ROWS, SessionAdmin, SessionAdminForm

__all__ = [
    "INLINE_ROWS",
    "CappedCountPaginator",
    "ObservationAdmin",
    "ObservationAdminForm",
    "SessionAdmin",
    "SessionAdminForm",
    "SummaryKindFilter",
    "TypeFilter",
    "UserIdFilter",
    "register",
]


# The admin index with a link to the console's overview (the app list shows only the models).
INDEX_TEMPLATE = "admin/ilab_memory/index.html"


def register(site: admin.AdminSite = admin.site) -> bool:
    """Register the models on ``site`` unless ``REGISTER_ADMIN`` is off; returns whether it did.
    A site without an ``index_template`` of its own gets one that links the console's overview."""
    if not get_config().REGISTER_ADMIN:
        return False
    site.register(Session, SessionAdmin)
    site.register(Observation, ObservationAdmin)
    if site.index_template is None:
        site.index_template = INDEX_TEMPLATE
    return True


register()
