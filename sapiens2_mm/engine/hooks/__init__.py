"""engine hooks (filled by its task)."""
