/* corelat._corelat: the one binding file. Argument parsing, NumPy arrays, the GIL, and turning the
 * status codes that measuring threads carry back into Python exceptions. Python validates arguments
 * first (corelat/_validate.py); the checks here only keep memory safe. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <numpy/arrayobject.h>

#include <errno.h>
#include <string.h>

#include "affinity.h"
#include "locks.h"
#include "oneway.h"
#include "pingpong.h"
#include "smt.h"
#include "spin.h"
#include "team.h"
#include "timer.h"

/* How often the waiting thread takes the GIL back to look for Ctrl-C. */
#define POLL_MS 100

static corelat_timer_info timer_state;
static int timer_ready;

static PyObject *timer_dict(void)
{
    return Py_BuildValue("{s:s,s:d,s:d,s:d,s:O,s:d}", "name", timer_state.name, "ticks_per_ns",
                         timer_state.ticks_per_ns, "overhead_ticks", timer_state.overhead,
                         "overhead_serial_ticks", timer_state.overhead_serial, "hw_invariant",
                         timer_state.hw_invariant ? Py_True : Py_False, "frequency_hz",
                         timer_state.ticks_per_ns * 1e9);
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

/* Raise the exception that a failed measurement deserves. Called with the GIL held. */
static void raise_failure(const char *what, int status, int failed_cpu, int err, double timeout_s,
                          const char *waited_for)
{
    if (status == CORELAT_ENOMEM || status == CORELAT_ETHREAD) {
        errno = err ? err : ENOMEM;
        PyErr_SetFromErrno(PyExc_OSError);
        return;
    }
    const char *clsname = status == CORELAT_ETIMEOUT ? "MeasurementTimeout" : "MeasurementError";
    PyObject *mod = PyImport_ImportModule("corelat._errors");
    PyObject *cls = mod ? PyObject_GetAttrString(mod, clsname) : NULL;
    Py_XDECREF(mod);
    if (!cls)
        return;
    char secs[32];
    PyOS_snprintf(secs, sizeof secs, "%.3g", timeout_s);
    switch (status) {
    case CORELAT_ETIMEOUT:
        PyErr_Format(cls, "%s: %s within %s s (the thread on CPU %d gave up; is the machine overloaded?)", what,
                     waited_for, secs, failed_cpu);
        break;
    case CORELAT_EPIN:
        PyErr_Format(cls, "%s: cannot pin a thread to CPU %d (%s)", what, failed_cpu, strerror(err));
        break;
    case CORELAT_EMOVED:
        PyErr_Format(cls, "%s: a thread pinned to CPU %d ran on CPU %d (cpuset changed?)", what, failed_cpu,
                     err);
        break;
    case CORELAT_EABORT:
        PyErr_Format(cls, "%s: measurement aborted", what);
        break;
    case CORELAT_EINVAL:
        if (err)
            PyErr_Format(cls, "%s on CPU %d: a call failed (%s)", what, failed_cpu, strerror(err));
        else
            PyErr_Format(cls, "%s: invalid arguments", what);
        break;
    default:
        PyErr_Format(cls, "%s: measurement failed (status %d)", what, status);
        break;
    }
    Py_DECREF(cls);
}

/* A ping-pong or one-way pair that failed. */
static void raise_status(int status, int cpu_a, int cpu_b, int failed_cpu, int err, double timeout_s)
{
    char what[64];
    PyOS_snprintf(what, sizeof what, "CPUs %d and %d", cpu_a, cpu_b);
    raise_failure(what, status, failed_cpu, err, timeout_s, "the partner did not answer");
}

/* Wait for a started team, checking for Ctrl-C every POLL_MS with the GIL held.
 * Returns -1 with the signal's exception set if interrupted (the team is aborted; still join). */
static int wait_team(corelat_team *team)
{
    for (;;) {
        int done;
        Py_BEGIN_ALLOW_THREADS
        done = corelat_team_wait(team, POLL_MS);
        Py_END_ALLOW_THREADS
        if (done)
            return 0;
        if (PyErr_CheckSignals() < 0) {
            corelat_team_abort(team);
            Py_BEGIN_ALLOW_THREADS
            while (!corelat_team_wait(team, POLL_MS))
                ;
            Py_END_ALLOW_THREADS
            return -1;
        }
    }
}

/* One shape for every kernel: start its team with the GIL released, wait while watching for Ctrl-C,
 * then finish (join, free) with the GIL released again. The adapters give run_job one signature. */
typedef int (*job_start_fn)(void *job, corelat_team *team);
typedef void (*job_finish_fn)(void *job, corelat_team *team);

static int pp_start(void *job, corelat_team *team) { return corelat_pp_start(job, team); }
static void pp_finish(void *job, corelat_team *team) { corelat_pp_finish(job, team); }
static int ow_start(void *job, corelat_team *team) { return corelat_ow_start(job, team); }
static void ow_finish(void *job, corelat_team *team) { corelat_ow_finish(job, team); }
static int locks_start(void *job, corelat_team *team) { return corelat_locks_start(job, team); }
static void locks_finish(void *job, corelat_team *team) { corelat_locks_finish(job, team); }
static int smt_start(void *job, corelat_team *team) { return corelat_smt_start(job, team); }
static void smt_finish(void *job, corelat_team *team) { corelat_smt_finish(job, team); }

/* Returns -1 if interrupted, with the signal's exception set; else 0 and the job's status says how
 * the measurement went. */
static int run_job(void *job, job_start_fn start, job_finish_fn finish)
{
    corelat_team team;
    int rc, interrupted = 0;
    Py_BEGIN_ALLOW_THREADS
    rc = start(job, &team);
    Py_END_ALLOW_THREADS
    if (rc == CORELAT_OK)
        interrupted = wait_team(&team) < 0;
    Py_BEGIN_ALLOW_THREADS
    finish(job, &team);
    Py_END_ALLOW_THREADS
    return interrupted ? -1 : 0;
}

static PyObject *py_pingpong(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static char *names[] = {"cpu_a", "cpu_b", "kernel", "round_trips", "samples", "warmup", "timeout",
                            "stall_responder", NULL};
    int cpu_a, cpu_b, kernel, stall = 0;
    long long round_trips, samples, warmup;
    double timeout;
    PyArrayObject *ticks = NULL, *migrated = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "iiiLLLd|p", names, &cpu_a, &cpu_b, &kernel, &round_trips,
                                     &samples, &warmup, &timeout, &stall))
        return NULL;
    if (round_trips < 1 || samples < 1 || warmup < 0 || !(timeout > 0 && timeout < 1e6) ||
        (kernel != CORELAT_PP_CAS && kernel != CORELAT_PP_RW) || cpu_a < 0 || cpu_b < 0 || cpu_a == cpu_b) {
        PyErr_SetString(PyExc_ValueError, "invalid ping-pong arguments");
        return NULL;
    }
    if (!timer_ready) {
        PyErr_SetString(PyExc_RuntimeError, "timer not initialised");
        return NULL;
    }
    npy_intp dims[1] = {(npy_intp)samples};
    ticks = (PyArrayObject *)PyArray_SimpleNew(1, dims, NPY_UINT64);
    migrated = (PyArrayObject *)PyArray_ZEROS(1, dims, NPY_BOOL, 0);
    if (!ticks || !migrated)
        goto error;

    corelat_pp_job job = {
        .kernel = kernel,
        .cpu_a = cpu_a,
        .cpu_b = cpu_b,
        .round_trips = round_trips,
        .samples = samples,
        .warmup = warmup,
        .timeout_ns = (uint64_t)(timeout * 1e9),
        .stall_responder = stall,
        .ticks = (uint64_t *)PyArray_DATA(ticks),
        .migrated = (uint8_t *)PyArray_DATA(migrated),
    };
    if (run_job(&job, pp_start, pp_finish) < 0)
        goto error; /* KeyboardInterrupt (or the signal handler's exception) is already set */
    if (job.status != CORELAT_OK) {
        raise_status(job.status, cpu_a, cpu_b, job.failed_cpu, job.err, timeout);
        goto error;
    }
    return Py_BuildValue("(NN)", (PyObject *)ticks, (PyObject *)migrated);

