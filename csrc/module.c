/* corelat._corelat: the one binding file. Argument parsing, NumPy arrays, the GIL, and turning the
 * status codes that measuring threads carry back into Python exceptions. Python validates arguments
 * first (corelat/_measure/sweep.py, corelat/_measure/measurers.py); the checks here only keep memory
 * safe. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <numpy/arrayobject.h>

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "affinity.h"
#include "chase.h"
#include "locks.h"
#include "oneway.h"
#include "pingpong.h"
#include "placement.h"
#include "smt.h"
#include "spin.h"
#include "team.h"
#include "timer.h"

/* How often the waiting thread takes the GIL back to look for Ctrl-C. */
#define POLL_MS 50
/* How long the caller waits, after an abort or past a thread's time-out, for a thread that shows no
 * sign of life before it leaves that thread behind (see team.h). */
#define GRACE_NS 500000000ull

static corelat_timer_info timer_state;
static int timer_ready;

static PyObject *timer_dict(void)
{
    const corelat_timer_info *t = &timer_state;
    PyObject *hist = PyTuple_New(t->hist_len);
    if (!hist)
        return NULL;
    for (int i = 0; i < t->hist_len; i++) {
        PyObject *pair =
            Py_BuildValue("(KK)", (unsigned long long)t->hist_delta[i], (unsigned long long)t->hist_count[i]);
        if (!pair) {
            Py_DECREF(hist);
            return NULL;
        }
        PyTuple_SET_ITEM(hist, i, pair);
    }
    return Py_BuildValue("{s:s,s:d,s:d,s:d,s:O,s:d,s:d,s:d,s:N}", "name", t->name, "ticks_per_ns",
                         t->ticks_per_ns, "overhead_ticks", t->overhead, "overhead_serial_ticks",
                         t->overhead_serial, "hw_invariant", t->hw_invariant ? Py_True : Py_False,
                         "frequency_hz", t->ticks_per_ns * 1e9, "resolution_ticks", t->resolution,
                         "resolution_ns", t->resolution / t->ticks_per_ns, "delta_histogram", hist);
}

static PyObject *py_timer_init(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static char *names[] = {"kind", "calibrate_s", NULL};
    const char *kind;
    double calibrate_s = 0.03;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "s|d", names, &kind, &calibrate_s))
        return NULL;
    int k;
    if (strcmp(kind, "hw") == 0)
        k = CORELAT_TIMER_HW;
    else if (strcmp(kind, "clock") == 0)
        k = CORELAT_TIMER_CLOCK;
    else
        return PyErr_Format(PyExc_ValueError, "unknown timer kind %s (hw or clock)", kind);
    if (!(calibrate_s > 0 && calibrate_s <= 10))
        return PyErr_Format(PyExc_ValueError, "calibrate_s must be in (0, 10]");
    int rc;
    corelat_timer_info info;
    Py_BEGIN_ALLOW_THREADS
    rc = corelat_timer_init(k, (uint64_t)(calibrate_s * 1e9), &info);
    Py_END_ALLOW_THREADS
    if (rc != 0)
        return PyErr_Format(PyExc_RuntimeError, "no hardware timer on this architecture");
    /* The active timer's calibration, not necessarily this call's: another thread's init may have ended
     * after it, and its kind is the one the kernels read now. */
    if (corelat_timer_current(&timer_state) != 0)
        timer_state = info;
    timer_ready = 1;
    return timer_dict();
}

static PyObject *py_timer_info(PyObject *self, PyObject *noargs)
{
    (void)self;
    (void)noargs;
    if (!timer_ready)
        Py_RETURN_NONE;
    return timer_dict();
}

static PyObject *py_hw_timer(PyObject *self, PyObject *noargs)
{
    (void)self;
    (void)noargs;
    return Py_BuildValue("{s:s,s:O,s:O}", "name", CORELAT_HW_TIMER_NAME, "available",
                         CORELAT_HAVE_HW_TIMER ? Py_True : Py_False, "invariant",
                         corelat_timer_hw_invariant() ? Py_True : Py_False);
}

static PyObject *py_current_cpu(PyObject *self, PyObject *noargs)
{
    (void)self;
    (void)noargs;
    return PyLong_FromLong(corelat_current_cpu());
}

static PyObject *py_ticks(PyObject *self, PyObject *noargs)
{
    (void)self;
    (void)noargs;
    return PyLong_FromUnsignedLongLong(corelat_ticks());
}

static PyObject *py_clock_cost(PyObject *self, PyObject *noargs)
{
    (void)self;
    (void)noargs;
    if (!timer_ready)
        return PyErr_Format(PyExc_RuntimeError, "timer not initialised");
    return PyFloat_FromDouble(corelat_timer_clock_cost());
}

/* Raise the exception a failed job deserves: corelat._core.status maps the status codes (spin.h) to
 * exceptions and words, in Python. Called with the GIL held. */
static void raise_failure(const char *what, const corelat_job *job, double timeout_s, const char *waited_for)
{
    PyObject *mod = PyImport_ImportModule("corelat._core.status");
    if (!mod)
        return;
    PyObject *exc = PyObject_CallMethod(mod, "exception", "siiidds", what, job->status, job->failed_cpu,
                                        job->err, timeout_s, (double)GRACE_NS / 1e9, waited_for);
    Py_DECREF(mod);
    if (!exc)
        return;
    PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
    Py_DECREF(exc);
}

/* Start a job, wait for it with the GIL released, checking for Ctrl-C between polls with it held,
 * and finish it. After Ctrl-C the threads are told to stop and given GRACE_NS; one that does not
 * answer is left behind (it holds its own reference to the job), so Ctrl-C always returns.
 * Returns -1 if interrupted, with the signal's exception set; else 0, and job->status says how
 * the measurement went. The caller still releases the job. */
