"""Nested groups of cores whose latency rows look alike: the block model behind ``structure()``.

A group is a set of cores with the same latency to every other core (a block of the matrix), whether
it is faster inside than across (an L3 cache, a socket) or slower (an E-core cluster bouncing a line
inside its shared L2). Groups are found by **row-profile similarity**: the distance between two cores
is the RMS difference of their log-latency rows, over the other cores only (so neither the diagonal
nor the pair's own latency counts; SMT siblings are merged into cores before this). An average-linkage
tree over those distances proposes partitions; the finest partition whose every group is clearly
distinguishable from its nearest group is the finest level. Coarser levels are found the same way on
the matrix between the groups of the level below, so every level refines the next coarser one.

"Clearly distinguishable" is a block test on the core pairs the level decides (pairs in different
groups of the finer level): two groups differ when, towards some group, their mean log latencies
differ by at least :data:`SEP_SIGMA` residual standard deviations, :data:`Z_MIN` standard errors and
:data:`MIN_REL` in relative terms. A smooth gradient (a mesh, a ring) leaves residuals as large as the
steps between regions and yields no level.
"""

import math

import numpy as np

from corelat._core.extras import require

#: A difference between blocks must exceed this many residual standard deviations (robust, pooled).
SEP_SIGMA = 3.0
#: ... this many standard errors of the difference between the two block means.
Z_MIN = 5.0
#: ... and this relative size (8 %): measurement noise on shared machines is a few percent.
MIN_REL = math.log(1.08)
#: ... and this many ns: below it lie timer steps (a 3-run average of a 5 ns timer moves by 1.7 ns)
#: and the jitter of shared machines.
MIN_NS = 2.0
#: Gap test: the median unit of two groups must be this much nearer (in row distance) to its own
#: group than to the other (a silhouette: clean blocks give 0.8-1; noisy ones less, a gradient cut
#: into arcs about as little).
SILHOUETTE = 0.5
#: Two groups whose rows differ by the same factor everywhere are a class of slower cores only when
#: the factor is this large (a few percent is one core's clock or its place on a ring).
CLASS_REL = math.log(1.25)
#: Singleton groups (one core) are folded into their nearest group when at most this share of the
#: cores is alone; cuts with more lone cores are not groupings.
MAX_LONE = 0.25
#: A lone core joins its nearest group only when its rows are this much nearer to it than to the next.
LONE_CLEAR = 0.8
#: :func:`noise_ratio` above which a matrix is indistinguishable from noise (noise gives 0.8-1).
NOISE_RATIO = 0.6
#: Fewer cores than this cannot tell noise from structure.
NOISE_MIN_CORES = 6


#: Groups are searched among at most this many cores. The search tries every cut of a linkage tree,
#: each costing a pass over the matrix: its time grows with the cube of the cores (300 cores: 5 s,
#: 500: 30 s on a loaded 2-vCPU VM). Larger matrices get SMT siblings and the latency between cores,
#: and a note that groups were not searched.
MAX_GROUPED_CORES = 512
#: Rows per matrix product in :func:`profile_distance`: BLAS holds the interpreter for a whole product,
#: so Ctrl-C waits for it; slices keep that wait short on matrices of thousands of rows.
_ROWS_PER_PRODUCT = 256


def profile_distance(m):
    """RMS difference of rows over the columns valid in both (NaN diagonal: a, b never count)."""
    w = (~np.isnan(m)).astype(np.float64)
    x = np.where(w > 0, m, 0.0)
    x2 = x * x
    if m.shape[0] <= _ROWS_PER_PRODUCT:
        s = x2 @ w.T + w @ x2.T - 2.0 * (x @ x.T)
        cnt = w @ w.T
    else:
        s, cnt = _sliced_products(x, x2, w)
    d = np.sqrt(np.maximum(s, 0.0) / np.maximum(cnt, 1.0))
    if (cnt == 0).any():
        d[cnt == 0] = d.max() if d.size else 0.0
    np.fill_diagonal(d, 0.0)
    return (d + d.T) / 2.0