error:
    Py_XDECREF(ticks);
    Py_XDECREF(migrated);
    return NULL;
}

/* ---- one-way messages (csrc/oneway.c) ---- */

static PyObject *py_oneway(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static char *names[] = {"cpu_a",           "cpu_b",        "messages", "samples", "warmup", "timeout",
                            "stall_responder", "offset_ticks", NULL};
    int cpu_a, cpu_b, stall = 0;
    long long messages, samples, warmup, offset = 0;
    double timeout;
    PyArrayObject *ab = NULL, *ba = NULL, *migrated = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "iiLLLd|pL", names, &cpu_a, &cpu_b, &messages, &samples,
                                     &warmup, &timeout, &stall, &offset))
        return NULL;
    if (messages < 1 || samples < 1 || warmup < 0 || !(timeout > 0 && timeout < 1e6) || cpu_a < 0 ||
        cpu_b < 0 || cpu_a == cpu_b) {
        PyErr_SetString(PyExc_ValueError, "invalid one-way arguments");
        return NULL;
    }
    if (!timer_ready) {
        PyErr_SetString(PyExc_RuntimeError, "timer not initialised");
        return NULL;
    }
    npy_intp dims[1] = {(npy_intp)samples};
    ab = (PyArrayObject *)PyArray_SimpleNew(1, dims, NPY_INT64);
    ba = (PyArrayObject *)PyArray_SimpleNew(1, dims, NPY_INT64);
    migrated = (PyArrayObject *)PyArray_ZEROS(1, dims, NPY_BOOL, 0);
    if (!ab || !ba || !migrated)
        goto error;

    corelat_ow_job job = {
        .cpu_a = cpu_a,
        .cpu_b = cpu_b,
        .messages = messages,
        .samples = samples,
        .warmup = warmup,
        .timeout_ns = (uint64_t)(timeout * 1e9),
        .stall_responder = stall,
        .offset_ticks = offset,
        .sum_ab = (int64_t *)PyArray_DATA(ab),
        .sum_ba = (int64_t *)PyArray_DATA(ba),
        .migrated = (uint8_t *)PyArray_DATA(migrated),
    };
    if (run_job(&job, ow_start, ow_finish) < 0)
        goto error; /* KeyboardInterrupt (or the signal handler's exception) is already set */
    if (job.status != CORELAT_OK) {
        raise_status(job.status, cpu_a, cpu_b, job.failed_cpu, job.err, timeout);
        goto error;
    }
    return Py_BuildValue("(NNNLL)", (PyObject *)ab, (PyObject *)ba, (PyObject *)migrated,
                         (long long)job.min_ab, (long long)job.min_ba);

