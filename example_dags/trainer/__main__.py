"""Entry point: ``python path/to/trainer [options]`` (a directory run) or ``python -m trainer``.

Why the path juggling: a container runs the program as ``python /opt/trainer``, which executes
this file with the *trainer directory* on ``sys.path``, not its parent, so the package's own
absolute imports (``trainer.program``) would fail without it.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from trainer.program import main

if __name__ == "__main__":
    sys.exit(main())
