"""Evaluation: question sets, metrics, runners and reports."""
