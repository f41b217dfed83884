/* Shared daemon start-up and main loop (daemon.h). */
#include "daemon.h"

#include "log.h"
#include "util.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

int daemon_start(const struct cfg_table *t, void *conf, const struct daemon_conf *d, int argc,
                 char **argv, struct auth_key *key)
{
    int rc = cfg_main_args(t, conf, argc, argv);
    if (rc)
        return rc;
    enum log_level lvl;
    if (log_level_parse(d->log_level, &lvl)) {
        fprintf(stderr, "%s: log_level '%s' is not error/warn/info/debug\n", t->program,
                d->log_level);
        return -1;
    }
    log_init(t->program, lvl);
    char err[512];
    if (auth_key_load(d->key_file, key, err, sizeof(err))) {
        fprintf(stderr, "%s: %s\n", t->program, err);
        return -1;
    }
    util_block_signals();
    return 0;
}

void daemon_names(const struct daemon_conf *d, char *node, size_t nodelen, char *adv, size_t advlen)
{
    if (d->node)
        snprintf(node, nodelen, "%s", d->node);
    else
        util_hostname(node, nodelen);
    if (d->advertise)
        snprintf(adv, advlen, "%s", d->advertise);
    else if (strcmp(d->listen.host, "0.0.0.0") && strcmp(d->listen.host, "::"))
        snprintf(adv, advlen, "%s", d->listen.host);
    else
        util_hostname(adv, advlen);
}

int daemon_wait(int tick_ms, void (*tick)(void *arg), void *arg)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    struct timespec ts = {tick_ms / 1000, (long)(tick_ms % 1000) * 1000000};
    for (;;) {
        int sig = tick ? sigtimedwait(&set, NULL, &ts) : sigwaitinfo(&set, NULL);
        if (sig > 0)
            return sig;
        if (tick)
            tick(arg);
    }
}
