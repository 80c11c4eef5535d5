"""Benchmarks: latency and CPU per query of each server, memory, and what the seed's design costs.

``make bench`` runs :mod:`.latency` and :mod:`.model_memory`; every module is run with
``python -m devtools.bench.<name>`` and says in its docstring what it measures.
"""
