"""Adapters that put ilab_memory behind other frameworks' memory interfaces (each an extra)."""
