"""TaskFlow decorators of the provider (``@task.tfjob``)."""
