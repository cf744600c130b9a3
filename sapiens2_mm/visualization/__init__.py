"""Visualizers."""
