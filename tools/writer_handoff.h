/*
 * The hand-off between an event loop and a writer thread that tools/http_ceiling.c and
 * tools/workqueue_ceiling.c share, in the shape of replay's (the event loops hand batches
 * to one writer, which answers through them): the event loop fills one batch while the
 * writer commits the other; the writer tells the event loop through an eventfd that it is
 * done, and the event loop answers that batch and lets the writer take the next.
 */
#ifndef WRITER_HANDOFF_H
#define WRITER_HANDOFF_H

#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

typedef struct {
    void *filling, *writing;
    /* `busy`: the writer has `writing`; `done`: it has committed it. Both under `lock`. */
    int busy, done;
    /* Readable when the writer is done: the event loop watches it. */
    int wake_fd;
    void (*commit)(void *batch);
    /* Writes a committed batch's answers, on the event loop's thread. */
    void (*answer)(void *batch);
    /* 0: no writer thread; the event loop commits each batch itself (`--writer inline`). */
    int threaded;
    pthread_mutex_t lock;
    pthread_cond_t work;
} Handoff;

static inline void *handoff_writer(void *argument) {
    Handoff *handoff = argument;
    pthread_mutex_lock(&handoff->lock);
    for (;;) {
        while (!handoff->busy || handoff->done) pthread_cond_wait(&handoff->work, &handoff->lock);
        pthread_mutex_unlock(&handoff->lock);
        handoff->commit(handoff->writing);
        pthread_mutex_lock(&handoff->lock);
        handoff->done = 1;
        uint64_t one = 1;
        if (write(handoff->wake_fd, &one, sizeof one) < 0) {
            perror("writer_handoff: eventfd");
            exit(1);
        }
    }
    return NULL;
}

/* Sets up the hand-off; with `threaded`, starts the writer thread (with SIGINT and SIGTERM
 * blocked, so that they interrupt the event loop's epoll_wait instead) and watches its
 * wake_fd from `epoll_fd`. */
static inline void handoff_start(Handoff *handoff, void *first, void *second, void (*commit)(void *batch), void (*answer)(void *batch),
                                 int threaded, int epoll_fd) {
    handoff->filling = first;
    handoff->writing = second;
    handoff->commit = commit;
    handoff->answer = answer;
    handoff->threaded = threaded;
    handoff->wake_fd = -1;
    if (!threaded) return;
    pthread_mutex_init(&handoff->lock, NULL);
    pthread_cond_init(&handoff->work, NULL);
    handoff->wake_fd = eventfd(0, EFD_NONBLOCK);
    struct epoll_event event = {.events = EPOLLIN, .data.fd = handoff->wake_fd};
    epoll_ctl(epoll_fd, EPOLL_CTL_ADD, handoff->wake_fd, &event);
    sigset_t stopping, previous;
    sigemptyset(&stopping);
    sigaddset(&stopping, SIGINT);
    sigaddset(&stopping, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stopping, &previous);
    pthread_t thread;
    pthread_create(&thread, NULL, handoff_writer, handoff);
    pthread_sigmask(SIG_SETMASK, &previous, NULL);
}

/* The filling batch is ready: committed and answered here (`threaded` 0), or given to the
 * writer if it has none (else it waits for the writer's answer and grows meanwhile). */
static inline void handoff_submit(Handoff *handoff) {
    if (!handoff->threaded) {
        handoff->commit(handoff->filling);
        handoff->answer(handoff->filling);
        return;
    }
    pthread_mutex_lock(&handoff->lock);
    if (!handoff->busy) {
        void *full = handoff->filling;
        handoff->filling = handoff->writing;
        handoff->writing = full;
        handoff->busy = 1;
        pthread_cond_signal(&handoff->work);
    }
    pthread_mutex_unlock(&handoff->lock);
}

/* Whether the writer has a batch (a threaded hand-off's answer comes before the next). */
static inline int handoff_is_busy(Handoff *handoff) {
    if (!handoff->threaded) return 0;
    pthread_mutex_lock(&handoff->lock);
    int busy = handoff->busy;
    pthread_mutex_unlock(&handoff->lock);
    return busy;
}

/* When wake_fd is readable: answers the committed batch and lets the writer take the next. */
static inline void handoff_woken(Handoff *handoff) {
    uint64_t count;
    if (read(handoff->wake_fd, &count, sizeof count) < 0) return;
    pthread_mutex_lock(&handoff->lock);
    int done = handoff->done;
    pthread_mutex_unlock(&handoff->lock);
    if (!done) return;
    handoff->answer(handoff->writing);
    pthread_mutex_lock(&handoff->lock);
    handoff->done = 0;
    handoff->busy = 0;
    pthread_mutex_unlock(&handoff->lock);
}

/* Waits for a commit under way to finish (at exit; the writer then blocks on the lock). */
static inline void handoff_wait_idle(Handoff *handoff) {
    if (!handoff->threaded) return;
    for (;;) {
        pthread_mutex_lock(&handoff->lock);
        if (!handoff->busy || handoff->done) return;
        pthread_mutex_unlock(&handoff->lock);
        usleep(1000);
    }
}

#endif
