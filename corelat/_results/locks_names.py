"""The names of the lock tests: cpuperf's, in its order, what each does, the cpuperf test each
corresponds to, the names corelat 0.1 used (aliases, and what files written then hold), and the
architecture an instruction test belongs to."""

from __future__ import annotations

import platform

#: Public tests in run order: name -> description (cpuperf's DESC column, said in full).
TESTS = {
    "baseline": "call of an empty function (subtracted from the others)",
    "inc-tls": "increment of a thread-local variable",
    "inc-atomic": "atomic fetch-add, relaxed order",
    "inc-atomic-cst": "atomic fetch-add, sequentially consistent",
    "prng-xoroshiro": "xoroshiro128+ pseudo-random number",
    "prng-mod128": "xoroshiro128+ % 128 (a mask)",
    "prng-mod127": "xoroshiro128+ % 127 (a division)",
    "cpu-rdrand64": "rdrand, 64-bit hardware random number",
    "cpu-rdtsc": "rdtsc, read the time stamp counter",
    "cpu-rdtscp": "rdtscp, read the time stamp counter and processor id (waits for earlier instructions)",
    "cpu-rdpid": "rdpid, read the processor id",
    "sys-sched-getcpu": "sched_getcpu(), the processor id (vDSO or rdpid/rdtscp/lsl in the C library)",
    "cpu-lsl": "lsl on Linux's per-CPU segment, the processor id",
    "cpu-cpuid": "cpuid leaf 0 (serializes instruction execution)",
    "cpu-lfence": "lfence (waits for earlier loads)",
    "cpu-sfence": "sfence (orders earlier stores)",
    "cpu-mfence": "mfence (orders earlier loads and stores)",
    "cpu-pause": "pause, the spin-wait hint",
    "cpu-isb": "isb, instruction synchronization barrier",
    "cpu-dmb-ish": "dmb ish, data memory barrier, inner shareable",
    "cpu-dsb-sy": "dsb sy, data synchronization barrier, full system",
    "cpu-cntvct": "mrs cntvct_el0, read the virtual counter",
    "cpu-yield": "yield, the spin-wait hint",
    "cpu-rndr": "mrs rndr, hardware random number",
    "sys-clock-gettime-realtime": "clock_gettime(CLOCK_REALTIME) (vDSO: no system call)",
    "sys-clock-gettime-realtime-coarse": "clock_gettime(CLOCK_REALTIME_COARSE) (vDSO, tick resolution)",
    "sys-clock-gettime-monotonic": "clock_gettime(CLOCK_MONOTONIC) (vDSO: no system call)",
    "sys-clock-gettime-monotonic-coarse": "clock_gettime(CLOCK_MONOTONIC_COARSE) (vDSO, tick resolution)",
    "lock-ticket-spin": "ticket spinlock, inc, unlock",
    "lock-cmpxchg-spin": "compare-exchange spinlock (wait reading, with pause), inc, unlock",
    "lock-ttas-spin": "test-and-test-and-compare-exchange spinlock with pause, inc, unlock",
    "lock-pthread-spin-default": "pthread_spin_lock, inc, unlock",
    "lock-pthread-spin-pshared": "pthread_spin_lock (PTHREAD_PROCESS_SHARED), inc, unlock",
    "lock-pthread-spin-trylock": "spin on pthread_spin_trylock, inc, unlock",
    "lock-pthread-mutex-default": "pthread_mutex_lock, inc, unlock",
    "lock-pthread-mutex-pshared": "pthread_mutex_lock (PTHREAD_PROCESS_SHARED), inc, unlock",
    "lock-pthread-mutex-robust": "pthread_mutex_lock (PTHREAD_MUTEX_ROBUST), inc, unlock",
    "lock-pthread-mutex-inherit": "pthread_mutex_lock (PTHREAD_PRIO_INHERIT), inc, unlock",
    "lock-pthread-mutex-protect": "pthread_mutex_lock (PTHREAD_PRIO_PROTECT, the lowest SCHED_FIFO "
                                  "ceiling), inc, unlock",
    "lock-pthread-mutex-trylock": "spin on pthread_mutex_trylock, inc, unlock",
    "lock-binsema-mutex": "sem_wait on a semaphore of 1, inc, sem_post",
    "lock-binsema-mutex-pshared": "sem_wait on a process-shared semaphore of 1, inc, sem_post",
    "lock-pthread-rwlock-wrlock": "pthread_rwlock_wrlock, inc, unlock (no readers)",
    "lock-pthread-rwlock-wrlock-pshared": "pthread_rwlock_wrlock (PTHREAD_PROCESS_SHARED), inc, unlock",
    "lock-pthread-rwlock-rdlock": "pthread_rwlock_rdlock, atomic inc (readers share), unlock",
    "lock-pthread-rwlock-rdlock-pshared": "pthread_rwlock_rdlock (PTHREAD_PROCESS_SHARED), atomic inc, "
                                          "unlock",
    "lock-semaphore": "sem_wait on a semaphore of the threads sharing it, atomic inc, sem_post",
    "stack-lockfree": "lock-free stack (tagged head, ABA-safe): pop, inc, push",
    "stack-mutex": "stack under a pthread mutex: lock, pop, unlock, inc, lock, push, unlock",
    "stack-sema": "stack under a semaphore of 1: wait, pop, post, inc, wait, push, post",
    "stack-wrlock": "stack under a pthread rwlock's write lock: lock, pop, unlock, inc, lock, push, unlock",
}