error:
    Py_XDECREF(ab);
    Py_XDECREF(ba);
    Py_XDECREF(migrated);
    return NULL;
}

/* ---- locks (csrc/locks.c) ---- */

/* Raise the exception a failed lock run deserves. Called with the GIL held. */
static void raise_lock_status(const corelat_lock_job *job, double timeout_s)
{
    if (job->status == CORELAT_EINVAL && job->err == 0) {
        PyErr_SetString(PyExc_ValueError, "invalid lock run arguments");
        return;
    }
    char what[80];
    PyOS_snprintf(what, sizeof what, "lock test %s",
                  job->failed_test >= 0 && job->failed_test < CORELAT_LK_COUNT ? corelat_lock_names[job->failed_test]
                                                                               : "(setup)");
    raise_failure(what, job->status, job->failed_cpu, job->err, timeout_s,
                  "the lock or the other threads did not come");
}

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
    static char *names[] = {"cpus", "tests", "shared", "serial", "duration", "timeout", NULL};
    PyObject *cpus_obj, *tests_obj, *out = NULL;
    int shared;
    double serial, duration, timeout;
    int *cpus = NULL, *tests = NULL;
    Py_ssize_t n = 0, ntests = 0;
    PyArrayObject *calls = NULL, *ticks = NULL, *sermin = NULL, *sercalls = NULL, *counter = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOpddd", names, &cpus_obj, &tests_obj, &shared, &serial,
                                     &duration, &timeout))
        return NULL;
    if (int_array(cpus_obj, "cpus must be a sequence of CPU ids", &cpus, &n) < 0 ||
        int_array(tests_obj, "tests must be a sequence of lock test codes", &tests, &ntests) < 0)
        goto error;
    int valid = n >= 1 && n <= 65536 && ntests >= 1 && ntests <= CORELAT_LK_COUNT && serial > 0 &&
                serial <= 3600 && duration > 0 && duration <= 3600 && timeout > 0 && timeout < 1e6;
    for (Py_ssize_t i = 0; valid && i < ntests; i++) {
        valid = tests[i] < CORELAT_LK_COUNT;
        for (Py_ssize_t j = 0; valid && j < i; j++)
            valid = tests[j] != tests[i];
    }
    if (!valid) {
        PyErr_SetString(PyExc_ValueError, "invalid lock run arguments");
        goto error;
    }
    if (!timer_ready) {
        PyErr_SetString(PyExc_RuntimeError, "timer not initialised");
        goto error;
    }
    npy_intp dims[2] = {(npy_intp)ntests, (npy_intp)n};
    calls = (PyArrayObject *)PyArray_ZEROS(2, dims, NPY_UINT64, 0);
    ticks = (PyArrayObject *)PyArray_ZEROS(2, dims, NPY_UINT64, 0);
    sermin = (PyArrayObject *)PyArray_ZEROS(2, dims, NPY_UINT64, 0);
    sercalls = (PyArrayObject *)PyArray_ZEROS(2, dims, NPY_UINT64, 0);
    counter = (PyArrayObject *)PyArray_ZEROS(1, dims, NPY_UINT64, 0);
    if (!calls || !ticks || !sermin || !sercalls || !counter)
        goto error;

    double per_s = timer_state.ticks_per_ns * 1e9;
    corelat_lock_job job = {
        .n = (int)n,
        .cpus = cpus,
        .ntests = (int)ntests,
        .tests = tests,
        .shared = shared,
        .serial_ticks = (uint64_t)(serial * per_s) + 1,
        .duration_ticks = (uint64_t)(duration * per_s) + 1,
        .lead_ticks = (uint64_t)(200e-6 * per_s), /* 200 us for every thread to see the start */
        .timeout_ns = (uint64_t)(timeout * 1e9),
        .calls = (uint64_t *)PyArray_DATA(calls),
        .ticks = (uint64_t *)PyArray_DATA(ticks),
        .sermin = (uint64_t *)PyArray_DATA(sermin),
        .sercalls = (uint64_t *)PyArray_DATA(sercalls),
        .counter = (uint64_t *)PyArray_DATA(counter),
    };
    if (run_job(&job, locks_start, locks_finish) < 0)
        goto error; /* KeyboardInterrupt (or the signal handler's exception) is already set */
    if (job.status != CORELAT_OK) {
        raise_lock_status(&job, timeout);
        goto error;
    }
    out = PyDict_New();
    if (!out || PyDict_SetItemString(out, "calls", (PyObject *)calls) < 0 ||
        PyDict_SetItemString(out, "ticks", (PyObject *)ticks) < 0 ||
        PyDict_SetItemString(out, "sermin", (PyObject *)sermin) < 0 ||
        PyDict_SetItemString(out, "sercalls", (PyObject *)sercalls) < 0 ||
        PyDict_SetItemString(out, "counter", (PyObject *)counter) < 0)
        Py_CLEAR(out);

