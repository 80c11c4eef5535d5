"""Index time: encode the corpus, train the ranker, and write one versioned index.

``python -m services.retrieval.indexing.index`` runs it (:mod:`.index`). It uses the query-time
code below it to compute the ranker's training features exactly as they are served.
"""
