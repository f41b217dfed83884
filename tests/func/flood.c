/*
 * Many clients at once against one daemon (issue 25: each daemon holds at
 * least 10,000 concurrent clients, none refused, and a peer that never
 * authenticates cannot hold a connection past its handshake timeout).
 *
 * N authenticated connections, each with a client_id of its own so that
 * they are N distinct clients to the daemon, are opened by a few threads
 * and held together. Then every one gets a PING, all sent before any reply
 * is read, so the daemon has N requests at once; each must be answered.
 * After --hold SEC (and the raw peers' wait) every connection, idle all
 * that time, gets a second PING, which must be answered too: idle clients
 * that authenticated are not dropped.
 *
 * With --raw M, M TCP peers that connect and then never say a word are
 * opened first (beside the authenticated ones); the daemon must close each
 * within --raw-wait SEC of its connect. A thread watches them from the
 * start, so the time each was closed is its own.
 *
 * With --pid PID (the daemon's), its VmRSS and Threads (/proc/PID/status)
 * are read before, while the connections are held (after the first
 * PINGs), and once they are closed and the daemon has let its threads go.
 *
 * With --poll (against stria-metad), every connection then becomes a
 * client's revocation channel, as a mount's metadata cache opens one: a
 * first LEASE_POLL, answered at once on a new channel, then a second one
 * on every connection together, which has nothing to hear and waits its
 * second at the MDT. The daemon's threads are read while all of them
 * wait (they must not cost a thread each), and every one must be
 * answered.
 *
 * Usage: flood HOST PORT KEY_FILE N [--raw M] [--raw-wait SEC] [--threads T]
 *              [--pid PID] [--hold SEC] [--poll]
 *
 * Prints one line of key=value pairs (for the script to check), and the
 * first error of each kind. Exits 1 if an authenticated connection failed
 * or a PING went unanswered, or a raw peer was not closed in time; 2 on bad
 * usage or when the open-file limit cannot hold N + M connections.
 */
#include "common/auth.h"
#include "net/net.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

/* Bounds, so that a daemon that stalls fails the test well within its
 * ctest timeout, with the figures printed: normally 10,000 connections
 * take a few seconds and a round of PINGs under one. */
#define CONNECT_MS      10000 /* one connect and handshake */
#define CONNECT_PHASE_S 40    /* all the connects; those not tried by then fail */
#define PING_ROUND_S    20    /* one round of PINGs, all connections */
#define MAX_THREADS     32

static const char *host;
static uint16_t port;
static struct auth_key key;
static struct net_conn **conns;
static int nconns, nthreads = 4;
static uint64_t id_base;
static atomic_int connect_failed, unanswered;
static pthread_mutex_t err_lock = PTHREAD_MUTEX_INITIALIZER;
static char first_connect_err[160], first_ping_err[160];
/* What a round sends on every connection, and the ids of its requests. */
static uint16_t round_op = PROTO_OP_PING;
static uint8_t round_payload[64];
static uint32_t round_plen;
static uint64_t *reqids;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void note_err(char *where, const char *what, int i, int rc)
{
    pthread_mutex_lock(&err_lock);
    if (!where[0])
        snprintf(where, 160, "%s on connection %d: %d (%s)", what, i, rc, strerror(-rc));
    pthread_mutex_unlock(&err_lock);
}

/* One thread's share of the connections: [lo, hi). */
struct share {
    pthread_t t;
    int lo, hi;
    double deadline; /* of the connects, or of the PING round */
};

static void *connect_share(void *arg)
{
    struct share *s = arg;
    for (int i = s->lo; i < s->hi; i++) {
        int left_ms = (int)((s->deadline - now_s()) * 1000);
        if (left_ms <= 0) {
            atomic_fetch_add(&connect_failed, s->hi - i);
            note_err(first_connect_err, "no time left for it and the rest from", i, -ETIMEDOUT);
            break;
        }
        int rc = net_connect(host, port, &key, id_base + (uint64_t)i, "flood",
                             left_ms < CONNECT_MS ? left_ms : CONNECT_MS, &conns[i]);
        if (rc) {
            conns[i] = NULL;
            atomic_fetch_add(&connect_failed, 1);
            note_err(first_connect_err, "connect", i, rc);
        }
    }
    return NULL;
}

