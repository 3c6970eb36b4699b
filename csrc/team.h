/* A job: a team of measuring threads, one pinned to each CPU of a set, and the memory they share.
 *
 * Every kernel's job struct starts with a corelat_job header. The job is reference-counted: the
 * caller holds one reference and every started thread one, so the caller may give up on a thread
 * that stopped running (frozen by a cgroup freezer, SIGSTOPped, starved by a real-time task) and
 * return, while the job's memory stays valid until that thread really exits.
 *
 * The creating thread never measures: it polls corelat_job_poll() with a short slice so the binding
 * can check for Ctrl-C in between. Worker threads start with every signal blocked, so signals reach
 * the Python thread that can handle them, and below the caller's real-time priority (if it has one),
 * so the caller always gets a CPU to stop them. */
#ifndef CORELAT_TEAM_H
#define CORELAT_TEAM_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "placement.h"
#include "spin.h"

typedef struct corelat_job corelat_job;

/* Each member on its own two cache lines (128 bytes: AMD and Intel fetch lines in pairs). Every slow
 * check of a spin-wait writes the member's `beat`; with 48-byte members packed in one array, the
 * two threads' beats shared a line, and each check pulled it across the cores being measured: at
 * the project VM's ~100 ns placement rw read 6-8 % above the bare loop (benchmarks/RESULTS.md,
 * issue 23). The array is allocated with this alignment (corelat_job_start). */
#define CORELAT_MEMBER_ALIGN 128

typedef struct {
    _Alignas(CORELAT_MEMBER_ALIGN) corelat_job *job;
    int index;                 /* 0 .. n-1 */
    int cpu;                   /* the CPU it is pinned to */
    int status;                /* enum corelat_status, set by the work function */
    int err;                   /* errno or detail where the status has one */
    int done;                  /* finished; guarded by the job's mutex */
    atomic_uint_fast64_t beat; /* bumped by the thread while it runs (see spin.h) */
    atomic_int pinned;         /* CORELAT_PIN_* below: set by the creator (see affinity.h) */
    unsigned checks;           /* corelat_member_check() calls so far; the thread's own */
} corelat_member;

/* Values of a member's `pinned`: the thread waits for the creator to leave WAIT. */
enum { CORELAT_PIN_WAIT = 0, CORELAT_PIN_DONE = 1, CORELAT_PIN_FAILED = 2 };

typedef void (*corelat_work_fn)(corelat_member *m);

struct corelat_job {
    /* ---- the outcome, filled by corelat_job_finish() ---- */
    int status;       /* enum corelat_status */
    int failed_cpu;   /* the CPU whose thread failed or did not answer, or -1 */
    int failed_index; /* its member index, or -1 */
    int err;          /* errno or detail */
    /* ---- set by the kernel before corelat_job_start() ---- */
    uint64_t timeout_ns;               /* longest wait of a thread for another */
    corelat_work_fn work;              /* what each member runs */
    void (*destroy)(corelat_job *job); /* frees the kernel's own parts, then the job (free()) */
    /* ---- private to team.c ---- */
    atomic_int refs;
    atomic_int abort; /* CORELAT_RUN / ABORT / STOP (spin.h) */
    atomic_int ready; /* members that reached the starting line */
    int n, started, finished, sync_init, left_behind;
    pthread_t *threads;
    corelat_member *members;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint64_t abort_seen_ns, beat_seen_ns, beat_sum;
    uint64_t watched_ns; /* when corelat_job_poll last looked at the heartbeats */
};

/* Initialise the header of a job the kernel allocated with calloc (refs = 1, the caller's). */
void corelat_job_init(corelat_job *job, uint64_t timeout_ns, corelat_work_fn work,
                      void (*destroy)(corelat_job *job));

/* Start n threads, member i pinned to cpus[i]. Returns 0, or a status (also in job->status; the
 * threads already created are stopped). Poll and finish the job in both cases. */
int corelat_job_start(corelat_job *job, int n, const int *cpus);

