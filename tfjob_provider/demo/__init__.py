"""The demo (``make demo``) and the process harness it shares with the full-stack test.

Why inside the package: ``make demo`` runs ``python -m tfjob_provider.demo`` from the repository's
``.venv``, next to the sandbox it drives (``tfjob_provider.sandbox``), and the full-stack test in
``tests/e2e`` reuses its process harness, cluster observer and Airflow set-up.  It needs a clone of
the repository (the example DAGs and their trainer live in ``example_dags/``).

* :mod:`~tfjob_provider.demo.processes` — start in process groups, stop by PID, find leftovers;
* :mod:`~tfjob_provider.demo.sandbox_process` — the sandbox CLI as a child process;
* :mod:`~tfjob_provider.demo.airflow_setup` — a throw-away Airflow environment and DB;
* :mod:`~tfjob_provider.demo.observer` — an independent watch of TFJobs and pods;
* :mod:`~tfjob_provider.demo.outcomes`, :mod:`~tfjob_provider.demo.scenarios`,
  :mod:`~tfjob_provider.demo.summary`, :mod:`~tfjob_provider.demo.runner` — the demo itself.
"""