static int run_job(corelat_job *job, int (*start)(corelat_job *job))
{
    int rc, interrupted = 0;
    Py_BEGIN_ALLOW_THREADS
    rc = start(job);
    Py_END_ALLOW_THREADS
    while (rc == CORELAT_OK) {
        int r;
        Py_BEGIN_ALLOW_THREADS
        r = corelat_job_poll(job, POLL_MS, GRACE_NS);
        Py_END_ALLOW_THREADS
        if (r != 0)
            break;
        if (!interrupted && PyErr_CheckSignals() < 0) {
            interrupted = 1;
            corelat_job_abort(job);
        }
    }
    Py_BEGIN_ALLOW_THREADS
    corelat_job_finish(job);
    Py_END_ALLOW_THREADS
    return interrupted ? -1 : 0;
}

/* A new job's status when it could not be made: bad arguments or no memory. */
static PyObject *new_failed(int status, const char *what)
{
    if (status == CORELAT_ENOMEM)
        return PyErr_NoMemory();
    return PyErr_Format(PyExc_ValueError, "invalid %s arguments", what);
}

static int pp_start(corelat_job *job) { return corelat_pp_start((corelat_pp_job *)job); }
static int ow_start(corelat_job *job) { return corelat_ow_start((corelat_ow_job *)job); }
static int chase_start(corelat_job *job) { return corelat_chase_start((corelat_chase_job *)job); }
static int locks_start(corelat_job *job) { return corelat_locks_start((corelat_lock_job *)job); }
static int smt_start(corelat_job *job) { return corelat_smt_start((corelat_smt_job *)job); }

/* A NumPy copy of n items of a job's output (the job's own memory may outlive this call). */
static PyObject *array_copy(int nd, const npy_intp *dims, int type, const void *src)
{
    PyArrayObject *a = (PyArrayObject *)PyArray_SimpleNew(nd, (npy_intp *)dims, type);
    if (a)
        memcpy(PyArray_DATA(a), src, (size_t)PyArray_NBYTES(a));
    return (PyObject *)a;
}

static int check_timer(void)
{
    if (timer_ready)
        return 0;
    PyErr_SetString(PyExc_RuntimeError, "timer not initialised");
    return -1;
}

/* ---- placement (csrc/placement.c): where a pair's page lives ---- */

/* `home=(node, toucher, cpu)` from Python (corelat/_system/home.py; node -1: no binding). Returns 1 when
 * given (filled in), 0 for None or absent, -1 with an exception set. */
static int parse_home(PyObject *home, corelat_place *place)
{
    if (!home || home == Py_None)
        return 0;
    int node;
    if (!PyArg_ParseTuple(home, "iii;home must be (node, toucher, cpu)", &node, &place->toucher, &place->cpu))
        return -1;
    if (node < -1 || node >= 1024 || place->toucher < CORELAT_TOUCH_INITIATOR ||
        place->toucher > CORELAT_TOUCH_THIRD || (place->toucher == CORELAT_TOUCH_THIRD && place->cpu < 0)) {
        PyErr_SetString(PyExc_ValueError, "invalid home");
        return -1;
    }
    place->bind = node >= 0;
    place->node = node < 0 ? 0 : node;
    return 1;
}

/* What a placed run reports: (home_node, mbind errno, move_pages errno). */
static PyObject *home_found(const corelat_place *place)
{
    return Py_BuildValue("(iii)", place->home_node, place->bind_err, place->query_err);
}

/* `out`, or (out, where the page was found) when the caller asked for a home; steals out. */
static PyObject *with_home(PyObject *out, int placed, const corelat_place *place)
{
    if (!out || !placed)
        return out;
    PyObject *found = home_found(place);
    PyObject *pair = found ? PyTuple_Pack(2, out, found) : NULL;
    Py_DECREF(out);
    Py_XDECREF(found);
    return pair;
}

/* Run a pair's job whose output is one tick count per sample (*count of them once it ran), then
 * release it: the ticks (with where the page was found when `place` is given), or NULL with the
 * failure raised. */
static PyObject *run_pair_ticks(corelat_job *head, int (*start)(corelat_job *job), const int64_t *count,
                                const uint64_t *ticks, const corelat_place *place, int cpu_a, int cpu_b,
                                double timeout)
{
    PyObject *out = NULL;
    if (run_job(head, start) == 0) {
        if (head->status == CORELAT_OK) {
            npy_intp dims[1] = {(npy_intp)*count};
            out = with_home(array_copy(1, dims, NPY_UINT64, ticks), place != NULL, place);
        } else {
            char what[64];
            PyOS_snprintf(what, sizeof what, "CPUs %d and %d", cpu_a, cpu_b);
            raise_failure(what, head, timeout, "the partner did not answer");
        }
    }
    corelat_job_release(head);
    return out;
}

/* ---- the pair entry points: ping-pong (csrc/pingpong.c), one-way (csrc/oneway.c), chase (csrc/chase.c) ----
 *
 * One argument table for all three: a keyword has one C type, one default (zero) and one range on every
 * pair kernel, and each kernel's row (a pair_kernel) lists the keywords it takes. A new pair kernel is
 * such a row, a function that turns pair_args into its job, and its entry in the method table. */

/* Every pair keyword's value, after parsing; a keyword a call or a kernel leaves out keeps its default, 0. */
typedef struct {
    int cpu_a, cpu_b, kernel, kind, stall;
    long long round_trips, messages, samples, warmup, offset_ticks;
    double timeout, budget, freeze, start_delay;
    PyObject *order_obj, *home; /* borrowed */
    int *order;                 /* order_obj as a PyMem array of `lines` ints */
    Py_ssize_t lines;
    corelat_place place;
    int placed; /* home was given */
} pair_args;

