"""The DRF face of ilab_memory (the ``api`` extra: ``pip install 'ilab-memory[api]'``)."""

from ..extras import require

require("api")