error: /* also the way out on success: `out` holds its own references */
    Py_XDECREF(calls);
    Py_XDECREF(ticks);
    Py_XDECREF(sermin);
    Py_XDECREF(sercalls);
    Py_XDECREF(counter);
    PyMem_Free(cpus);
    PyMem_Free(tests);
    return out;
}

/* ---- busy-sibling throughput (csrc/smt.c) ---- */

/* Raise the exception a failed throughput run deserves. Called with the GIL held. */
static void raise_smt_status(const corelat_smt_job *job, double timeout_s)
{
    if (job->status == CORELAT_EINVAL) {
        PyErr_SetString(PyExc_ValueError, "invalid throughput run arguments");
        return;
    }
    char what[64];
    PyOS_snprintf(what, sizeof what, "%s loop", corelat_smt_loop_names[job->loop]);
    raise_failure(what, job->status, job->failed_cpu, job->err, timeout_s,
                  "the other threads did not reach the starting line");
}

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
    PyArrayObject *iterations = NULL, *ticks = NULL, *migrated = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OiddK", names, &cpus_obj, &loop, &duration, &timeout,
                                     &mem_bytes))
        return NULL;
    if (int_array(cpus_obj, "cpus must be a sequence of CPU ids", &cpus, &n) < 0)
        goto error;
    if (n < 1 || n > 4096 || loop < 0 || loop >= CORELAT_SMT_LOOP_COUNT || !(duration > 0 && duration <= 3600) ||
        !(timeout > 0 && timeout < 1e6) || mem_bytes < CORELAT_SMT_MEM_MIN || mem_bytes > CORELAT_SMT_MEM_MAX ||
        mem_bytes % 64 != 0) {
        PyErr_SetString(PyExc_ValueError, "invalid throughput run arguments");
        goto error;
    }
    if (!timer_ready) {
        PyErr_SetString(PyExc_RuntimeError, "timer not initialised");
        goto error;
    }
    npy_intp dims[1] = {(npy_intp)n};
    iterations = (PyArrayObject *)PyArray_ZEROS(1, dims, NPY_UINT64, 0);
    ticks = (PyArrayObject *)PyArray_ZEROS(1, dims, NPY_UINT64, 0);
    migrated = (PyArrayObject *)PyArray_ZEROS(1, dims, NPY_BOOL, 0);
    if (!iterations || !ticks || !migrated)
        goto error;

    double per_s = timer_state.ticks_per_ns * 1e9;
    corelat_smt_job job = {
        .loop = loop,
        .n = (int)n,
        .cpus = cpus,
        .duration_ticks = (uint64_t)(duration * per_s) + 1,
        .lead_ticks = (uint64_t)(200e-6 * per_s), /* 200 us for every thread to see the start */
        .timeout_ns = (uint64_t)(timeout * 1e9),
        .mem_bytes = mem_bytes,
        .iterations = (uint64_t *)PyArray_DATA(iterations),
        .ticks = (uint64_t *)PyArray_DATA(ticks),
        .migrated = (uint8_t *)PyArray_DATA(migrated),
    };
    if (run_job(&job, smt_start, smt_finish) < 0)
        goto error; /* KeyboardInterrupt (or the signal handler's exception) is already set */
    if (job.status != CORELAT_OK) {
        raise_smt_status(&job, timeout);
        goto error;
    }
    out = Py_BuildValue("(OOO)", (PyObject *)iterations, (PyObject *)ticks, (PyObject *)migrated);