enum pair_key {
    K_NONE, /* ends a kernel's list: the zeros after its last keyword */
    K_CPU_A,
    K_CPU_B,
    K_KERNEL,
    K_KIND,
    K_ORDER,
    K_ROUND_TRIPS,
    K_MESSAGES,
    K_SAMPLES,
    K_WARMUP,
    K_TIMEOUT,
    K_STALL,
    K_OFFSET_TICKS,
    K_BUDGET,
    K_FREEZE,
    K_HOME,
    K_START_DELAY,
    K_COUNT,
};

/* The range a keyword's value must lie in (units 'i', 'L' and 'd'; NaN lies in none). The binding
 * checks only what keeps memory safe and the kernels' waits sane; Python validated everything first. */
enum pair_range {
    ANY,           /* not checked here */
    CLOSED_OPEN,   /* lo <= v < hi */
    OPEN_OPEN,     /* lo < v < hi */
    CLOSED_CLOSED, /* lo <= v <= hi */
};

#define MAX_COUNT ((double)(1ll << 40))

/* A keyword: its PyArg format unit, where its value goes, its range. */
static const struct {
    char *name;
    char unit;
    size_t offset;
    enum pair_range range;
    double lo, hi;
} pair_keys[K_COUNT] = {
    [K_CPU_A] = {"cpu_a", 'i', offsetof(pair_args, cpu_a), CLOSED_OPEN, 0, HUGE_VAL},
    [K_CPU_B] = {"cpu_b", 'i', offsetof(pair_args, cpu_b), CLOSED_OPEN, 0, HUGE_VAL},
    [K_KERNEL] = {"kernel", 'i', offsetof(pair_args, kernel), ANY, 0, 0},
    [K_KIND] = {"kind", 'i', offsetof(pair_args, kind), ANY, 0, 0},
    [K_ORDER] = {"order", 'O', offsetof(pair_args, order_obj), ANY, 0, 0},
    /* The counts: each at most 2^40, so warm-up plus samples, and the sequence numbers a batch counts
     * (round trips or messages times samples), fit in the kernels' int64 and uint64 counters (a warm-up
     * of 2^63 - 1 wrapped the sum negative: an empty loop, an empty array). Python's limits are far
     * below; these are for callers of the binding. */
    [K_ROUND_TRIPS] = {"round_trips", 'L', offsetof(pair_args, round_trips), CLOSED_CLOSED, 1, MAX_COUNT},
    [K_MESSAGES] = {"messages", 'L', offsetof(pair_args, messages), CLOSED_CLOSED, 1, MAX_COUNT},
    [K_SAMPLES] = {"samples", 'L', offsetof(pair_args, samples), CLOSED_CLOSED, 1, MAX_COUNT},
    [K_WARMUP] = {"warmup", 'L', offsetof(pair_args, warmup), CLOSED_CLOSED, 0, MAX_COUNT},
    [K_TIMEOUT] = {"timeout", 'd', offsetof(pair_args, timeout), OPEN_OPEN, 0, 1e6},
    [K_STALL] = {"stall_responder", 'p', offsetof(pair_args, stall), ANY, 0, 0},
    [K_OFFSET_TICKS] = {"offset_ticks", 'L', offsetof(pair_args, offset_ticks), ANY, 0, 0},
    [K_BUDGET] = {"budget", 'd', offsetof(pair_args, budget), CLOSED_OPEN, 0, 1e6},
    [K_FREEZE] = {"freeze", 'd', offsetof(pair_args, freeze), CLOSED_OPEN, 0, 1e3},
    [K_HOME] = {"home", 'O', offsetof(pair_args, home), ANY, 0, 0},
    [K_START_DELAY] = {"start_delay", 'd', offsetof(pair_args, start_delay), CLOSED_OPEN, 0, 1e3},
};

/* The most keywords one pair kernel takes (the PyArg call below passes this many pointers). */
#define PAIR_MAX_KEYS 16

typedef struct pair_kernel pair_kernel;
struct pair_kernel {
    const char *what;    /* the kernel in messages: "invalid %s arguments" from its constructor */
    const char *invalid; /* the ValueError for a value out of its range */
    int required;        /* how many of keys, from the first, are required */
    enum pair_key keys[PAIR_MAX_KEYS];                    /* in positional order */
    PyObject *(*run)(const pair_kernel *k, pair_args *a); /* the job made and run; NULL with an exception */
};

static int int_array(PyObject *seq, const char *what, int **out, Py_ssize_t *len);

static int pair_in_range(const pair_args *a, enum pair_key k)
{
    const char *field = (const char *)a + pair_keys[k].offset;
    double v, lo = pair_keys[k].lo, hi = pair_keys[k].hi;
    switch (pair_keys[k].unit) {
    case 'i':
        v = *(const int *)field;
        break;
    case 'L':
        v = (double)*(const long long *)field; /* rounding above 2^53 cannot cross a bound */
        break;
    case 'd':
        v = *(const double *)field;
        break;
    default:
        return 1;
    }
    switch (pair_keys[k].range) {
    case CLOSED_OPEN:
        return v >= lo && v < hi;
    case OPEN_OPEN:
        return v > lo && v < hi;
    case CLOSED_CLOSED:
        return v >= lo && v <= hi;
    default:
        return 1;
    }
}

/* A value or bound in a message: whole for the integer units, as it is for doubles, "inf" unbounded. */
static void format_number(char *out, size_t size, char unit, double v)
{
    if (isinf(v))
        PyOS_snprintf(out, size, "%sinf", v < 0 ? "-" : "");
    else if (unit == 'd')
        PyOS_snprintf(out, size, "%.17g", v);
    else
        PyOS_snprintf(out, size, "%lld", (long long)v);
}

