"""The load generator: an agent under a concurrency or a rate over time, and its report.

A run follows a load shape (:mod:`.shape`: stages held or ramped, after a warm-up kept apart;
the command line's :mod:`.options`), writes a progress line as it goes (:mod:`.progress`) and
reports each stage (:mod:`.stages`). It asks every NFCorpus query in a seeded order (:mod:`.run`),
from one process or split across
several (:mod:`.workers`), whose reports a collector takes in a cluster (:mod:`.collector`) and
which merge into one (:mod:`.report`): its timeline (:mod:`.timeline`) and latencies in mergeable
histograms (:mod:`.histogram`), and its self-contained HTML page (:mod:`.html_page`) drawn with
inline SVG charts (:mod:`.svg_charts`), and Locust's CSV files (:mod:`.csv_files`). Budgets judge
the whole run (:mod:`.thresholds`; a worker in a cluster judges the collector's merge,
:mod:`.verdict`) and set the command's exit status (:mod:`.outputs`). It asks through a lean A2A
client of its own (:mod:`.client`), which reads each answer with :mod:`.answers`, as the
locustfile of :mod:`services.green_agent.locust` does; it builds on
:mod:`services.green_agent.evaluation` (the replies, the failures and the contract check of
every answer) and never imports the assessment server.
"""
