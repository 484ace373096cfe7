"""Settings: ``groove.toml`` read into frozen records, the option table both doors
share, and the spelling of a retriever spec.

May import: ``errors``, ``shapes``, ``files``, ``text``, ``embed``, ``scoring``.

PYTEST_DONT_REWRITE
"""
