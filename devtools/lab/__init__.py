"""The ranker lab: dev-only experiments on the ranker's features and settings.

``make ranker-lab`` (``python -m devtools.lab.ranker_lab``) builds the candidates once
(:mod:`.data`), computes feature sets (:mod:`.features`) and runs the experiments
(:mod:`.experiments`); test qrels are never read for fitting.
"""
