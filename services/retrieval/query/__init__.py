"""Query time: encode a query, gather its evidence, compute features, and rank.

:mod:`.pipeline` is the entry point (what ``search_nfcorpus`` serves). It stands on the store
and the encoders below it and reads the records an index version holds (:mod:`.index_version`);
nothing here builds an index.
"""