/* The ValueError for a keyword out of its range: the kernel's message, then the keyword, its value and
 * its range. */
static void out_of_range(const pair_kernel *k, const pair_args *a, enum pair_key key)
{
    const char *field = (const char *)a + pair_keys[key].offset;
    char unit = pair_keys[key].unit, value[32], lo[32], hi[32], msg[512];
    if (unit == 'i')
        PyOS_snprintf(value, sizeof value, "%d", *(const int *)field);
    else if (unit == 'L')
        PyOS_snprintf(value, sizeof value, "%lld", *(const long long *)field);
    else
        format_number(value, sizeof value, 'd', *(const double *)field);
    format_number(lo, sizeof lo, unit, pair_keys[key].lo);
    format_number(hi, sizeof hi, unit, pair_keys[key].hi);
    PyOS_snprintf(msg, sizeof msg, "%s: %s=%s is out of its range %s%s, %s%s", k->invalid,
                  pair_keys[key].name, value, pair_keys[key].range == OPEN_OPEN ? "(" : "[", lo, hi,
                  pair_keys[key].range == CLOSED_CLOSED ? "]" : ")");
    PyErr_SetString(PyExc_ValueError, msg);
}

/* Parse a pair call by its kernel's row, check the ranges and run it. The checks keep the order the
 * three copied parsers had, so every error is the one they raised: PyArg's TypeErrors, then home, then
 * order, then the ranges (k->invalid), then the kernel's own (in k->run). */
static PyObject *pair_call(const pair_kernel *k, PyObject *args, PyObject *kw)
{
    pair_args a = {0};
    char fmt[PAIR_MAX_KEYS + 2], *f = fmt;
    char *names[PAIR_MAX_KEYS + 1];
    void *at[PAIR_MAX_KEYS] = {0};
    int n = 0;
    for (; n < PAIR_MAX_KEYS && k->keys[n] != K_NONE; n++) {
        if (n == k->required)
            *f++ = '|';
        *f++ = pair_keys[k->keys[n]].unit;
        names[n] = pair_keys[k->keys[n]].name;
        at[n] = (char *)&a + pair_keys[k->keys[n]].offset;
    }
    *f = '\0';
    names[n] = NULL;
    /* PyArg has no form that takes an array of addresses: pass all PAIR_MAX_KEYS; those past the
     * format's units are never read (C allows unused variadic arguments). */
    if (!PyArg_ParseTupleAndKeywords(args, kw, fmt, names, at[0], at[1], at[2], at[3], at[4], at[5], at[6],
                                     at[7], at[8], at[9], at[10], at[11], at[12], at[13], at[14], at[15]))
        return NULL;
    PyObject *out = NULL;
    a.placed = parse_home(a.home, &a.place);
    if (a.placed < 0)
        goto error;
    if (a.order_obj &&
        int_array(a.order_obj, "order must be a sequence of line numbers", &a.order, &a.lines) < 0)
        goto error;
    for (int i = 0; i < n; i++) {
        if (!pair_in_range(&a, k->keys[i])) {
            out_of_range(k, &a, k->keys[i]);
            goto error;
        }
    }
    out = k->run(k, &a);

error: /* also the way out on success */
    PyMem_Free(a.order);
    return out;
}

static PyObject *pp_run(const pair_kernel *k, pair_args *a)
{
    if (check_timer() < 0)
        return NULL;
    corelat_pp_params p = {
        .kernel = a->kernel,
        .cpu_a = a->cpu_a,
        .cpu_b = a->cpu_b,
        .round_trips = a->round_trips,
        .samples = a->samples,
        .warmup = a->warmup,
        .timeout_ns = (uint64_t)(a->timeout * 1e9),
        .budget_ns = (uint64_t)(a->budget * 1e9),
        .stall_responder = a->stall,
        .freeze_ns = (uint64_t)(a->freeze * 1e9),
        .start_delay_ns = (uint64_t)(a->start_delay * 1e9),
        .place = a->place,
    };
    int status;
    corelat_pp_job *job = corelat_pp_new(&p, &status);
    if (!job)
        return new_failed(status, k->what);
    return run_pair_ticks(&job->head, pp_start, &job->kept, job->ticks, a->placed ? &job->p.place : NULL,
                          a->cpu_a, a->cpu_b, a->timeout);
}

static PyObject *ow_run(const pair_kernel *k, pair_args *a)
{
    if (check_timer() < 0)
        return NULL;
    corelat_ow_params p = {
        .cpu_a = a->cpu_a,
        .cpu_b = a->cpu_b,
        .messages = a->messages,
        .samples = a->samples,
        .warmup = a->warmup,
        .timeout_ns = (uint64_t)(a->timeout * 1e9),
        .budget_ns = (uint64_t)(a->budget * 1e9),
        .stall_responder = a->stall,
        .freeze_ns = (uint64_t)(a->freeze * 1e9),
        .offset_ticks = a->offset_ticks,
        .place = a->place,
    };
    int status;
    corelat_ow_job *job = corelat_ow_new(&p, &status);
    if (!job)
        return new_failed(status, k->what);
    PyObject *out = NULL;
    if (run_job(&job->head, ow_start) == 0) {
        if (job->head.status == CORELAT_OK) {
            npy_intp dims[1] = {(npy_intp)job->kept};
            PyObject *ab = array_copy(1, dims, NPY_INT64, job->sum_ab);
            PyObject *ba = array_copy(1, dims, NPY_INT64, job->sum_ba);
            if (ab && ba)
                out =
                    with_home(Py_BuildValue("(OOLL)", ab, ba, (long long)job->min_ab, (long long)job->min_ba),
                              a->placed, &job->p.place);
            Py_XDECREF(ab);
            Py_XDECREF(ba);
        } else {
            char what[64];
            PyOS_snprintf(what, sizeof what, "CPUs %d and %d", a->cpu_a, a->cpu_b);
            raise_failure(what, &job->head, a->timeout, "the partner did not answer");
        }
    }
    corelat_job_release(&job->head);
    return out;
}

