"""Fake fla (see ../README.md): remembers the backend-dispatch setting it was imported under."""
import os

__version__ = "0.6.0+fake"
DISPATCH_ENV_AT_IMPORT = os.environ.get("FLA_DISABLE_BACKEND_DISPATCH")