error: /* also the way out on success: `out` holds its own references */
    Py_XDECREF(iterations);
    Py_XDECREF(ticks);
    Py_XDECREF(migrated);
    PyMem_Free(cpus);
    return out;
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
     "pingpong(cpu_a, cpu_b, kernel, round_trips, samples, warmup, timeout, stall_responder=False)"
     " -> (ticks uint64[samples], migrated bool[samples])"},
    {"oneway", (PyCFunction)(void (*)(void))py_oneway, METH_VARARGS | METH_KEYWORDS,
     "oneway(cpu_a, cpu_b, messages, samples, warmup, timeout, stall_responder=False, offset_ticks=0)"
     " -> (sum_ab int64[samples], sum_ba int64[samples], migrated bool[samples], min_ab, min_ba)"},
    {"locks", (PyCFunction)(void (*)(void))py_locks, METH_VARARGS | METH_KEYWORDS,
     "locks(cpus, tests, shared, serial, duration, timeout) -> dict of uint64 arrays: calls, ticks,"
     " sermin, sercalls (tests x cpus) and counter (tests); codes index LOCK_TESTS."},
    {"smt_throughput", (PyCFunction)(void (*)(void))py_smt_throughput, METH_VARARGS | METH_KEYWORDS,
     "smt_throughput(cpus, loop, duration, timeout, mem_bytes) -> (iterations uint64[n], ticks uint64[n],"
     " migrated bool[n]): one thread per CPU runs loop SMT_LOOPS[loop] for duration s, all starting together."},
    {NULL, NULL, 0, NULL},
};

static int exec_module(PyObject *m)
{
    if (PyArray_ImportNumPyAPI() < 0)
        return -1;
    if (PyModule_AddIntConstant(m, "KERNEL_CAS", CORELAT_PP_CAS) < 0 ||
        PyModule_AddIntConstant(m, "KERNEL_RW", CORELAT_PP_RW) < 0)
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
    PyModuleDef_HEAD_INIT, "_corelat", "corelat's measuring core (private; use the corelat package).", 0,
    methods, slots, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__corelat(void) { return PyModuleDef_Init(&moduledef); }
