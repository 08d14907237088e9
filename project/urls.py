from django.contrib import admin
from django.templatetags.static import static
from django.urls import include, path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

urlpatterns = [
    path("", RedirectView.as_view(url="/admin/", permanent=False)),
    # Browsers ask every site for /favicon.ico; the console's icon answers instead of a 404.
    path("favicon.ico", RedirectView.as_view(url=static("ilab_memory/icon.svg"), permanent=True)),
    path("admin/", admin.site.urls),
    # The schema and its docs page; the page's assets come from drf-spectacular-sidecar (no CDN).
    # Before the API's include: it answers every other path under its prefix with a JSON 404.
    path("api/memory/schema/", SpectacularAPIView.as_view(), name="ilab_memory_schema"),
    path("api/memory/docs/", SpectacularSwaggerView.as_view(url_name="ilab_memory_schema"), name="ilab_memory_docs"),
    path("api/memory/", include("ilab_memory.api.urls")),
]
