"""What refusing hostile input costs: time and message length per case of the generated corpus.

"Costs nothing" means refused before any API call (the tests prove that through the sandbox's
request log) and cheaply: an alias bomb must be refused before it is expanded, a manifest nested
5,000 levels deep before anything recurses into it, and no message may grow with its input.  This
loads and validates every generated case of ``tests/unit/test_manifest_corpus.py`` plus the
corpus files, and prints the CPU time of the refusal and the length of ``str(ManifestError)``.
Run it on a quiet machine: ``.venv/bin/python benchmarks/bench_hostile_inputs.py``.  Not a timed
test.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the corpus of the unit tests

from tests.unit.test_manifest_corpus import CASES, GENERATED
from tfjob_provider.manifest import ManifestError, load_tfjob, validate_tfjob


def refuse(source: Any) -> tuple[float, int, int]:
    """(CPU milliseconds, message characters, problems) of refusing *source*."""
    started = time.process_time()
    try:
        validate_tfjob(load_tfjob(source))
    except ManifestError as error:
        elapsed = (time.process_time() - started) * 1000
        return elapsed, len(str(error)), len(error.problems)
    raise SystemExit(f"accepted: {source!r:.80}")


def main() -> None:
    rows = [(name, *refuse(source)) for name, (source, _expected) in GENERATED.items()]
    rows += [(path.name, *refuse(path)) for path in CASES]
    print(f"{'case':<44} {'CPU ms':>9} {'message':>8} {'problems':>9}")
    for name, milliseconds, length, problems in sorted(rows, key=lambda row: -row[1])[:25]:
        print(f"{name:<44} {milliseconds:9.1f} {length:8d} {problems:9d}")
    print(
        f"{len(rows)} cases: slowest {max(row[1] for row in rows):.1f} ms, "
        f"longest message {max(row[2] for row in rows)} characters"
    )


if __name__ == "__main__":
    main()
