"""TFJobs on JobSet (``jobset.x-k8s.io/v1alpha2``): the translation and the verdict, both pure.

:mod:`.translation` turns a TFJob manifest into a JobSet (``tfjob_to_jobset``), refusing what
JobSet cannot express; :mod:`.verdict` judges a JobSet, its Jobs and its pods with the TFJob
engine's rules (``decide_jobset``).  ``docs/jobset.md`` has the mapping and its limits.
Standard library only.
"""
