"""evaluation metrics pose (filled by its task)."""
