"""A stand-in for a distributed TensorFlow training program, for the example DAGs and the demo.

Why it exists: the example DAGs must show what a TFJob does under Airflow — replicas that find
each other through ``TF_CONFIG``, a chief that decides success, parameter servers that serve
until the job ends, checkpoints that let a recreated pod or a retried task resume, and crashes
with chosen exit codes that exercise each restart and retry policy — on a laptop without
TensorFlow or GPUs as much as on a real cluster.  Everything here is standard-library Python;
``--tensorflow`` switches to a real ``MultiWorkerMirroredStrategy`` job when TensorFlow is
installed.  Run it as ``python path/to/trainer`` or ``python -m trainer``; see
``docs/guides/examples.md`` for the options.
"""
