"""The memory API's routes. Mount them under any prefix: ``path("api/memory/", include("ilab_memory.api.urls"))``.

The last route answers every other path under that prefix with a JSON 404 (a slash-less path
names the slashed one), so mount anything else that shares the prefix before this include.
"""

from django.urls import path, re_path
from rest_framework.routers import SimpleRouter

from . import health, me, views

app_name = "ilab_memory_api"

router = SimpleRouter()
router.register("sessions", views.SessionViewSet, basename="session")
router.register("observations", views.ObservationViewSet, basename="observation")

urlpatterns = [
    path("health/", health.HealthView.as_view(), name="health"),
    path("metrics/", health.MetricsView.as_view(), name="metrics"),
    path("me/", me.MeView.as_view(), name="me"),
    path("context/", views.ContextView.as_view(), name="context"),
    path("stats/", views.StatsView.as_view(), name="stats"),
    path("export/", views.ExportView.as_view(), name="export"),
    path("import/", views.ImportView.as_view(), name="import"),
    path("forget/", views.ForgetView.as_view(), name="forget"),
    *router.urls,
    re_path(r"^.*$", views.NotFoundView.as_view(), name="not_found"),
]
