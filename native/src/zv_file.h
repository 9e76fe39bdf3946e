/*
 * zv_internal.h — what the traversal (zv_walk.c) and the thread pipeline
 * (zv_pipeline.c) share.  Not part of the public API.
 */
#ifndef ZV_INTERNAL_H
#define ZV_INTERNAL_H

#include "zvcore.h"

#include <pthread.h>

/*
 * One record in flight.  The walker fills it; if it is a regular file the
 * walker also opens it (fd >= 0) and a worker finishes it; then the consumer
 * takes it.  Slots form a ring so records leave in the order they entered.
 */
typedef struct zv_slot {
    zv_record rec;
    int fd;     /* open regular file still to be scanned, or -1 */
    int state;  /* SLOT_EMPTY, SLOT_PENDING, SLOT_CLAIMED, SLOT_READY */
} zv_slot;

enum { SLOT_EMPTY = 0, SLOT_PENDING, SLOT_CLAIMED, SLOT_READY };

struct zv_walk {
    zv_options opt;
    int root_fd;
    uint64_t root_dev;

    /*
     * One lock, three conditions, each with its own sleeper(s), and a flag
     * or count telling whether anyone sleeps there, so that the per-file
     * hot path signals nobody when nobody waits (a wake-up per file made
     * batches of one record and a futex storm on trees of small files).
     */
    pthread_mutex_t lock;
    pthread_cond_t work_cv;  /* workers: a PENDING slot, or the end */
    pthread_cond_t space_cv; /* walker: a free slot or a free fd */
    pthread_cond_t ready_cv; /* consumer: the ring is filling up, or the end */
    int idle_workers;
    int walker_waiting;
    int consumer_waiting;
    zv_slot *ring;
    size_t ring_size;
    uint64_t head;          /* next slot the consumer takes */
    uint64_t claim;         /* workers look for work from here */
    uint64_t tail;          /* next slot the walker fills */
    size_t open_files;      /* fds held by pending slots */
    size_t max_open_files;
    int walker_done;
    int stop;

    pthread_t walker;
    int walker_started;
    pthread_t *workers;
    int nworkers;

    uint64_t entries;       /* atomics: progress counters */
    uint64_t bytes;
};

/* Traversal body, run on the walker thread (zv_walk.c). */
void zv_traverse(struct zv_walk *w);

/*
 * Hand a finished-or-pending record to the pipeline (zv_pipeline.c).
 * Blocks while the ring is full.  fd >= 0 means "scan this file".
 * @return 0, or -1 if the walk is stopping (record freed, fd closed).
 */
int zv_pipeline_push(struct zv_walk *w, zv_record *rec, int fd);

/* Wait until another open file may be held; -1 if stopping. */
int zv_pipeline_reserve_fd(struct zv_walk *w);
void zv_pipeline_release_fd(struct zv_walk *w);

#endif
