"""The demo site's URLs, and the memory API mounted again under ``/memory/v1/``: a client given
that mount must reach it, though the schema's paths carry ``/api/memory/``."""

from django.urls import include, path

from project.urls import urlpatterns as demo_urlpatterns

urlpatterns = [
    path("memory/v1/", include(("ilab_memory.api.urls", "ilab_memory_api"), namespace="memory_v1")),
    *demo_urlpatterns,
]
