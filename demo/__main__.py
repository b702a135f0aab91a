"""``python -m demo`` (``make demo``): run the example DAGs on the sandbox and summarise.

Exit status 0 when every scenario ended as expected and no process was left behind, 1 otherwise,
2 when the demo could not run at all (e.g. not started from a clone of the repository).
"""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from demo.airflow_setup import EXAMPLE_DAGS, REPOSITORY
from demo.runner import DemoSettings, run_demo
from demo.scenarios import SCENARIOS


def _exit_on_sigterm(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m demo", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--workdir",
        type=Path,
        default=REPOSITORY / ".demo",
        help="directory for the run (emptied first; default: .demo in the repository)",
    )
    parser.add_argument(
        "--only",
        action="append",
        choices=[scenario.key for scenario in SCENARIOS],
        help="run only these scenarios (repeatable; default: all)",
    )
    parser.add_argument(
        "--step-seconds", type=float, default=0.25, help="trainer seconds per step (default 0.25)"
    )
    parser.add_argument(
        "--tf-python",
        type=Path,
        help="run the trainer with this interpreter, which has TensorFlow (make demo-tf: "
        ".venv-tf/bin/python), as real distributed TensorFlow",
    )
    parser.add_argument(
        "--dag-timeout",
        type=float,
        help="seconds one `airflow dags test` may take (default 240; 900 with --tf-python)",
    )
    args = parser.parse_args(argv)
    if not (EXAMPLE_DAGS / "trainer").is_dir():
        print(
            f"The demo runs the example DAGs of a clone of the repository; {EXAMPLE_DAGS} is missing.",
            file=sys.stderr,
        )
        return 2
    # SIGTERM (e.g. a CI timeout) unwinds like Ctrl-C, so every process the demo started is stopped.
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    scenarios = [scenario for scenario in SCENARIOS if not args.only or scenario.key in args.only]
    if args.tf_python is not None and not args.tf_python.exists():
        print(f"--tf-python {args.tf_python} does not exist: run `make venv-tf` first", file=sys.stderr)
        return 2
    # Real TensorFlow imports for seconds in every replica process: give each DAG more time.
    dag_timeout = args.dag_timeout or (900.0 if args.tf_python is not None else 240.0)
    settings = DemoSettings(
        workdir=args.workdir,
        step_seconds=args.step_seconds,
        scenarios=scenarios,
        # absolute(), not resolve(): a venv's python is a symlink to the base interpreter, and
        # run through the resolved path it would not see the venv's packages.
        tf_python=args.tf_python.absolute() if args.tf_python is not None else None,
        dag_timeout=dag_timeout,
    )
    report = run_demo(settings)
    print(report.summary, flush=True)
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
