/*
 * What every Stria server daemon shares: the options common to all of them
 * (embedded as member `d` of each daemon's config struct, so one table
 * serves both), start-up (command line, logging, key, signals), the names
 * a daemon goes by, and the main thread's wait for a stop signal.
 */
#ifndef STRIA_DAEMON_H
#define STRIA_DAEMON_H

#include "auth.h"
#include "config.h"

#include <stddef.h>

struct daemon_conf {
    struct cfg_addr listen;
    char *key_file;
    int64_t max_connections;
    int64_t handshake_timeout_ms;
    int64_t workers;
    char *log_level;
    struct cfg_addr metrics; /* port 0: not served */
    /* metad and stord only */
    char *advertise;
    struct cfg_addr mgmt;
    char *node;
    int64_t heartbeat_ms;
};

#define DAEMON_OPT(T, n, type, lo, hi, def, req, help)                                             \
    {                                                                                              \
#n, type, lo, hi, def, req, help, offsetof(T, d.n)                                         \
    }

/* Options of every daemon; T is its config struct, port its default port. */
#define DAEMON_BASE_OPTIONS(T, port)                                                               \
    DAEMON_OPT(T, listen, CFG_ADDR, 0, 0, "0.0.0.0:" port, false, "address and port to serve on"), \
        DAEMON_OPT(T, key_file, CFG_STR, 0, 0, NULL, true,                                         \
                   "the cluster's shared key file (mode 0600)"),                                   \
        DAEMON_OPT(T, max_connections, CFG_INT, 1, 1000000, "65536", false,                        \
                   "most connections at once (and no more than the open-file limit allows)"),      \
        DAEMON_OPT(T, workers, CFG_INT, 1, 4096, "64", false,                                      \
                   "most requests served at once; the others wait in a queue where clients take "  \
                   "turns"),                                                                       \
        DAEMON_OPT(T, handshake_timeout_ms, CFG_INT, 100, 600000, "5000", false,                   \
                   "a new connection that has not authenticated this long after it was "           \
                   "accepted is closed, and its slot freed"),                                      \
        DAEMON_OPT(T, log_level, CFG_STR, 0, 0, "info", false, "error, warn, info or debug"),      \
        DAEMON_OPT(T, metrics, CFG_ADDR, 0, 0, NULL, false,                                        \
                   "host:port to serve the request counters on, over HTTP at GET /metrics in "     \
                   "Prometheus's text format (default: not served)")

/* Options of daemons that register with the management service. */
#define DAEMON_NODE_OPTIONS(T)                                                                     \
    DAEMON_OPT(T, advertise, CFG_STR, 0, 0, NULL, false,                                           \
               "host name or address clients use to reach this daemon (default: the listen "       \
               "host, or this machine's host name when listening on 0.0.0.0)"),                    \
        DAEMON_OPT(T, mgmt, CFG_ADDR, 0, 0, NULL, true, "host:port of stria-mgmtd"),               \
        DAEMON_OPT(T, node, CFG_STR, 0, 0, NULL, false,                                            \
                   "node name shown in `stria status` (default: host name)"),                      \
        DAEMON_OPT(T, heartbeat_ms, CFG_INT, 100, 60000, "1000", false,                            \
                   "interval between heartbeats to mgmt")

/*
 * Parse the command line into conf (whose member d is *d), set up logging,
 * load the key and block the stop signals in every thread to come.
 * Returns 0 to run, 1 to exit 0 (help printed), -1 to exit 2 (error printed).
 */
int daemon_start(const struct cfg_table *t, void *conf, const struct daemon_conf *d, int argc,
                 char **argv, struct auth_key *key);

/* The connections a daemon may hold: max_connections, less what its
 * open-file limit (raised to the hard limit by daemon_start) cannot cover
 * beside the files it opens itself. */
int daemon_max_conns(const struct daemon_conf *d);

/* The node name and the address clients use, from the options. */
void daemon_names(const struct daemon_conf *d, char *node, size_t nodelen, char *adv,
                  size_t advlen);

/* Write path (0600, atomically): the client.conf of a libstria client a
 * daemon embeds (who says whose, for its comment), reaching mgmt at
 * host:port (a wildcard host: loopback) with the cluster key at key_path.
 * Returns 0 or a negative errno, logged. */
int daemon_client_conf(const char *path, const char *who, const char *host, uint16_t port,
                       const char *key_path);

/* Wait for SIGINT, SIGTERM or SIGHUP, calling tick (if any) every tick_ms.
 * A daemon calls it once it serves: it tells systemd so first (READY=1),
 * and that it is stopping (STOPPING=1) when the signal comes.
 * Returns the signal. */
int daemon_wait(int tick_ms, void (*tick)(void *arg), void *arg);

/*
 * Send state ("READY=1", "STOPPING=1", "STATUS=...", newline-separated) to
 * the service manager, as sd_notify(3) does, when it asked for it with
 * $NOTIFY_SOCKET (a unit of Type=notify); a no-op otherwise. The variable
 * is read and removed from the environment at the first call (daemon_start
 * makes it), so processes the daemon starts do not inherit it.
 * Returns 0, or a negative errno if the socket would not take the message.
 */
int daemon_notify(const char *state);

#endif