/* Fail connection i of a round: counted, closed, skipped from then on. */
static void round_fail(int i, const char *what, int rc)
{
    atomic_fetch_add(&unanswered, 1);
    note_err(first_ping_err, what, i, rc);
    net_close(conns[i]);
    conns[i] = NULL;
}

/* The round's request on each connection of the share. */
static void *send_share(void *arg)
{
    struct share *s = arg;
    for (int i = s->lo; i < s->hi; i++) {
        if (!conns[i])
            continue;
        int rc = net_send(conns[i], round_op, round_plen ? round_payload : NULL, round_plen, NULL,
                          0, &reqids[i]);
        if (rc)
            round_fail(i, "send", rc);
    }
    return NULL;
}

/* Each reply of the share, none waited for past the round's deadline. */
static void *recv_share(void *arg)
{
    struct share *s = arg;
    for (int i = s->lo; i < s->hi; i++) {
        if (!conns[i])
            continue;
        int left_ms = (int)((s->deadline - now_s()) * 1000);
        bool transport = false;
        int rc = -ETIMEDOUT;
        if (left_ms > 0) {
            net_set_timeout(conns[i], left_ms);
            rc = net_recv(conns[i], reqids[i], NULL, 0, NULL, &transport);
        }
        if (rc)
            round_fail(i, "reply", rc);
    }
    return NULL;
}

/* A request on each connection of the share, all sent first, then each
 * reply read. */
static void *ping_share(void *arg)
{
    send_share(arg);
    return recv_share(arg);
}

/* Run fn over the connections split among the threads. */
static void run_shares(void *(*fn)(void *), double deadline)
{
    struct share sh[MAX_THREADS];
    bool started[MAX_THREADS];
    for (int t = 0; t < nthreads; t++) {
        sh[t].lo = (int)((int64_t)nconns * t / nthreads);
        sh[t].hi = (int)((int64_t)nconns * (t + 1) / nthreads);
        sh[t].deadline = deadline;
        started[t] = pthread_create(&sh[t].t, NULL, fn, &sh[t]) == 0;
        if (!started[t])
            fn(&sh[t]); /* no thread: do it here */
    }
    for (int t = 0; t < nthreads; t++)
        if (started[t])
            pthread_join(sh[t].t, NULL);
}

static void proc_status(int pid, long *rss_kb, long *threads);

static int open_conns(void)
{
    int open = 0;
    for (int i = 0; i < nconns; i++)
        open += conns[i] != NULL;
    return open;
}

/* One round of PINGs; returns how many were answered. */
static int ping_round(void)
{
    int before = atomic_load(&unanswered), open = open_conns();
    run_shares(ping_share, now_s() + PING_ROUND_S);
    return open - (atomic_load(&unanswered) - before);
}

/* Every connection a revocation channel, then a poll on each that waits
 * at the MDT: the daemon's threads while they wait in *threads; returns
 * how many of the waiting polls were answered. */
static int poll_rounds(int pid, long *threads)
{
    struct proto_enc e;
    proto_enc_init(&e, round_payload, sizeof(round_payload));
    proto_enc_lease_poll_req(&e, &(struct proto_lease_poll_req){0});
    round_op = PROTO_OP_LEASE_POLL;
    round_plen = (uint32_t)e.len;
    run_shares(ping_share, now_s() + PING_ROUND_S); /* new channels: answered at once */
    int before = atomic_load(&unanswered), open = open_conns();
    double t0 = now_s();
    run_shares(send_share, t0 + PING_ROUND_S);
    usleep(300000); /* well inside the MDT's second */
    long rss;
    proc_status(pid, &rss, threads);
    run_shares(recv_share, t0 + PING_ROUND_S);
    round_op = PROTO_OP_PING;
    round_plen = 0;
    return open - (atomic_load(&unanswered) - before);
}

/* Peers that connect and never authenticate, watched from their connect
 * until the daemon closes them or the wait is over. */
struct raw {
    int n, *fds;
    double t0, wait_s;
    double *closed_at; /* seconds after t0; -1: still open */
    int closed;
    double first, last;
};

