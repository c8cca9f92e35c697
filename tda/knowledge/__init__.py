"""Knowledge repositories on Chroma: reading, structure-aware chunking, embeddings, retrieval, champion cases.

Import the submodules you need (``tda.knowledge.store``, ``.ingest``, ``.retrieval``, ``.cases``,
``.cli``); this package imports nothing heavy itself, so ``tda --help`` stays fast.
"""

from ..memory import defer_chroma_grpc_exporter

defer_chroma_grpc_exporter()  # before a submodule imports chromadb: its gRPC exporter stays unloaded (12 MB)
