"""Development tooling, each module run with ``python -m``.

``make run`` (``stack``), benchmarks (``bench``), quality reports and the rankings digest
(``eval``), the ranker lab (``lab``), the dashboard's view of a load run (``observe``), faults
under load (``reliability``) and the headline figures the pages quote (``figures``).

No server imports it; it starts servers through the harness (``harness``) and never imports the
tests.
"""
