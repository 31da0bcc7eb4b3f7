"""Build shim: metadata lives in setup.cfg.

setuptools ignores `cffi_modules` when it is written in setup.cfg, so C
extensions built with cffi are declared here instead (cffi itself is a build
requirement in pyproject.toml).
"""
from setuptools import setup

setup(cffi_modules=["system/_perf_build.py:ffibuilder"])
