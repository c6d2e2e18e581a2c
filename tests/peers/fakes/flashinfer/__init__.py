"""Fake flashinfer (see ../README.md)."""
__version__ = "0.7.2.post1+fake"
