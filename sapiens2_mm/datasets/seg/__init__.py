"""datasets seg (filled by its task)."""
