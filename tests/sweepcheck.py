"""What a precision sweep's warnings must agree with, for the fake-clock tests and the emulated machine."""

import numpy as np

from corelat._measure.assemble import size_warnings
from corelat._results.latency import PairFlag
from corelat._system import validate as _validate

#: The flags that make a pair doubtful: each has a warning sentence of its own.
DOUBT = PairFlag.UNSTABLE | PairFlag.BIMODAL | PairFlag.MIGRATED | PairFlag.TARGET_NOT_MET


def assert_warnings_match_flags(r):
    """The warnings about pairs appear exactly when a pair is flagged doubtful, and a size the caller
    chose too small is warned about whatever the pairs did: the two kinds are counted apart, since a
    sweep of tiny samples can come out clean and still carry its size warning."""
    n = len(r.cpus)
    low = np.tril(np.ones((n, n), bool), -1)
    doubtful = (r.flags[low] & DOUBT) != 0
    params = r.metadata["parameters"]
    plan = _validate.check_sampling(**{k: params[k] for k in ("samples", "precision", "max_samples",
                                                               "max_time_per_pair") if k in params})
    size = size_warnings(params["round_trips"], plan, r.metadata["timer"])
    assert [w for w in r.warnings if w in size] == size, (r.warnings, size)
    about_pairs = [w for w in r.warnings if w not in size]
    assert bool(about_pairs) == bool(doubtful.any()), (about_pairs, int(doubtful.sum()))
    return doubtful
