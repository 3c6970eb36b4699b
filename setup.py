"""Declares the C extension; all other metadata is in pyproject.toml.

The extension (the measuring core) pins threads and reads sysfs, which are Linux interfaces, so it is
built on Linux only. Elsewhere, or with ``CORELAT_NO_EXTENSION=1``, the package installs without it:
loading, analysing, comparing and plotting result files work, and ``corelat.measure()`` raises a
``CorelatError`` that says measuring needs Linux.
"""

import glob
import os
import sys

from setuptools import Extension, setup


def extensions():
    if not sys.platform.startswith("linux") or os.environ.get("CORELAT_NO_EXTENSION", "") not in ("", "0"):
        return []
    import numpy  # a build requirement (pyproject.toml); imported here so a pure build needs none

    # Every C file but the Python-free selftest (the Makefile's rule too), so a new kernel needs no edit.
    sources = sorted(f for f in glob.glob("csrc/*.c") if f != "csrc/selftest.c")
    return [
        Extension(
            "corelat._corelat",
            sources=sources,
            depends=sorted(glob.glob("csrc/*.h")),
            include_dirs=[numpy.get_include(), "csrc"],
            define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_23_API_VERSION"), ("_GNU_SOURCE", "1")],
            extra_compile_args=["-std=c11", "-O2", "-Wall", "-Wextra"],
            libraries=["pthread"],
        )
    ]


setup(ext_modules=extensions())
