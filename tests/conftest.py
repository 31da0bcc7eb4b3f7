"""Shared fixtures and markers for the whole suite."""
