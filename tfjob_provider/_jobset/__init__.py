"""TFJobs on JobSet (``jobset.x-k8s.io/v1alpha2``): the translation and the verdict, both pure.

:func:`tfjob_to_jobset` turns a TFJob manifest into a JobSet, refusing what JobSet cannot
express (:class:`JobSetTranslationError`); :func:`decide_jobset` judges a JobSet, its Jobs and
its pods with the TFJob engine's rules.  ``docs/guides/jobset.md`` has the mapping and its limits.
Standard library only.
"""

from __future__ import annotations

from tfjob_provider._jobset.translation import JobSetTranslationError, tfjob_to_jobset
from tfjob_provider._jobset.verdict import decide_jobset

__all__ = ["JobSetTranslationError", "decide_jobset", "tfjob_to_jobset"]
