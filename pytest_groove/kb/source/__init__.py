"""The knowledge base as its files say: the walk (ignore rules, exclusions), the
parsers (Markdown sections, plain text), the records they produce, the corpus digest,
and the KB read straight from disk without an index.

May import: everything below ``kb`` (``errors`` .. ``settings``).

PYTEST_DONT_REWRITE
"""
