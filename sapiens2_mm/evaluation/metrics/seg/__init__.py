"""evaluation metrics seg (filled by its task)."""
