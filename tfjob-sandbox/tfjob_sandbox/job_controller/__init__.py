"""The batch/v1 Job controller, following kubernetes pkg/controller/job: a pure sync pass and its driver."""
