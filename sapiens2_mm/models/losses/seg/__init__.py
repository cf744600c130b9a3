"""models losses seg (filled by its task)."""
