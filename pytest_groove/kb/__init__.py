"""Knowledge-base side: walking, parsing, storing and indexing."""
