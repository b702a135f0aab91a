"""The demo (``make demo``) and the process harness it shares with the full-stack test.

Why outside both distributions: the demo is a development tool of this repository, not part of
what a user installs.  ``make demo`` runs ``python -m demo`` from the repository's root with its
``.venv`` (where both ``tfjob_provider`` and the sandbox it drives, ``tfjob_sandbox``, are
installed); the full-stack test in ``tests/e2e`` reuses its process harness, cluster observer and
Airflow set-up.  It needs a clone of the repository: the example DAGs and their trainer live in
``example_dags/``.

* :mod:`~demo.processes` — start in process groups, stop by PID, find leftovers;
* :mod:`~demo.sandbox_process` — the sandbox CLI as a child process;
* :mod:`~demo.airflow_setup` — a throw-away Airflow environment and DB;
* :mod:`~demo.observer` — an independent watch of TFJobs and pods;
* :mod:`~demo.outcomes`, :mod:`~demo.scenarios`,
  :mod:`~demo.summary`, :mod:`~demo.runner` — the demo itself.
"""
