"""Query side: FTS5 query compilation, fusion, reranking, MMR, parent retriever."""