static void *raw_watch(void *arg)
{
    struct raw *r = arg;
    struct pollfd *p = calloc((size_t)r->n, sizeof(*p));
    int *idx = calloc((size_t)r->n, sizeof(*idx));
    char buf[4096];
    while (p && idx && r->closed < r->n && now_s() - r->t0 < r->wait_s) {
        int np = 0;
        for (int i = 0; i < r->n; i++)
            if (r->closed_at[i] < 0) {
                p[np] = (struct pollfd){r->fds[i], POLLIN, 0};
                idx[np++] = i;
            }
        if (poll(p, (nfds_t)np, 100) <= 0)
            continue;
        for (int k = 0; k < np; k++) {
            if (!p[k].revents)
                continue;
            /* The daemon's HELLO may come first: read past it to the end. */
            ssize_t got = read(p[k].fd, buf, sizeof(buf));
            if (got > 0 || (got < 0 && (errno == EAGAIN || errno == EINTR)))
                continue;
            int i = idx[k];
            r->closed_at[i] = now_s() - r->t0;
            r->closed++;
        }
    }
    r->first = -1;
    r->last = 0;
    for (int i = 0; i < r->n; i++) {
        if (r->closed_at[i] < 0)
            continue;
        if (r->first < 0 || r->closed_at[i] < r->first)
            r->first = r->closed_at[i];
        if (r->closed_at[i] > r->last)
            r->last = r->closed_at[i];
    }
    free(p);
    free(idx);
    return NULL;
}

