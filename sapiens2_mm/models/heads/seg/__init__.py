"""models heads seg (filled by its task)."""
