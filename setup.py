"""Declares the C extension; all other metadata is in pyproject.toml."""

import sys

import numpy
from setuptools import Extension, setup

if not sys.platform.startswith("linux"):
    # Thread pinning and sysfs topology are Linux interfaces; fail the build with a clear reason.
    sys.exit("corelat supports Linux only (it pins threads with pthread_setaffinity_np and reads sysfs)")

ext = Extension(
    "corelat._corelat",
    sources=[
        "csrc/module.c",
        "csrc/timer.c",
        "csrc/affinity.c",
        "csrc/team.c",
        "csrc/pingpong.c",
        "csrc/oneway.c",
        "csrc/locks.c",
        "csrc/smt.c",
    ],
    depends=["csrc/timer.h", "csrc/affinity.h", "csrc/team.h", "csrc/pingpong.h", "csrc/oneway.h", "csrc/locks.h", "csrc/smt.h", "csrc/spin.h"],
    include_dirs=[numpy.get_include(), "csrc"],
    define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_23_API_VERSION"), ("_GNU_SOURCE", "1")],
    extra_compile_args=["-std=c11", "-O2", "-Wall", "-Wextra"],
    libraries=["pthread"],
)

setup(ext_modules=[ext])