static PyObject *chase_run(const pair_kernel *k, pair_args *a)
{
    if (!corelat_chase_valid_order(a->order, (int64_t)a->lines)) {
        PyErr_SetString(PyExc_ValueError, k->invalid);
        return NULL;
    }
    if (!CORELAT_HAVE_CHASE) {
        PyErr_SetString(PyExc_NotImplementedError, "no cache-line eviction instruction on this architecture");
        return NULL;
    }
    if (check_timer() < 0)
        return NULL;
    corelat_chase_params p = {
        .kind = a->kind,
        .cpu_a = a->cpu_a,
        .cpu_b = a->cpu_b,
        .lines = (int64_t)a->lines,
        .samples = a->samples,
        .warmup = a->warmup,
        .timeout_ns = (uint64_t)(a->timeout * 1e9),
        .stall_responder = a->stall,
        .place = a->place,
    };
    int status;
    corelat_chase_job *job = corelat_chase_new(&p, a->order, &status);
    if (!job)
        return new_failed(status, k->what);
    return run_pair_ticks(&job->head, chase_start, &job->p.samples, job->ticks,
                          a->placed ? &job->p.place : NULL, a->cpu_a, a->cpu_b, a->timeout);
}

static const pair_kernel pingpong_kernel = {
    .what = "ping-pong",
    .invalid = "invalid ping-pong arguments",
    .required = 7,
    .keys = {K_CPU_A, K_CPU_B, K_KERNEL, K_ROUND_TRIPS, K_SAMPLES, K_WARMUP, K_TIMEOUT, K_STALL, K_BUDGET,
             K_FREEZE, K_HOME, K_START_DELAY},
    .run = pp_run,
};

static const pair_kernel oneway_kernel = {
    .what = "one-way",
    .invalid = "invalid one-way arguments",
    .required = 6,
    .keys = {K_CPU_A, K_CPU_B, K_MESSAGES, K_SAMPLES, K_WARMUP, K_TIMEOUT, K_STALL, K_OFFSET_TICKS, K_BUDGET,
             K_FREEZE, K_HOME},
    .run = ow_run,
};

/* The order's own rules are checked in chase_run, with the same message as the ranges. */
static const pair_kernel chase_kernel = {
    .what = "chase",
    .invalid = "invalid chase arguments (the order must be one cycle over every line, no two consecutive "
               "lines in one 128 B pair)",
    .required = 7,
    .keys = {K_CPU_A, K_CPU_B, K_KIND, K_ORDER, K_SAMPLES, K_WARMUP, K_TIMEOUT, K_STALL, K_HOME},
    .run = chase_run,
};

static PyObject *py_pingpong(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    return pair_call(&pingpong_kernel, args, kw);
}

static PyObject *py_oneway(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    return pair_call(&oneway_kernel, args, kw);
}

static PyObject *py_chase(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    return pair_call(&chase_kernel, args, kw);
}

/* ---- locks (csrc/locks.c) ---- */

/* A sequence of non-negative ints as a PyMem array; -1 with an exception set. */
static int int_array(PyObject *seq, const char *what, int **out, Py_ssize_t *len)
{
    PyObject *fast = PySequence_Fast(seq, what);
    if (!fast)
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    int *a = PyMem_Calloc(n ? (size_t)n : 1, sizeof *a);
    if (!a) {
        Py_DECREF(fast);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        long v = PyLong_AsLong(PySequence_Fast_GET_ITEM(fast, i));
        if (v == -1 && PyErr_Occurred())
            goto error;
        if (v < 0 || v > 1000000) {
            PyErr_Format(PyExc_ValueError, "%s: %ld is out of range", what, v);
            goto error;
        }
        a[i] = (int)v;
    }
    Py_DECREF(fast);
    *out = a;
    *len = n;
    return 0;

error:
    Py_DECREF(fast);
    PyMem_Free(a);
    return -1;
}

