"""``make bench-scale``: the service measured at NFCorpus's size and at many times it.

A larger corpus is NFCorpus plus distractors made of its own sentences (:mod:`.corpus`), their
vectors composed from encoded sentences with a measured error (:mod:`.vectors`), both written so
that the ordinary indexer builds the index (:mod:`.prepare`). Each size is then indexed, served by
the real MCP server and measured from outside (:mod:`.measure`, :mod:`.quality`) in full and
zero-shot mode (:mod:`.run`); the report's records become ``docs/figures.json``'s ``scale``
section and the charts of ``docs/scale.md`` (:mod:`.charts`).
"""
