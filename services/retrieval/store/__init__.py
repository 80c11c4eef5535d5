"""Qdrant access behind one small interface; :func:`open_store` picks the backend.

``embedded``: :class:`~.edge.EdgeStore`, Qdrant's engine in-process through qdrant-edge;
``server``: :class:`~.server.ServerStore`, qdrant-client against a server or its local mode.
"""

from __future__ import annotations

from services.retrieval.settings import StoreSettings
from services.retrieval.store.base import Store


def open_store(settings: StoreSettings) -> Store:
    """The backend the settings ask for: ``embedded`` (the default) or ``server``."""
    if settings.backend == "embedded":
        from services.retrieval.store.edge import EdgeStore

        return EdgeStore(
            settings.edge_path,
            private_copy=settings.edge_private_copy,
            index=settings.dense_index,
            segment_points=settings.edge_segment_points,
        )
    from services.retrieval.store.server import ServerStore

    return ServerStore(
        url=settings.qdrant_url,
        api_key=settings.qdrant_api_key,
        path=settings.qdrant_path,
        index=settings.dense_index,
        layout=settings.server_layout,
        grpc_port=settings.qdrant_grpc_port,
    )
