"""The status codes measuring threads carry out of C (enum corelat_status, csrc/spin.h) reach Python from
the extension (``STATUS_CODES``), not as a copy: corelat._core.status maps exactly those codes, by name.
No kernel runs here (reading the extension's constants starts no thread), so the tests are pure."""

import pathlib
import re
import subprocess
import sys

import pytest

import corelat
from corelat._core import status
from corelat._core.binding import extension

SPIN_H = pathlib.Path(__file__).resolve().parent.parent / "csrc" / "spin.h"


def test_python_maps_exactly_the_c_status_codes():
    names = extension().STATUS_CODES
    assert isinstance(names, tuple) and names[0] == "OK"
    assert len(set(names)) == len(names)
    assert set(status.EXCEPTIONS) == set(names)
    assert status.codes() == {name: code for code, name in enumerate(names)}


def test_the_extension_names_the_codes_of_the_enum():
    # The names table (csrc/spin.c) against the enum itself: a code renamed or added in one place only.
    enum = SPIN_H.read_text().split("enum corelat_status {", 1)[1].split("};", 1)[0]
    found = {name: int(code) for name, code in re.findall(r"CORELAT_(\w+) = (\d+)", enum)}
    assert found.pop("STATUS_COUNT") == len(found)
    assert status.codes() == found


@pytest.mark.parametrize(("name", "err", "kind", "words"), [
    ("ETIMEOUT", 0, corelat.MeasurementTimeout, "the partner did not answer within 1.5 s"),
    ("ENOANSWER", 0, corelat.MeasurementTimeout, "stopped running and did not answer within 1.5 s + 0.5 s"),
    ("EMOVED", 3, status.ThreadMoved, "pinned to CPU 1 ran on CPU 3"),
    ("EPIN", 22, corelat.MeasurementError, "cannot pin a thread to CPU 1"),
    ("ETHREAD", 11, corelat.MeasurementError, "RLIMIT_NPROC"),
    ("ENOMEM", 0, corelat.MeasurementError, "out of memory for the thread on CPU 1"),
    ("EABORT", 0, corelat.MeasurementError, "measurement aborted"),
    ("EINVAL", 0, ValueError, "invalid arguments"),
    ("EINVAL", 1, corelat.MeasurementError, "a call failed"),
    ("OK", 0, corelat.MeasurementError, "measurement failed (status 0)"),
    ("ESTOP", 0, corelat.MeasurementError, "measurement failed (status "),
])
def test_each_code_becomes_its_exception(name, err, kind, words):
    e = status.exception("CPUs 0 and 1", status.codes()[name], 1, err, 1.5, 0.5, "the partner did not answer")
    assert type(e) is kind
    assert str(e).startswith("CPUs 0 and 1") and words in str(e)


def test_an_unknown_code_still_raises_a_measurement_error():
    e = status.exception("CPUs 0 and 1", 99, 1, 0, 1.0, 0.5, "the partner did not answer")
    assert type(e) is corelat.MeasurementError and "status 99" in str(e)


def test_the_module_imports_without_the_extension():
    code = ("import sys; sys.modules['corelat._corelat'] = None\n"
            "import corelat\n"
            "from corelat._core import status\n"
            "try:\n"
            "    status.codes()\n"
            "except corelat.CorelatError as e:\n"
            "    print('CorelatError:', e)\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert p.returncode == 0, p.stderr
    # elsewhere "measuring needs Linux"; on Linux x86-64 and aarch64, how to reinstall (issue 24)
    assert ("CorelatError: measuring needs Linux" in p.stdout
            or "CorelatError: this corelat was installed without its measuring core" in p.stdout), p.stdout