def _sliced_products(x, x2, w):
    """:func:`profile_distance`'s sums, a slice of rows at a time (a signal is handled between slices)."""
    n = x.shape[0]
    s, cnt = np.empty((n, n)), np.empty((n, n))
    for a in range(0, n, _ROWS_PER_PRODUCT):
        b = slice(a, a + _ROWS_PER_PRODUCT)
        s[b] = x2[b] @ w.T + w[b] @ x2.T - 2.0 * (x[b] @ x.T)
        cnt[b] = w[b] @ w.T
    return s, cnt


def too_many_cores(m):
    """The note of a reading that did not search groups among ``m`` cores, or "" when it did."""
    if m <= MAX_GROUPED_CORES:
        return ""
    return (f"{m:,} cores: latency groups are searched among at most {MAX_GROUPED_CORES:,} (the search "
            "grows with the cube of the cores); SMT siblings and the latency between cores are read")


def group_means(x, labels, k):
    """(k x k means of x over the valid entries by row and column label, counts)."""
    valid = ~np.isnan(x)
    cell = (labels[:, None] * k + labels[None, :])[valid]
    cnt = np.bincount(cell, minlength=k * k).reshape(k, k).astype(np.float64)
    tot = np.bincount(cell, weights=x[valid], minlength=k * k).reshape(k, k)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(cnt > 0, tot / np.where(cnt > 0, cnt, 1.0), np.nan)
    return mean, cnt


def _relabel(labels):
    """Labels 0..k-1 in order of first appearance."""
    _, first, inv = np.unique(labels, return_index=True, return_inverse=True)
    rank = np.argsort(np.argsort(first))
    return rank[inv].astype(np.intp)


def distinguishable(x, fine, labels, first=True, noise=0.0, dist=None, min_rel=MIN_REL):
    """True when every group of ``labels`` differs clearly from its nearest group (see module doc).

    ``x`` is the cores' log-latency matrix (NaN diagonal), ``fine`` the finer level's labels: only
    pairs in different fine groups count (pairs inside one belong to that finer level). ``noise``
    (per core, or one number) is a floor for the spread of one pair's value (:func:`pair_noise`):
    the spread around a candidate's own block means is too small when its blocks are small enough
    to fit the noise. Per core, the floor of two groups is their own cores' median: noisy P-cores
    must not hide the E-core clusters.
    ``dist`` (profile distances between the fine groups) adds the gap test: the rows of two groups
    must be farther apart than the rows inside either. A gradient (a ring, a mesh) cut into arcs
    fails it: the two ends of one arc differ more than neighbours across the cut.
    ``min_rel`` is the smallest relative difference that counts (:data:`MIN_REL`; more where the
    noise cannot be estimated).
    """
    k = int(labels.max()) + 1
    xs = np.where(fine[:, None] != fine[None, :], x, np.nan)
    mean, cnt = group_means(xs, labels, k)
    if not (cnt > 0).any():
        return False
    pairs = np.maximum(cnt - np.diag(np.diag(cnt)) / 2.0, 1.0)
    if dist is not None:
        unit_lab = np.empty(dist.shape[0], dtype=np.intp)
        unit_lab[fine] = labels
    resid = np.abs(xs - mean[labels[:, None], labels[None, :]])
    mad, _ = group_means(resid, labels, k)
    mad = np.nan_to_num(mad)
    # Nearest group: block-mean rows compared over every column block, the two groups' own
    # included (inside g against h-to-g). Without them two opposite arcs of a ring look alike.
    gd = profile_distance(mean)
    np.fill_diagonal(gd, np.inf)
    for g in range(k):
        h = int(np.argmin(gd[g]))
        both = np.flatnonzero((cnt[g] > 0) & (cnt[h] > 0))
        if both.size == 0:
            return False
        if dist is not None and not _gap(dist, unit_lab, g, h):
            return False
        diff = mean[g, both] - mean[h, both]
        # The spread that matters for a column block is that of the two blocks compared (mean
        # absolute residual, x1.25 for a normal spread; a few odd pairs do not dominate it),
        # floored by the two groups' own cores' pair noise: a column where both happen to be quiet
        # (quantised timers) does not count for more than the noise of their rows.
        local = float(np.median(noise[(labels == g) | (labels == h)])) if np.ndim(noise) else noise
        spread = np.maximum(1.25 * np.sqrt((mad[g, both] ** 2 + mad[h, both] ** 2) / 2.0), local)
        se = spread * np.sqrt(1.0 / pairs[g, both] + 1.0 / pairs[h, both])
        # A pattern: the difference changes from one column block to another (the CPUs of one
        # group are near some CPUs and far from others). A constant difference is each CPU's own
        # speed (clock, ring stop), real only when large: a class of uniformly slower cores.
        offset = float(np.median(diff))
        dev = np.abs(diff - offset)
        ns = dev * np.exp(np.maximum(mean[g, both], mean[h, both]))
        if ((dev >= np.maximum(np.maximum(SEP_SIGMA * spread, min_rel), Z_MIN * se)) & (ns >= MIN_NS)).any():
            continue
        offset_ns = abs(offset) * math.exp(float(np.median(mean[g, both])))
        if (offset_ns >= MIN_NS
                and abs(offset) >= max(SEP_SIGMA * float(np.median(spread)), CLASS_REL if first else min_rel)
                and abs(offset) >= Z_MIN * float(np.median(se))):
            continue
        return False
    return True


