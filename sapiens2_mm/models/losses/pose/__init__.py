"""models losses pose (filled by its task)."""
