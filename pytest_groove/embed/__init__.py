"""Embedders: one protocol, backends registered by name (see :mod:`.registry`)."""
