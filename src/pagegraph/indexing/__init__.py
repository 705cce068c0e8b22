"""Loaders -> section tree -> chunks -> stores, with a manifest and incremental updates."""
