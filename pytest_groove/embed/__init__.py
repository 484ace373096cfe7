"""Embedders: one protocol, backends registered by name (see :mod:`.registry`).

May import: ``errors`` and the standard library (each backend imports its model
package lazily).

PYTEST_DONT_REWRITE
"""
