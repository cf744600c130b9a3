"""models losses dense (filled by its task)."""
