/*
 * The process supervisor: starting programs detached from us, pid files,
 * and stopping what a pid file names.
 *
 * `stria up` runs the daemons (and stria-fuse) in sessions of their own,
 * so that they outlive the command and a terminal's signals; a pid file
 * per daemon is how a later `stria up`, `down` or `status` finds them.
 * Every wait here is bounded.
 */
#ifndef STRIA_CLI_PROC_H
#define STRIA_CLI_PROC_H

#include "cli.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/*
 * Start argv[0] (a path) in a session of its own, with stdin from
 * /dev/null, stdout and stderr to out_fd and no other descriptor (a daemon
 * must not hold our caller's pipes open), in directory wd (NULL: ours).
 * Returns its pid or a negative errno; 127 is its exit status if it could
 * not be run. The caller reaps it, or lets it outlive us. Its
 * environment is ours but for $NOTIFY_SOCKET, which is notify (NULL:
 * unset): a daemon says READY=1 to whoever started it, never to a service
 * manager that started us.
 */
pid_t proc_spawn(char *const argv[], int out_fd, const char *wd, const char *notify);

/*
 * Run argv[0] (a path) with stdin from /dev/null and stdout and stderr to
 * out_fd, and wait at most ms for it. Returns its exit status, 128+N if
 * signal N killed it, 127 if it could not be run, -ETIMEDOUT (after
 * killing it) or a negative errno.
 */
int proc_run_bounded(char *const argv[], int out_fd, int ms);

/* The directory of the running stria binary, where the daemons are
 * installed beside it, into buf (/usr/local/bin if it cannot be read). */
void proc_bin_dir(char *buf, size_t len);

/* A program next to this binary, else in $PATH: its path into buf. */
bool proc_find_prog(const char *name, char *buf, size_t len);

/* Whether pid is gone (or a zombie, which no longer serves anything). */
bool proc_gone(pid_t pid);

/*
 * The pid that pidfile names if that process is alive and is bin (its
 * command line holds the name: a recycled pid running something else is
 * not our daemon), else 0.
 */
pid_t proc_running(const char *pidfile, const char *bin);

/*
 * Start the daemon bin (a path) as `bin --config conf`, detached
 * (proc_spawn, with $NOTIFY_SOCKET notify), its output appended to log,
 * and write its pid to pidfile. *pid gets the pid once it runs. Returns
 * 0, or a negative errno after saying why on stderr ("stria up: ...").
 */
int proc_start(const char *bin, const char *conf, const char *log, const char *pidfile,
               const char *notify, pid_t *pid);

/*
 * Stop the daemon bin (a name) that pidfile names: SIGTERM, and after 10 s
 * SIGKILL (said on stderr); then remove pidfile. Returns the pid stopped,
 * or 0 when none was running.
 */
pid_t proc_stop(const char *pidfile, const char *bin);

#endif
