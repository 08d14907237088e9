"""The DRF face of ilab_memory."""
