"""The Airflow side shared by the operator and the sensor: carrying out a task's ending
(:mod:`.carrying_out`), failing bad templates fast (:mod:`.fail_fast_templates`) and coercing
parameters (:mod:`.task_params`).
"""
