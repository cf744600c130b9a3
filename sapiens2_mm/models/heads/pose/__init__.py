"""models heads pose (filled by its task)."""
