"""The demo site that mounts ilab_memory (and the ``python3 -m project`` bootstrap)."""