/* Wait up to slice_ms. Returns 1 when every thread has finished, -1 when the caller should give up
 * on a thread that does not answer: the team was aborted (a thread failed, or Ctrl-C) and some
 * thread did not finish within grace_ns, or no thread showed a sign of life for timeout_ns +
 * grace_ns. 0 otherwise. Only time the caller watched counts: a gap between two polls far longer
 * than a slice (the process was stopped, or the caller got no CPU) is no silence of the threads. */
int corelat_job_poll(corelat_job *job, int slice_ms, uint64_t grace_ns);

/* Ask every member to stop its spin-waits. */
void corelat_job_abort(corelat_job *job);

/* After poll returned 1 (or -1): join the finished threads, leave the others behind (detached; they
 * hold their references) and fill the outcome: the first real failure ranks before the aborts it
 * caused, a thread left behind before all. Returns job->status. */
int corelat_job_finish(corelat_job *job);

/* Drop a reference; the last one destroys the job. */
void corelat_job_release(corelat_job *job);

/* Jobs not yet destroyed (a thread left behind keeps its job alive): for tests. */
int corelat_jobs_alive(void);

/* Poll until done (or left behind), finish and return the status: for callers without signals to
 * watch (the selftest, benchmarks). */
int corelat_job_run(corelat_job *job, uint64_t grace_ns);

/* Spin (bounded) until all members reached this point; for a common start. */
int corelat_member_barrier(corelat_member *m);

/* A spin-wait set up for this member: its abort flag, heartbeat, CPU and the job's time-out. */
void corelat_member_spin(corelat_member *m, corelat_spin *s);

/* Is the member's thread where it was pinned (an unknown CPU counts as yes: see affinity.h)? */
int corelat_member_on_cpu(const corelat_member *m);

/* The check of a loop without spin-waits (smt, locks), once per chunk of work: the abort flag
 * (CORELAT_EABORT), a heartbeat, and every 16th call whether the thread is still on its CPU
 * (CORELAT_EMOVED: threads moved onto one CPU would measure each other, not the machine, for the
 * rest of a run that may last minutes). Returns 0 or that status. Out of line: the loop keeps its
 * registers. */
int corelat_member_check(corelat_member *m);

/* Show the caller the thread is alive (a plain store: one writer). For loops without spin-waits. */
static inline void corelat_member_beat(corelat_member *m)
{
    atomic_store_explicit(&m->beat, atomic_load_explicit(&m->beat, memory_order_relaxed) + 1,
                          memory_order_relaxed);
}

/* A page shared by a team, mapped and first touched (zeroed) by one member on its own CPU: it lands
 * on that CPU's NUMA node and no third core ever cached its lines. The others wait until it is
 * announced. */
#define CORELAT_PAGE_BYTES 4096

typedef struct {
    char *buf;
    size_t bytes; /* CORELAT_PAGE_BYTES unless a kernel needs more */
    atomic_int ready;
    corelat_place *place; /* NULL: first touch by member 0; else who touches it, where (placement.h) */
} corelat_page;

void corelat_page_init(corelat_page *p);

/* Spin (bounded, abort-aware) until the page is announced. */
int corelat_page_await(corelat_page *p, corelat_member *m);

/* Publish the page if this member is its first toucher (member 0 unless p->place names another),
 * calling prepare(buf) (may be NULL) after the zeroing and before the announcement; else await it.
 * With a third-party toucher the line is left Modified in the third CPU's cache. */
int corelat_page_join(corelat_page *p, corelat_member *m, void (*prepare)(char *buf));

/* Unmap the page if it was mapped. Call from the job's destroy. */
void corelat_page_free(corelat_page *p);

/* Test hook: behave like a partner descheduled forever that still obeys abort. */
int corelat_member_stall(corelat_member *m);

/* Test hook: like a frozen thread, ignore everything (abort included) for `ns`, then return
 * CORELAT_EABORT. The caller must leave it behind. */
int corelat_member_freeze(corelat_member *m, uint64_t ns);

/* Test hook: a thread that starts late. Sleep `ns` (in short slices, obeying abort), then return
 * CORELAT_OK, or CORELAT_EABORT if the team was told to stop meanwhile. */
int corelat_member_delay(corelat_member *m, uint64_t ns);

#endif
