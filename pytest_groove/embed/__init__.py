"""Embedders: one protocol, backends registered by name (see :mod:`.registry`).

PYTEST_DONT_REWRITE
"""
