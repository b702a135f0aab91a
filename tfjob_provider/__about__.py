"""The provider distribution's version, read by hatchling and ``get_provider_info``."""

__version__ = "0.1.0"
