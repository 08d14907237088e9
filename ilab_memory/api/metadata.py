"""OPTIONS answers that describe what a client may send, not the shape it gets back."""

from __future__ import annotations

from rest_framework.metadata import SimpleMetadata

WRITE_METHODS = ("POST", "PUT", "PATCH")


class InputMetadata(SimpleMetadata):
    """Each write method lists its input serializer's fields, then the resource's other fields as
    read-only: ``id``, ``session_id`` or ``revision_count`` are set by the server, never sent."""

    def determine_metadata(self, request, view):
        metadata = super().determine_metadata(request, view)
        if "actions" not in metadata:  # DRF describes only generic views; plain ones have inputs too
            actions = self.determine_actions(request, view)
            if actions:
                metadata["actions"] = actions
        return metadata

    def determine_actions(self, request, view):
        actions = {}
        resource = getattr(view, "serializer_class", None)
        for method in WRITE_METHODS:
            serializer_class = view.input_serializer_class(method) if method in view.allowed_methods else None
            if serializer_class is None:
                continue
            fields = self.get_serializer_info(serializer_class())
            if resource is not None:
                for name, info in self.get_serializer_info(resource()).items():
                    fields.setdefault(name, {**info, "required": False, "read_only": True})
            actions[method] = fields
        return actions
