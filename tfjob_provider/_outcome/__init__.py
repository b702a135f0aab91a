"""The end of a wait, pure: when it is over (:mod:`.wait`), how the task ends (:mod:`.task_ending`),
the report (:mod:`.report`) and the training's outputs (:mod:`.outputs`).
"""
