"""_results"""

# schema registers each kind's file checks with the Result base (corelat._core.protocol) when it is
# imported: imported here, they are in place whichever result class is imported first.
from corelat._results import schema as _schema  # noqa: F401
