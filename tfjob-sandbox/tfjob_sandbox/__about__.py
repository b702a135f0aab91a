"""The sandbox distribution's version: the one place hatchling reads it from."""

__version__ = "0.1.0"