static PyObject *py_locks(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static char *names[] = {"cpus",    "tests", "shared", "serial", "duration",
                            "timeout", "group", "spread", NULL};
    PyObject *cpus_obj, *tests_obj, *group_obj = Py_None, *out = NULL;
    int shared, spread = 0;
    double serial, duration, timeout;
    int *cpus = NULL, *tests = NULL, *group = NULL;
    Py_ssize_t n = 0, ntests = 0, ngroup = 0;
    corelat_lock_job *job = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOpddd|Op", names, &cpus_obj, &tests_obj, &shared, &serial,
                                     &duration, &timeout, &group_obj, &spread))
        return NULL;
    if (int_array(cpus_obj, "cpus must be a sequence of CPU ids", &cpus, &n) < 0 ||
        int_array(tests_obj, "tests must be a sequence of lock test codes", &tests, &ntests) < 0 ||
        (group_obj != Py_None &&
         int_array(group_obj, "group must be a sequence of group numbers", &group, &ngroup) < 0))
        goto error;
    if (!(n >= 1 && n <= 65536 && ntests >= 1 && ntests <= CORELAT_LK_COUNT && serial > 0 && serial <= 3600 &&
          duration > 0 && duration <= 3600 && timeout > 0 && timeout < 1e6 && (!group || ngroup == n))) {
        new_failed(CORELAT_EINVAL, "lock run");
        goto error;
    }
    /* Test codes before the timer: bad arguments are a ValueError whatever the module's state. */
    for (Py_ssize_t i = 0; i < ntests; i++) {
        int dup = 0;
        for (Py_ssize_t j = 0; j < i; j++)
            dup |= tests[j] == tests[i];
        if (tests[i] < 0 || tests[i] >= CORELAT_LK_COUNT || dup) {
            new_failed(CORELAT_EINVAL, "lock run");
            goto error;
        }
    }
    if (check_timer() < 0)
        goto error;
    double per_s = timer_state.ticks_per_ns * 1e9;
    corelat_lock_params p = {
        .n = (int)n,
        .cpus = cpus,
        .group = group,
        .spread = spread,
        .ntests = (int)ntests,
        .tests = tests,
        .shared = shared,
        .serial_ticks = (uint64_t)(serial * per_s) + 1,
        .duration_ticks = (uint64_t)(duration * per_s) + 1,
        .lead_ticks = (uint64_t)(200e-6 * per_s), /* 200 us for every thread to see the start */
        .bracket_ticks = (uint64_t)(20 * timer_state.resolution), /* 20 steps: 5 % per step at worst */
        .timeout_ns = (uint64_t)(timeout * 1e9),
    };
    int status;
    job = corelat_locks_new(&p, &status);
    if (!job) {
        new_failed(status, "lock run");
        goto error;
    }
    if (run_job(&job->head, locks_start) < 0)
        goto error; /* KeyboardInterrupt (or the signal handler's exception) is already set */
    corelat_locks_collect(job);
    if (job->head.status != CORELAT_OK) {
        char what[80];
        int t = job->failed_test;
        PyOS_snprintf(what, sizeof what, "lock test %s",
                      t >= 0 && t < CORELAT_LK_COUNT ? corelat_lock_names[t] : "(setup)");
        raise_failure(what, &job->head, timeout, "the lock or the other threads did not come");
        goto error;
    }
    npy_intp dims[2] = {(npy_intp)ntests, (npy_intp)n};
    struct {
        const char *key;
        int nd;
        const uint64_t *src;
    } outs[] = {{"calls", 2, job->calls},     {"ticks", 2, job->ticks},
                {"sermin", 2, job->sermin},   {"serempty", 2, job->serempty},
                {"serk", 2, job->serk},       {"sercalls", 2, job->sercalls},
                {"counter", 1, job->counter}, {"counter_by_thread", 2, job->counter_by}};
    out = PyDict_New();
    for (size_t i = 0; out && i < sizeof outs / sizeof outs[0]; i++) {
        PyObject *a = array_copy(outs[i].nd, dims, NPY_UINT64, outs[i].src);
        if (!a || PyDict_SetItemString(out, outs[i].key, a) < 0)
            Py_CLEAR(out);
        Py_XDECREF(a);
    }
    npy_intp ndim[1] = {(npy_intp)n};
    struct {
        const char *key;
        const int *src;
    } per_thread[] = {
        {"ran_on", job->ran_on}, {"affinity", job->aff_count}, {"affinity_outside", job->aff_outside}};
    for (size_t i = 0; out && i < sizeof per_thread / sizeof per_thread[0]; i++) {
        PyObject *a = array_copy(1, ndim, NPY_INT, per_thread[i].src);
        if (!a || PyDict_SetItemString(out, per_thread[i].key, a) < 0)
            Py_CLEAR(out);
        Py_XDECREF(a);
    }

error: /* also the way out on success */
    if (job)
        corelat_job_release(&job->head);
    PyMem_Free(cpus);
    PyMem_Free(tests);
    PyMem_Free(group);
    return out;
}

/* A CPU feature table from a dict of its words (fake tables for tests), or this CPU's. */
static int feats_from(PyObject *d, corelat_cpu_feats *f)
{
    static const char *keys[] = {"arch",      "max_leaf", "max_ext", "leaf1_ecx", "leaf1_edx",
                                 "leaf7_ecx", "ext1_edx", "hwcap",   "hwcap2"};
    unsigned long long v[9] = {0};
    if (d == Py_None) {
        corelat_cpu_feats_read(f);
        return 0;
    }
    if (!PyDict_Check(d)) {
        PyErr_SetString(PyExc_TypeError, "features must be a dict or None");
        return -1;
    }
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        PyObject *o = PyDict_GetItemString(d, keys[i]);
        if (o && (v[i] = PyLong_AsUnsignedLongLong(o)) == (unsigned long long)-1 && PyErr_Occurred())
            return -1;
    }
    *f = (corelat_cpu_feats){.arch = (int)v[0],
                             .max_leaf = (uint32_t)v[1],
                             .max_ext = (uint32_t)v[2],
                             .leaf1_ecx = (uint32_t)v[3],
                             .leaf1_edx = (uint32_t)v[4],
                             .leaf7_ecx = (uint32_t)v[5],
                             .ext1_edx = (uint32_t)v[6],
                             .hwcap = v[7],
                             .hwcap2 = v[8]};
    return 0;
}

static PyObject *py_lock_availability(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *fd = Py_None;
    corelat_cpu_feats f;
    if (!PyArg_ParseTuple(args, "|O", &fd) || feats_from(fd, &f) < 0)
        return NULL;
    PyObject *out = PyTuple_New(CORELAT_LK_COUNT);
    for (int k = 0; out && k < CORELAT_LK_COUNT; k++) {
        char why[200];
        int ok = corelat_lock_available(k, &f, why, sizeof why);
        PyObject *item = Py_BuildValue("(Nsi)", PyBool_FromLong(ok), why, corelat_lock_other_arch(k, &f));
        if (!item)
            Py_CLEAR(out);
        else
            PyTuple_SET_ITEM(out, k, item);
    }
    return out;
}

