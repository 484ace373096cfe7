"""The built-in hybrid search: vector and full-text legs, reciprocal rank fusion,
document-first ordering, note order, reranking, MMR, the parent retriever.

May import: ``search.query``, ``search`` (root records), ``kb`` and everything below.

PYTEST_DONT_REWRITE
"""
