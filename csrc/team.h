/* A team of measuring threads, one pinned to each CPU of a set, created and joined per call.
 *
 * The creating thread never measures: it waits in corelat_team_wait() with a short time-out so the
 * binding can check for Ctrl-C between waits and raise the team's abort flag. Worker threads start
 * with every signal blocked, so signals reach the Python thread that can handle them. */
#ifndef CORELAT_TEAM_H
#define CORELAT_TEAM_H

#include <pthread.h>
#include <stdatomic.h>

typedef struct corelat_team corelat_team;

typedef struct {
    corelat_team *team;
    int index;   /* 0 .. n-1 */
    int cpu;     /* the CPU it is pinned to */
    int status;  /* enum corelat_status, set by the work function */
    int err;     /* errno detail where the status has one */
    void *arg;   /* the work's shared argument */
} corelat_member;

typedef void (*corelat_work_fn)(corelat_member *m);

struct corelat_team {
    int n;
    int started;               /* threads actually created */
    pthread_t *threads;
    corelat_member *members;
    corelat_work_fn fn;
    atomic_int abort;          /* set to stop every member's spin-waits */
    atomic_int ready;          /* members that reached the starting line */
    int finished;              /* guarded by mu */
    pthread_mutex_t mu;
    pthread_cond_t cv;
};

/* Start n threads, member i pinned to cpus[i], each running fn. Returns 0, or a corelat_status
 * (with *err the errno) after stopping and joining what was started. */
int corelat_team_start(corelat_team *t, int n, const int *cpus, corelat_work_fn fn, void *arg, int *err);

/* Wait up to timeout_ms for every member to finish; 1 when all have, 0 otherwise. */
int corelat_team_wait(corelat_team *t, int timeout_ms);

/* Ask every member to stop its spin-waits. */
void corelat_team_abort(corelat_team *t);

/* Join all threads and free the team. Member statuses must be read before this. */
void corelat_team_join(corelat_team *t);

/* Wait until every started member has finished (also after a failed start, when the threads already
 * created are still running), then merge the team's outcome into a job's: returns `status` if it
 * already records a failure, else the first failing member's status; for a failing member sets
 * *index, *cpu and (where it has one) *err. *index is -1 when no member failed. Call before join. */
int corelat_team_settle(corelat_team *t, int status, int *index, int *cpu, int *err);

/* Spin (bounded) until all members reached this point; for a common start. */
int corelat_team_barrier(corelat_member *m, unsigned long long timeout_ns);

/* A page shared by a team, mapped and first touched (zeroed) by one member on its own CPU: it lands
 * on that CPU's NUMA node and no third core ever cached its lines. The others wait until it is
 * announced. */
#define CORELAT_PAGE_BYTES 4096

typedef struct {
    char *buf;
    atomic_int ready;
} corelat_page;

void corelat_page_init(corelat_page *p);

/* Map, zero and announce the page; returns a status (errno in m->err on failure). */
int corelat_page_publish(corelat_page *p, corelat_member *m);

/* Spin (bounded, abort-aware) until the page is announced. */
int corelat_page_await(corelat_page *p, corelat_member *m, unsigned long long timeout_ns);

/* Unmap the page if it was mapped. Call after the team is joined. */
void corelat_page_free(corelat_page *p);

/* Test hook: behave like a partner descheduled forever that still obeys abort. */
int corelat_member_stall(corelat_member *m);

#endif
