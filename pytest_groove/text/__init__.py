"""Text shared by every layer: plain-text primitives, Japanese scripts, the query's
lexical layer, the trigram table's folding, quoting values back and writing to a terminal.

May import: :mod:`pytest_groove.errors` and the standard library.

PYTEST_DONT_REWRITE
"""
