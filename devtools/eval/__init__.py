"""Quality reports: NDCG through the real servers, per search backend, and the rankings digest.

``make eval-quality`` runs :mod:`.quality`, ``make rankings`` :mod:`.rankings`; :mod:`.backends`
compares the purple agent's search backends (MCP, REST) on the same queries.
"""
