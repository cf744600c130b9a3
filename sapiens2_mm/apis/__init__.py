"""High-level inference APIs."""