static PyObject *py_lock_robust_check(PyObject *self, PyObject *noargs)
{
    (void)self;
    (void)noargs;
    char why[200] = "";
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = corelat_lock_robust_check(why, sizeof why);
    Py_END_ALLOW_THREADS
    if (rc == 0)
        Py_RETURN_NONE;
    return PyUnicode_FromString(why);
}

/* ---- busy-sibling throughput (csrc/smt.c) ---- */

static PyObject *py_smt_throughput(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static char *names[] = {"cpus", "loop", "duration", "timeout", "mem_bytes", NULL};
    PyObject *cpus_obj, *out = NULL;
    int loop;
    double duration, timeout;
    unsigned long long mem_bytes;
    int *cpus = NULL;
    Py_ssize_t n = 0;
    corelat_smt_job *job = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OiddK", names, &cpus_obj, &loop, &duration, &timeout,
                                     &mem_bytes))
        return NULL;
    if (int_array(cpus_obj, "cpus must be a sequence of CPU ids", &cpus, &n) < 0)
        goto error;
    if (n < 1 || n > 4096 || !(duration > 0 && duration <= 3600) || !(timeout > 0 && timeout < 1e6) ||
        mem_bytes < CORELAT_SMT_MEM_MIN || mem_bytes > CORELAT_SMT_MEM_MAX || mem_bytes % 64 != 0) {
        new_failed(CORELAT_EINVAL, "throughput run");
        goto error;
    }
    if (check_timer() < 0)
        goto error;
    double per_s = timer_state.ticks_per_ns * 1e9;
    corelat_smt_params p = {
        .loop = loop,
        .n = (int)n,
        .cpus = cpus,
        .duration_ticks = (uint64_t)(duration * per_s) + 1,
        .lead_ticks = (uint64_t)(200e-6 * per_s), /* 200 us for every thread to see the start */
        .timeout_ns = (uint64_t)(timeout * 1e9),
        .mem_bytes = mem_bytes,
    };
    int status;
    job = corelat_smt_new(&p, &status);
    if (!job) {
        new_failed(status, "throughput run");
        goto error;
    }
    if (run_job(&job->head, smt_start) < 0)
        goto error; /* KeyboardInterrupt (or the signal handler's exception) is already set */
    if (job->head.status != CORELAT_OK) {
        char what[64];
        PyOS_snprintf(what, sizeof what, "%s loop", corelat_smt_loop_names[loop]);
        raise_failure(what, &job->head, timeout, "the other threads did not reach the starting line");
        goto error;
    }
    npy_intp dims[1] = {(npy_intp)n};
    PyObject *it = array_copy(1, dims, NPY_UINT64, job->iterations);
    PyObject *tk = array_copy(1, dims, NPY_UINT64, job->ticks);
    if (it && tk)
        out = Py_BuildValue("(OO)", it, tk);
    Py_XDECREF(it);
    Py_XDECREF(tk);

error: /* also the way out on success */
    if (job)
        corelat_job_release(&job->head);
    PyMem_Free(cpus);
    return out;
}

static PyObject *py_jobs_alive(PyObject *self, PyObject *noargs)
{
    (void)self;
    (void)noargs;
    return PyLong_FromLong(corelat_jobs_alive());
}

static PyMethodDef methods[] = {
    {"timer_init", (PyCFunction)(void (*)(void))py_timer_init, METH_VARARGS | METH_KEYWORDS,
     "timer_init(kind, calibrate_s=0.03) -> dict: choose 'hw' or 'clock' and calibrate it."},
    {"timer_info", py_timer_info, METH_NOARGS, "timer_info() -> dict or None: the active timer."},
    {"hw_timer", py_hw_timer, METH_NOARGS, "hw_timer() -> dict: the hardware counter and its invariance."},
    {"current_cpu", py_current_cpu, METH_NOARGS, "current_cpu() -> int: sched_getcpu()."},
    {"ticks", py_ticks, METH_NOARGS, "ticks() -> int: read the active timer."},
    {"clock_cost", py_clock_cost, METH_NOARGS, "clock_cost() -> float: clock_gettime cost in ticks."},
    {"pingpong", (PyCFunction)(void (*)(void))py_pingpong, METH_VARARGS | METH_KEYWORDS,
     "pingpong(cpu_a, cpu_b, kernel, round_trips, samples, warmup, timeout, stall_responder=False, budget=0,"
     " freeze=0, home=None, start_delay=0) -> ticks uint64[kept]: kept < samples when the budget"
     " (s, 0 = none) ran out. A thread moved off its CPU ends the call (ThreadMoved, a MeasurementError)."
     " freeze: test hook, s the responder sleeps."
     " start_delay: test hook, s the responder sleeps before the start barrier (a slow start), then runs."
     " home=(node, toucher, cpu): where the page lives; then returns"
     " (ticks, (home_node, bind_errno, query_errno))."},
    {"oneway", (PyCFunction)(void (*)(void))py_oneway, METH_VARARGS | METH_KEYWORDS,
     "oneway(cpu_a, cpu_b, messages, samples, warmup, timeout, stall_responder=False, offset_ticks=0, "
     "budget=0,"
     " freeze=0, home=None) -> (sum_ab int64[kept], sum_ba int64[kept], min_ab, min_ba)"
     "; with home, (that, (home_node, bind_errno, query_errno))"},
    {"chase", (PyCFunction)(void (*)(void))py_chase, METH_VARARGS | METH_KEYWORDS,
     "chase(cpu_a, cpu_b, kind, order, samples, warmup, timeout, stall_responder=False, home=None)"
     " -> ticks uint64[samples]: cpu_a chases the chain `order` through lines cpu_b read (CHASE_CLEAN) or"
     " wrote (CHASE_MODIFIED) before every sample."},
    {"locks", (PyCFunction)(void (*)(void))py_locks, METH_VARARGS | METH_KEYWORDS,
     "locks(cpus, tests, shared, serial, duration, timeout) -> dict of uint64 arrays: calls, ticks,"
     " sermin (fastest bracket), serempty (fastest empty bracket beside them), serk (calls per bracket),"
     " sercalls (tests x cpus) and counter (tests);"
     " codes index LOCK_TESTS. A thread moved off its CPU ends the call (ThreadMoved, a MeasurementError)."
     " group: a group number per thread (shared: one object per group); spread: each thread on any CPU"
     " of its group; ran_on: the CPU each thread ended on; affinity, affinity_outside: the CPUs in its"
     " affinity mask at its end, and those outside its group."},
    {"lock_availability", py_lock_availability, METH_VARARGS,
     "lock_availability(features=None) -> per LOCK_TESTS code (runs_here, why_not, other_arch); features"
     " a dict of CPUID/HWCAP words (arch, max_leaf, max_ext, leaf1_ecx, leaf1_edx, leaf7_ecx, ext1_edx,"
     " hwcap, hwcap2) instead of this CPU's."},
    {"lock_robust_check", py_lock_robust_check, METH_NOARGS,
     "lock_robust_check() -> None, or why the robust mutex failed: an owner dies holding it, the next"
     " locker gets EOWNERDEAD, makes it consistent and goes on."},
    {"jobs_alive", py_jobs_alive, METH_NOARGS,
     "jobs_alive() -> int: jobs whose memory is still held (by a thread left behind); for tests."},
    {"smt_throughput", (PyCFunction)(void (*)(void))py_smt_throughput, METH_VARARGS | METH_KEYWORDS,
     "smt_throughput(cpus, loop, duration, timeout, mem_bytes) -> (iterations uint64[n], ticks uint64[n]):"
     " one thread per CPU runs loop SMT_LOOPS[loop] for duration s, all starting together. A thread moved"
     " off its CPU ends the call (ThreadMoved, a MeasurementError)."},
    {NULL, NULL, 0, NULL},
};

