/*
 * Connections on non-blocking sockets under epoll, as tools/http_ceiling.c and
 * tools/workqueue_ceiling.c serve them: accepted and watched for input; read into a
 * buffer; written with what the socket does not take now queued, and the descriptor
 * watched for EPOLLOUT until it is flushed, in order.
 */
#ifndef SOCKET_IO_H
#define SOCKET_IO_H

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

/* Set by SIGINT or SIGTERM: the event loop ends its run. */
static volatile sig_atomic_t stopping;

static inline void stop(int signal) {
    (void)signal;
    stopping = 1;
}

/* An epoll instance watching `listener`, with SIGINT and SIGTERM setting `stopping` (they
 * interrupt epoll_wait: the writer thread of writer_handoff.h blocks them). */
static inline int serve_listener(int listener) {
    int epoll_fd = epoll_create1(0);
    struct epoll_event event = {.events = EPOLLIN, .data.fd = listener};
    epoll_ctl(epoll_fd, EPOLL_CTL_ADD, listener, &event);
    struct sigaction action = {.sa_handler = stop};
    sigaction(SIGINT, &action, NULL);
    sigaction(SIGTERM, &action, NULL);
    return epoll_fd;
}

/* The next connection waiting on `listener`, watched for input; -1 when none is left. One
 * at or above `limit` (a descriptor the caller's table cannot hold) is closed. */
static inline int accept_ready(int listener, int epoll_fd, int limit) {
    int client;
    while ((client = accept4(listener, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
        if (client >= limit) {
            close(client);
            continue;
        }
        struct epoll_event added = {.events = EPOLLIN, .data.fd = client};
        epoll_ctl(epoll_fd, EPOLL_CTL_ADD, client, &added);
        return client;
    }
    return -1;
}

/* Reads what is there after `input[0..*length)`: 0, or -1 when the connection ended or
 * failed (the caller closes it). */
static inline int input_read(int fd, char *input, size_t *length, size_t capacity) {
    ssize_t got = read(fd, input + *length, capacity - *length);
    if (got == 0 || (got < 0 && errno != EAGAIN)) return -1;
    if (got > 0) *length += got;
    return 0;
}

typedef struct {
    char *bytes; /* what a full socket did not take yet */
    size_t length;
} PendingOutput;

/* 0, or -1 when the connection failed (the caller closes it). */
static inline int output_send(int epoll_fd, int fd, PendingOutput *pending, const char *bytes, size_t length) {
    if (pending->bytes) { /* still flushing earlier output: queue behind it */
        pending->bytes = realloc(pending->bytes, pending->length + length);
        memcpy(pending->bytes + pending->length, bytes, length);
        pending->length += length;
        return 0;
    }
    ssize_t written = write(fd, bytes, length);
    if (written == (ssize_t)length) return 0;
    if (written < 0 && errno != EAGAIN) return -1;
    size_t sent = written < 0 ? 0 : (size_t)written;
    pending->length = length - sent;
    pending->bytes = malloc(pending->length);
    memcpy(pending->bytes, bytes + sent, pending->length);
    struct epoll_event event = {.events = EPOLLIN | EPOLLOUT, .data.fd = fd};
    epoll_ctl(epoll_fd, EPOLL_CTL_MOD, fd, &event);
    return 0;
}

/* On EPOLLOUT: 0, or -1 when the connection failed (the caller closes it). */
static inline int output_flush(int epoll_fd, int fd, PendingOutput *pending) {
    ssize_t written = write(fd, pending->bytes, pending->length);
    if (written < 0) return errno == EAGAIN ? 0 : -1;
    pending->length -= written;
    memmove(pending->bytes, pending->bytes + written, pending->length);
    if (pending->length) return 0;
    free(pending->bytes);
    pending->bytes = NULL;
    struct epoll_event event = {.events = EPOLLIN, .data.fd = fd};
    epoll_ctl(epoll_fd, EPOLL_CTL_MOD, fd, &event);
    return 0;
}

#endif