def _gap(dist, unit_lab, g, h):
    """True when the rows of groups g and h (units) are clearly farther apart than rows inside them.

    A silhouette: per unit, a = mean distance to its own group's other units, b = mean distance
    to the other group's; (b - a) / max(a, b) must reach :data:`SILHOUETTE` for the median unit.
    """
    a_units, b_units = np.flatnonzero(unit_lab == g), np.flatnonzero(unit_lab == h)
    scores = []
    for own, other in ((a_units, b_units), (b_units, a_units)):
        if own.size < 2:
            continue
        a = dist[np.ix_(own, own)].sum(axis=1) / (own.size - 1)
        b = dist[np.ix_(own, other)].mean(axis=1)
        scores.append((b - a) / np.maximum(np.maximum(a, b), 1e-12))
    return not scores or float(np.median(np.concatenate(scores))) >= SILHOUETTE


def _cuts(dist):
    """Partitions from an average-linkage tree over ``dist``, finest first (label arrays, 2 groups or more).

    Replays the merges (scipy's ``cut_tree`` does the same but is quadratic in Python).
    """
    linkage = require("scipy.cluster.hierarchy", None, "reading the latency structure").linkage
    squareform = require("scipy.spatial.distance", None, "reading the latency structure").squareform

    u = dist.shape[0]
    z = linkage(squareform(dist, checks=False), method="average")
    labels = np.arange(u, dtype=np.intp)
    members = {i: [i] for i in range(u)}
    for j in range(u - 2):
        a, b = int(z[j, 0]), int(z[j, 1])
        merged = members.pop(a) + members.pop(b)
        members[u + j] = merged
        labels[merged] = u + j
        yield _relabel(labels)


def _absorb_singletons(labels, dist):
    """Fold each one-unit group into the group it is clearly closest to on average (one odd core, a
    favoured ring stop, is not a group of its own; see :data:`LONE_CLEAR`). None when a lone unit's
    nearest unit is alone too: the tree has not yet formed the group they belong to."""
    sizes = np.bincount(labels)
    lone = int((sizes == 1).sum())
    if lone == 0:
        return labels
    if lone == sizes.size:
        return None
    lone_rows = np.flatnonzero(sizes[labels] == 1)
    near = dist[lone_rows].copy()
    near[np.arange(lone_rows.size), lone_rows] = np.inf
    if (sizes[labels[np.argmin(near, axis=1)]] == 1).any():
        return None
    groups = np.flatnonzero(sizes > 1)
    col = np.full(sizes.size, -1)
    col[groups] = np.arange(groups.size)
    keep = col[labels] >= 0
    onehot = np.zeros((labels.size, groups.size))
    onehot[np.flatnonzero(keep), col[labels[keep]]] = 1.0
    mean_to = (dist[lone_rows] @ onehot) / sizes[groups]
    best = np.argmin(mean_to, axis=1)
    # A lone core as near to two groups as to each other (the one online core of a package, as far
    # from every other package as they are from each other) is a group of its own, not a member of
    # whichever group happens to come first; unless it is about as near its nearest group as that
    # group's members are to each other (a noisy member of a weakly contrasted group).
    clear = np.ones(lone_rows.size, dtype=bool)
    if groups.size > 1:
        ranked = np.sort(mean_to, axis=1)
        for r in np.flatnonzero(ranked[:, 0] > LONE_CLEAR * ranked[:, 1]):
            members = np.flatnonzero(labels == groups[best[r]])
            intra = dist[np.ix_(members, members)].sum() / (members.size * (members.size - 1))
            clear[r] = ranked[r, 0] <= 2.0 * intra
    labels = labels.copy()
    labels[lone_rows[clear]] = groups[best[clear]]
    return _relabel(labels)