static int exec_module(PyObject *m)
{
    if (PyArray_ImportNumPyAPI() < 0)
        return -1;
    if (PyModule_AddIntConstant(m, "KERNEL_CAS", CORELAT_PP_CAS) < 0 ||
        PyModule_AddIntConstant(m, "KERNEL_RW", CORELAT_PP_RW) < 0 ||
        PyModule_AddIntConstant(m, "CHASE_CLEAN", CORELAT_CHASE_CLEAN) < 0 ||
        PyModule_AddIntConstant(m, "CHASE_MODIFIED", CORELAT_CHASE_MODIFIED) < 0 ||
        PyModule_AddIntConstant(m, "CHASE_MIN_LINES", CORELAT_CHASE_MIN_LINES) < 0 ||
        PyModule_AddIntConstant(m, "CHASE_MAX_LINES", CORELAT_CHASE_MAX_LINES) < 0 ||
        PyModule_AddIntConstant(m, "HAVE_CHASE", CORELAT_HAVE_CHASE) < 0 ||
        PyModule_AddObject(m, "GRACE_S", PyFloat_FromDouble((double)GRACE_NS / 1e9)) < 0 ||
        PyModule_AddIntConstant(m, "MAX_CPU", CORELAT_MAX_CPU) < 0 ||
        PyModule_AddStringConstant(m, "CAS_IMPL", corelat_pp_cas_impl()) < 0)
        return -1;
    PyObject *lock_tests = PyTuple_New(CORELAT_LK_COUNT);
    if (!lock_tests)
        return -1;
    for (int k = 0; k < CORELAT_LK_COUNT; k++) {
        PyObject *name = PyUnicode_FromString(corelat_lock_names[k]);
        if (!name) {
            Py_DECREF(lock_tests);
            return -1;
        }
        PyTuple_SET_ITEM(lock_tests, k, name);
    }
    if (PyModule_AddObject(m, "LOCK_TESTS", lock_tests) < 0) {
        Py_DECREF(lock_tests);
        return -1;
    }
    /* The status codes by name (corelat._core.status maps them to exceptions). */
    PyObject *status_codes = PyTuple_New(CORELAT_STATUS_COUNT);
    if (!status_codes)
        return -1;
    for (int code = 0; code < CORELAT_STATUS_COUNT; code++) {
        const char *name = corelat_status_names[code];
        PyObject *s = name ? PyUnicode_FromString(name) : NULL;
        if (!s) {
            if (!name)
                PyErr_Format(PyExc_SystemError, "status code %d has no name in corelat_status_names", code);
            Py_DECREF(status_codes);
            return -1;
        }
        PyTuple_SET_ITEM(status_codes, code, s);
    }
    if (PyModule_AddObject(m, "STATUS_CODES", status_codes) < 0) {
        Py_DECREF(status_codes);
        return -1;
    }
    PyObject *smt_loops = Py_BuildValue("(ss)", corelat_smt_loop_names[CORELAT_SMT_ALU],
                                        corelat_smt_loop_names[CORELAT_SMT_MEM]);
    if (!smt_loops || PyModule_AddObject(m, "SMT_LOOPS", smt_loops) < 0) {
        Py_XDECREF(smt_loops);
        return -1;
    }
    return 0;
}

static PyModuleDef_Slot slots[] = {
    {Py_mod_exec, exec_module},
    {0, NULL},
};

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT,
    "_corelat",
    "corelat's measuring core (private; use the corelat package).",
    0,
    methods,
    slots,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC PyInit__corelat(void) { return PyModuleDef_Init(&moduledef); }
