"""ilab_memory: durable, per-user memory for AI agents.

Importing this package does not need Django to be configured.
"""

from .facade import ILabMemory

__all__ = ["ILabMemory"]
