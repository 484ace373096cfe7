"""One adapter per retriever framework, behind one interface (:mod:`.base`), listed in
one table (:data:`.table.ADAPTERS`) in the order their objects are recognised.

An adapter knows one framework's shapes: how to recognise its retriever object and
call it with ``(query, limit)``, how to find the hits inside its answer, how to read
one hit's path, heading and score (honouring ``--retriever-path-key`` /
``--retriever-heading-key``), which keys hold them by default, who decides how many
hits come back, and how its messages name the fix.  ``external.py`` and
``hit_reader.py`` iterate the table; a new framework is one module here and one line
in the table.

May import: ``search``, ``kb.source``, ``errors`` and below (never the modules of
``search.retrievers`` beside this package, which import it).

PYTEST_DONT_REWRITE
"""
