"""The NFCorpus benchmark itself: BEIR files, download, and the trec_eval ranking measures.

Both the system (the indexer reads the corpus and the training judgements) and the evaluators (the
green agent reads the test judgements and scores rankings) depend on this package; it depends on
neither of them.
"""
