"""Knowledge repositories on Chroma: reading, structure-aware chunking, embeddings, retrieval, champion cases.

Import the submodules you need (``tda.knowledge.store``, ``.ingest``, ``.retrieval``, ``.cases``,
``.cli``); this package imports nothing heavy itself, so ``tda --help`` stays fast.
"""