/* The daemon's VmRSS (kB) and Threads; -1 when unknown. */
static void proc_status(int pid, long *rss_kb, long *threads)
{
    char path[64], line[256];
    *rss_kb = *threads = -1;
    if (pid <= 0)
        return;
    snprintf(path, sizeof(path), "/proc/%d/status", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    while (fgets(line, sizeof(line), f)) {
        sscanf(line, "VmRSS: %ld", rss_kb);
        sscanf(line, "Threads: %ld", threads);
    }
    fclose(f);
}

static void usage(const char *prog)
{
    fprintf(stderr,
            "usage: %s HOST PORT KEY_FILE N [--raw M] [--raw-wait SEC] [--threads T] "
            "[--pid PID] [--hold SEC] [--poll]\n",
            prog);
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        usage(argv[0]);
        return 2;
    }
    host = argv[1];
    port = (uint16_t)atoi(argv[2]);
    nconns = atoi(argv[4]);
    int nraw = 0, pid = 0;
    double raw_wait = 10, hold = 0;
    bool poll = false;
    for (int i = 5; i < argc; i++) {
        if (!strcmp(argv[i], "--poll")) {
            poll = true;
            continue;
        }
        if (i + 1 >= argc) {
            usage(argv[0]);
            return 2;
        }
        if (!strcmp(argv[i], "--raw"))
            nraw = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--raw-wait"))
            raw_wait = atof(argv[++i]);
        else if (!strcmp(argv[i], "--threads"))
            nthreads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--pid"))
            pid = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--hold"))
            hold = atof(argv[++i]);
        else {
            usage(argv[0]);
            return 2;
        }
    }
    if (nconns < 0 || nraw < 0 || nthreads < 1 || nthreads > MAX_THREADS || hold < 0 ||
        hold > 3600 || raw_wait < 0 || raw_wait > 600) {
        usage(argv[0]);
        return 2;
    }
    char err[256];
    if (auth_key_load(argv[3], &key, err, sizeof(err))) {
        fprintf(stderr, "flood: %s\n", err);
        return 2;
    }

    /* Every connection is a descriptor here too. */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl)) {
        perror("flood: getrlimit");
        return 2;
    }
    rlim_t need = (rlim_t)nconns + (rlim_t)nraw + 64;
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need) {
        fprintf(stderr,
                "flood: %d connections and %d raw peers need %lu descriptors; the hard "
                "open-file limit is %lu (raise it: ulimit -Hn, or limits.conf)\n",
                nconns, nraw, (unsigned long)need, (unsigned long)rl.rlim_max);
        return 2;
    }
    rl.rlim_cur = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl)) {
        perror("flood: setrlimit");
        return 2;
    }

    conns = calloc((size_t)(nconns > 0 ? nconns : 1), sizeof(*conns));
    reqids = calloc((size_t)(nconns > 0 ? nconns : 1), sizeof(*reqids));
    struct raw r = {.n = nraw, .wait_s = raw_wait};
    r.fds = calloc((size_t)(nraw > 0 ? nraw : 1), sizeof(*r.fds));
    r.closed_at = calloc((size_t)(nraw > 0 ? nraw : 1), sizeof(*r.closed_at));
    if (!conns || !reqids || !r.fds || !r.closed_at) {
        fprintf(stderr, "flood: out of memory\n");
        return 2;
    }
    id_base = ((uint64_t)getpid() << 32) | ((uint64_t)time(NULL) & 0xffff) << 16;

    long rss0, thr0, rss1, thr1, rss2, thr2;
    proc_status(pid, &rss0, &thr0);

    /* The raw peers first, so they are there while the others come. */
    int raw_failed = 0;
    pthread_t raw_t;
    r.t0 = now_s();
    for (int i = 0; i < nraw; i++) {
        r.fds[i] = net_tcp_connect(host, port, CONNECT_MS);
        r.closed_at[i] = -1;
        if (r.fds[i] < 0) {
            if (!raw_failed++)
                fprintf(stderr, "flood: raw peer %d: connect: %s\n", i, strerror(-r.fds[i]));
            r.closed_at[i] = 0; /* nothing to watch */
            r.closed++;
        }
    }
    bool watching = nraw > 0 && pthread_create(&raw_t, NULL, raw_watch, &r) == 0;

    double t0 = now_s();
    run_shares(connect_share, t0 + CONNECT_PHASE_S);
    double connect_s = now_s() - t0;
    int connected = nconns - atomic_load(&connect_failed);

    t0 = now_s();
    int answered = ping_round();
    double ping_s = now_s() - t0;
    proc_status(pid, &rss1, &thr1);
    long thr_polls = -1;
    int polls = poll ? poll_rounds(pid, &thr_polls) : 0;

    if (watching)
        pthread_join(raw_t, NULL);
    if (hold > 0)
        usleep((useconds_t)(hold * 1e6));
    int answered_again = ping_round();

    for (int i = 0; i < nconns; i++)
        net_close(conns[i]);
    for (int i = 0; i < nraw; i++)
        if (r.fds[i] >= 0)
            close(r.fds[i]);
    /* The daemon lets its connections go: bounded wait for its threads. */
    proc_status(pid, &rss2, &thr2);
    for (int i = 0; i < 100 && thr2 > thr0 + 2; i++) {
        usleep(100000);
        proc_status(pid, &rss2, &thr2);
    }

    double kb_per_conn =
        connected > 0 && rss0 >= 0 && rss1 >= 0 ? (double)(rss1 - rss0) / connected : -1;
    int raw_open = nraw - r.closed;
    printf("flood: port=%u conns=%d connected=%d failed=%d answered=%d answered_again=%d "
           "connect_s=%.2f ping_s=%.2f raw=%d raw_failed=%d raw_closed=%d raw_open=%d "
           "raw_first_s=%.2f raw_last_s=%.2f rss_before_kb=%ld rss_held_kb=%ld "
           "rss_closed_kb=%ld kb_per_conn=%.1f threads_before=%ld threads_held=%ld "
           "threads_closed=%ld polls=%d threads_polls=%ld\n",
           port, nconns, connected, nconns - connected, answered, answered_again, connect_s, ping_s,
           nraw, raw_failed, r.closed - raw_failed, raw_open, nraw ? r.first : 0, nraw ? r.last : 0,
           rss0, rss1, rss2, kb_per_conn, thr0, thr1, thr2, polls, thr_polls);
    if (first_connect_err[0])
        fprintf(stderr, "flood: first connect failure: %s\n", first_connect_err);
    if (first_ping_err[0])
        fprintf(stderr, "flood: first PING failure: %s\n", first_ping_err);
    if (raw_open)
        fprintf(stderr, "flood: %d of %d raw peers still open %.0f s after they connected\n",
                raw_open, nraw, raw_wait);

    free(conns);
    free(reqids);
    free(r.fds);
    free(r.closed_at);
    bool ok = connected == nconns && answered == nconns && answered_again == nconns &&
              raw_open == 0 && raw_failed == 0 && (!poll || polls == nconns);
    return ok ? 0 : 1;
}
