"""core-to-core-latency's own result files (MIT, LICENSE-MIT beside them), laid by CI in
``../shared/fixtures/peer-results/core-to-core-latency``: its ``--csv`` matrices, one of its text
outputs, and ``published.csv``, an index of the files with what their publisher says of them."""

import csv
import re

#: The folder, relative to the shared fixtures (``shared_dir / PEERS``).
PEERS = "fixtures/peer-results/core-to-core-latency"
#: The index of the files: not a result.
INDEX = "published.csv"
#: Files of the folder that are not results (the index and the licence).
NOT_RESULTS = (INDEX, "LICENSE-MIT")


def peer_files(folder):
    """The result files of the folder, sorted: every ``*.csv`` but the index."""
    return sorted(p for p in folder.glob("*.csv") if p.name not in NOT_RESULTS)


def published(folder):
    """The index's rows, as dicts (file, published_as, published_median_latency, table)."""
    with open(folder / INDEX, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def published_ns(text):
    """The latencies (ns) a published median names: "8ns, 17ns, 18ns" -> [8.0, 17.0, 18.0]."""
    return [float(v) for v in re.findall(r"(\d+(?:\.\d+)?)\s*ns", text)]
