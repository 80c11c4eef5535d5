"""The load generator: an agent under a concurrency or a rate over time, and its report.

A run follows a load shape (:mod:`.shape`: stages held or ramped, after a warm-up kept apart),
writes a progress line as it goes (:mod:`.progress`) and asks every NFCorpus query in a seeded
order (:mod:`.run`). Each outcome is folded into the report's figures as it ends, none kept
(:mod:`.recorder`): the histograms (:mod:`.histogram`), the timeline (:mod:`.timeline`) and each
stage (:mod:`.stages`). A run is one process or several (:mod:`.workers`); in a cluster their
figures stream to a collector as they run (:mod:`.collector`, served by :mod:`.collector_app`)
and merge into one report (:mod:`.report`), whose self-contained HTML page (:mod:`.html_page`,
inline SVG charts of :mod:`.svg_charts`) is live until the run is complete, and Locust's CSV
files (:mod:`.csv_files`). Budgets judge the whole run (:mod:`.thresholds`; a worker in a cluster
judges the collector's merge, :mod:`.verdict`) and set the command's exit status
(:mod:`.outputs`). It asks through a lean A2A client of its own (:mod:`.client`), which reads
each answer with :mod:`.answers`, as the locustfile of :mod:`services.green_agent.locust` does;
it builds on :mod:`services.green_agent.evaluation` (the replies, the failures and the contract
check of every answer) and never imports the assessment server. Its command line is
:mod:`services.green_agent.commands`.
"""
