"""Optimizer-wrapper constructors."""
