"""The package version: include/xstage.h's (setup.py checks that they agree)."""
__version__ = "0.2.0"
