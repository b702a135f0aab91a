"""The provider distribution's version: the one place hatchling and ``get_provider_info`` read it from."""

__version__ = "0.1.0"