def nested_levels(cd):
    """Label arrays over cores (finest level first), each a coarsening of the previous one.

    ``cd`` is the m x m core latency matrix (ns, NaN diagonal and NaN for missing pairs).
    """
    m = cd.shape[0]
    if too_many_cores(m):
        return []
    with np.errstate(divide="ignore", invalid="ignore"):
        x = np.log(np.where(cd > 0, cd, np.nan))
    fine = np.arange(m, dtype=np.intp)  # cores
    noise = _nearest_row(x) / math.sqrt(2.0) if m >= 3 else np.zeros(m)
    if noise_ratio(cd) >= NOISE_RATIO:
        return []  # no row is nearer another than noise would put it: nothing to group
    # Below NOISE_MIN_CORES the noise cannot be told from the rows (a block may be one pair, whose
    # spread is unknown), so only a difference as large as a class of cores counts: 5 CPUs of
    # 9 % noise otherwise read as "2 groups, 72 ns within, 67 across" now and then.
    min_rel = MIN_REL if m >= NOISE_MIN_CORES else CLASS_REL
    levels = []
    while (found := _coarser_level(x, fine, first=not levels, noise=noise, min_rel=min_rel)) is not None:
        levels.append(found)
        fine = found
    return levels


def _coarser_level(x, fine, *, first, noise, min_rel):
    """The first cut of ``fine``'s groups into fewer that the data tell apart, or None."""
    u = int(fine.max()) + 1
    if u < 3:
        return None
    unit, _ = group_means(np.where(fine[:, None] != fine[None, :], x, np.nan), fine, u)
    np.fill_diagonal(unit, np.nan)
    if np.isnan(unit).all():
        return None
    dist = profile_distance(unit)
    seen = set()
    for cut in _cuts(dist):
        if first:
            cut = _first_cut(cut, dist, u)
            if cut is None:
                continue
        lab = _relabel(cut[fine])
        key = lab.tobytes()
        if key in seen or lab.max() < 1 or lab.max() + 1 >= u:
            continue
        seen.add(key)
        if distinguishable(x, fine, lab, first=first, noise=noise, dist=dist, min_rel=min_rel):
            return lab
    return None


def _first_cut(cut, dist, u):
    """``cut`` with its lone cores absorbed, or None when too many cores are alone to group cores."""
    if (np.bincount(cut) == 1).sum() > MAX_LONE * u:
        return None
    return _absorb_singletons(cut, dist)


def _nearest_row(x):
    """Per core, the RMS difference between its log row and the most similar other row."""
    d = profile_distance(x)
    np.fill_diagonal(d, np.inf)
    return d.min(axis=1)


def pair_noise(x):
    """Spread of one pair's log latency: half the typical nearest-row difference squared, rooted.

    Every core of a regular machine has another that is structurally the same (its neighbour in
    the group), so their rows differ by noise alone: sqrt(2) times a pair's spread. On a mesh the
    nearest row differs by the gradient too, which only makes the estimate cautious.
    """
    if x.shape[0] < 3 or np.isnan(x).all():
        return 0.0
    return float(np.median(_nearest_row(x))) / math.sqrt(2.0)


def noise_ratio(cd):
    """Nearest-row distance over the spread of the matrix: near 1 for noise, far below for structure.

    In pure noise two rows differ by about sqrt(2) times the spread of the entries wherever they
    are; in a machine with any structure (blocks, a ring, a mesh) every core has a neighbour whose
    row is nearly its own. Returns NaN when there are too few cores to tell, or too many to afford
    (:data:`MAX_GROUPED_CORES`).
    """
    m = cd.shape[0]
    if too_many_cores(m):
        return math.nan
    with np.errstate(divide="ignore", invalid="ignore"):
        x = np.log(np.where(cd > 0, cd, np.nan))
    off = x[~np.isnan(x)]
    if m < NOISE_MIN_CORES or off.size < 2:
        return math.nan
    spread = float(np.std(off))
    if spread <= 1e-12:
        return 0.0
    return pair_noise(x) / spread