#: Tests that exist for testing corelat itself; selected only by their exact name.
HIDDEN_TESTS = {
    "lock-none": "no lock at all, inc: broken on purpose, its counter loses updates when shared",
}

#: cpuperf's name (and its DESC where cpuperf gives several tests one name) of each test; None for
#: corelat's own.
CPUPERF = {name: name for name in TESTS} | {
    "baseline": "baseline",
    "cpu-isb": None, "cpu-dmb-ish": None, "cpu-dsb-sy": None, "cpu-cntvct": None, "cpu-yield": None,
    "cpu-rndr": None,
    "sys-clock-gettime-realtime": "sys-clock-gettime (real time (default))",
    "sys-clock-gettime-realtime-coarse": "sys-clock-gettime (real time (course))",
    "sys-clock-gettime-monotonic": "sys-clock-gettime (monotonic time (default))",
    "sys-clock-gettime-monotonic-coarse": "sys-clock-gettime (monotonic time (course))",
    "lock-ttas-spin": "corelat's own (lock-cmpxchg-spin, reading before the compare-exchange)",
    "lock-pthread-rwlock-wrlock-pshared": "lock-pthread-rwlock-wrlock (no readers, pshared)",
    "lock-pthread-rwlock-rdlock-pshared": "lock-pthread-rwlock-rdlock (no writers, pshared)",
}

#: corelat 0.1's names: selecting one selects the test that replaced it.
ALIASES = {
    "inc-atomic-relaxed": "inc-atomic",
    "inc-atomic-seqcst": "inc-atomic-cst",
    "lock-cas-spin": "lock-cmpxchg-spin",
    "lock-pthread-spin": "lock-pthread-spin-default",
    "lock-pthread-mutex": "lock-pthread-mutex-default",
    "lock-pthread-rwlock-wr": "lock-pthread-rwlock-wrlock",
    "lock-pthread-rwlock-rd": "lock-pthread-rwlock-rdlock",
}

#: What the 0.1 names measured, for files written then (they keep their names and figures).
OLD_TESTS = {
    "inc-atomic-relaxed": "atomic fetch-add, relaxed order",
    "inc-atomic-seqcst": "atomic fetch-add, sequentially consistent",
    "lock-cas-spin": "test-and-test-and-compare-exchange spinlock with pause, inc, unlock",
    "lock-pthread-spin": "pthread_spin_lock, inc, unlock",
    "lock-pthread-mutex": "pthread_mutex_lock, inc, unlock",
    "lock-pthread-rwlock-wr": "pthread_rwlock_wrlock, inc, unlock",
    "lock-pthread-rwlock-rd": "pthread_rwlock_rdlock, atomic inc (readers share), unlock",
}

#: Instruction tests of one architecture (platform.machine() names): not listed elsewhere.
ARCH_ONLY = {name: ("x86_64", "amd64") for name in (
    "cpu-rdrand64", "cpu-rdtsc", "cpu-rdtscp", "cpu-rdpid", "cpu-lsl", "cpu-cpuid", "cpu-lfence",
    "cpu-sfence", "cpu-mfence", "cpu-pause")} | {name: ("aarch64", "arm64") for name in (
    "cpu-isb", "cpu-dmb-ish", "cpu-dsb-sy", "cpu-cntvct", "cpu-yield", "cpu-rndr")}

#: Tests whose counter proves mutual exclusion when shared (the others do not touch a shared
#: counter, or admit several holders by design and count atomically).
EXCLUSIVE = {n for n in TESTS if n.startswith(("lock-", "stack-"))} - {
    "lock-pthread-rwlock-rdlock", "lock-pthread-rwlock-rdlock-pshared", "lock-semaphore"} | {
    "lock-none", "lock-cas-spin", "lock-pthread-spin", "lock-pthread-mutex", "lock-pthread-rwlock-wr"}

#: Tests that count every call in a shared counter (atomically): the counter must equal the calls.
COUNTED = EXCLUSIVE | {"inc-atomic", "inc-atomic-cst", "lock-pthread-rwlock-rdlock",
                       "lock-pthread-rwlock-rdlock-pshared", "lock-semaphore", "inc-atomic-relaxed",
                       "inc-atomic-seqcst", "lock-pthread-rwlock-rd"}


def other_arch(machine: str | None = None) -> set[str]:
    """Instruction tests of another architecture than ``machine`` (default: this one)."""
    m = (machine or platform.machine()).lower()
    return {n for n, arches in ARCH_ONLY.items() if m not in arches}


def describe(name: str) -> str:
    """The description of a test (also of a 0.1 name, as old files hold them)."""
    return TESTS.get(name) or HIDDEN_TESTS.get(name) or OLD_TESTS.get(name) or "(unknown test)"


def cpuperf_name(name: str) -> str:
    """The cpuperf test a test corresponds to, or ``corelat's own``."""
    return CPUPERF.get(ALIASES.get(name, name)) or "corelat's own"


def old_names(name: str) -> list[str]:
    """corelat 0.1's names that select this test now."""
    return [old for old, new in ALIASES.items() if new == name]
