"""Query side: FTS5 query compilation, fusion, reranking, MMR, parent retriever.

PYTEST_DONT_REWRITE
"""
