"""TFJobs on JobSet: :func:`tfjob_to_jobset` (the translation) and :func:`decide_jobset` (the
verdict, by the TFJob engine's rules); docs/guides/jobset.md, docs/adr/0022-jobset-backend.md.
"""

from __future__ import annotations

from tfjob_provider._jobset.translation import JobSetTranslationError, tfjob_to_jobset
from tfjob_provider._jobset.verdict import decide_jobset

__all__ = ["JobSetTranslationError", "decide_jobset", "tfjob_to_jobset"]
