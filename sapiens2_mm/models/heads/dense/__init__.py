"""models heads dense (filled by its task)."""
