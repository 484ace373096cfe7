"""pytest-groove: retrieval regression testing for Markdown knowledge bases."""

__all__: list[str] = []
