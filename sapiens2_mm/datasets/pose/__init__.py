"""datasets pose (filled by its task)."""
