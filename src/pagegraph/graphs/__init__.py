"""Wiring only: one module per graph."""
