/* pool.c: the thread pool, and gp_run_kernel, which runs one kernel call over it (entry.c calls
 * it).  Owns the thread settings set_threads (module.c) changes and the split count op_stats
 * (ops.c) reports; PyInit__fastpath (module.c) calls gp_pool_at_import.  Relies on fastpath.h
 * (gp_kernel, GP_MAX_OPS, GP_MAX_THREADS, GP_HAVE_THREADS).
 *
 * Threads: a small pool of pthreads that run chunks of one kernel call while the caller, with
 * the GIL released, runs chunks too.  Each element depends on its own inputs only, so any split
 * gives the one-thread result bit for bit.  Another caller that finds the pool busy runs its
 * call alone (correct, just not parallel). */

#include "fastpath.h"

/* GP_MAX_THREADS: fastpath.h */
int gp_n_threads = 1;                  /* set by _cpu_threads (GPUPROMOTE_NUM_THREADS) */
unsigned long long gp_calls_split;     /* kernel calls split over threads (op_stats()) */
int64_t gp_min_chunk = 1 << 16;        /* elements per thread at least */
#define GP_RELEASE_GIL_MIN 16384       /* elements: below, releasing the GIL costs more than it gives */
#define GP_MIN_SHARED_CHUNK 16384      /* elements: the smallest of several chunks per thread */

typedef struct {
    gp_kernel fn;
    char *data[GP_MAX_OPS];
    int64_t itemsize[GP_MAX_OPS];   /* 0 for a folded scalar: every chunk reads the same value */
    int nops;
    int64_t n, chunk;
    int nchunks;
} Job;

static void
run_chunk(const Job *job, int c)
{
    int64_t lo = (int64_t)c * job->chunk;
    int64_t hi = lo + job->chunk < job->n ? lo + job->chunk : job->n;
    if (lo >= hi) {
        return;
    }
    char *data[GP_MAX_OPS];
    for (int k = 0; k < job->nops; k++) {
        data[k] = job->data[k] + lo * job->itemsize[k];
    }
    job->fn(data, hi - lo);
}

#ifdef GP_HAVE_THREADS   /* fastpath.h: not on Windows */
#include <pthread.h>
#include <unistd.h>

static struct {
    pthread_mutex_t mu;
    pthread_cond_t wake, done;
    int workers;            /* started worker threads */
    pid_t pid;              /* the process that started them: a forked child has none */
    unsigned long generation;
    const Job *job;
    int next, remaining, busy;
} pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0, NULL, 0, 0, 0};

static void *
pool_worker(void *unused)
{
    (void)unused;
    unsigned long seen = 0;
    pthread_mutex_lock(&pool.mu);
    seen = pool.generation;
    for (;;) {
        while (pool.generation == seen) {
            pthread_cond_wait(&pool.wake, &pool.mu);
        }
        seen = pool.generation;
        while (pool.job != NULL && pool.next < pool.job->nchunks) {
            const Job *job = pool.job;
            int c = pool.next++;
            pthread_mutex_unlock(&pool.mu);
            run_chunk(job, c);
            pthread_mutex_lock(&pool.mu);
            if (--pool.remaining == 0) {
                pthread_cond_signal(&pool.done);
            }
        }
    }
    return NULL;
}

static void
pool_after_fork_in_child(void)
{
    /* the workers were not forked: start again with none (and fresh locks) */
    pthread_mutex_init(&pool.mu, NULL);
    pthread_cond_init(&pool.wake, NULL);
    pthread_cond_init(&pool.done, NULL);
    pool.workers = 0;
    pool.job = NULL;
    pool.busy = 0;
    pool.pid = getpid();
}

/* Run every chunk of `job`, on the pool where it is free; called without the GIL. */
static void
pool_run(const Job *job)
{
    pthread_mutex_lock(&pool.mu);
    if (pool.busy) {
        pthread_mutex_unlock(&pool.mu);
        for (int c = 0; c < job->nchunks; c++) {
            run_chunk(job, c);
        }
        return;
    }
    pool.busy = 1;
    int wanted = job->nchunks - 1 < GP_MAX_THREADS ? job->nchunks - 1 : GP_MAX_THREADS;
    while (pool.workers < wanted) {
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        int failed = pthread_create(&t, &attr, pool_worker, NULL);
        pthread_attr_destroy(&attr);
        if (failed) {
            break;  /* fewer helpers: the caller runs what they leave */
        }
        pool.workers++;
    }
    pool.job = job;
    pool.next = 0;
    pool.remaining = job->nchunks;
    pool.generation++;
    pthread_cond_broadcast(&pool.wake);
    while (pool.next < job->nchunks) {
        int c = pool.next++;
        pthread_mutex_unlock(&pool.mu);
        run_chunk(job, c);
        pthread_mutex_lock(&pool.mu);
        pool.remaining--;
    }
    while (pool.remaining > 0) {
        pthread_cond_wait(&pool.done, &pool.mu);
    }
    pool.job = NULL;
    pool.busy = 0;
    pthread_mutex_unlock(&pool.mu);
}

/* At import (PyInit__fastpath): the process the workers belong to, and a fresh start in a
 * forked child. */
void
gp_pool_at_import(void)
{
    pool.pid = getpid();
    pthread_atfork(NULL, NULL, pool_after_fork_in_child);
}
#endif

/* fn over n >= 1 elements: over threads when there is enough work for two, else in this thread
 * (without the GIL once the loop is long enough to be worth it). Called with the GIL. */
void
gp_run_kernel(gp_kernel fn, char **data, const int64_t *itemsize, int nops, int64_t n)
{
    int64_t parts = gp_n_threads > 1 ? n / gp_min_chunk : 1;
    if (parts > gp_n_threads) {
        parts = gp_n_threads;
    }
#ifdef GP_HAVE_THREADS
    if (parts >= 2) {
        Job job;
        job.fn = fn;
        job.nops = nops;
        for (int k = 0; k < nops; k++) {
            job.data[k] = data[k];
            job.itemsize[k] = itemsize[k];
        }
        job.n = n;
        /* Four chunks per thread, taken in turn: a thread the OS runs late (a busy machine)
         * takes fewer, instead of holding up the call. Chunks of whole 64-element blocks, so
         * that no two threads write one cache line. */
        int64_t nchunks = n / (parts * 4) >= GP_MIN_SHARED_CHUNK ? parts * 4 : parts;
        job.chunk = ((n + nchunks - 1) / nchunks + 63) & ~(int64_t)63;
        job.nchunks = (int)((n + job.chunk - 1) / job.chunk);
        gp_calls_split++;
        Py_BEGIN_ALLOW_THREADS
        pool_run(&job);
        Py_END_ALLOW_THREADS
        return;
    }
#endif
    if (n >= GP_RELEASE_GIL_MIN) {
        Py_BEGIN_ALLOW_THREADS
        fn(data, n);
        Py_END_ALLOW_THREADS
    }
    else {
        fn(data, n);
    }
}
