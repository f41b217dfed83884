/*
 * A cluster on this machine: the directory `stria up --dir DIR` keeps it
 * in, and which one a command means.
 *
 * DIR holds the marker (LOCAL_MARKER: what the directory holds), the
 * shared key, one config per daemon (the same files an operator writes on
 * real nodes), the targets' data, logs, pid files and the client.conf
 * that clients use; ~/.config/stria/client.conf links to the last one up.
 */
#ifndef STRIA_CLI_LOCAL_H
#define STRIA_CLI_LOCAL_H

#include "cli.h"

#include <stdbool.h>
#include <stddef.h>

#define LOCAL_MARKER "stria.cluster"

/* Cluster directories are kept short enough for every path built from them. */
#define LOCAL_DIR_MAX 1024

#define LOCAL_MAX_METADS 16
#define LOCAL_MAX_MDTS   64

struct local_cluster {
    char dir[LOCAL_DIR_MAX];
    char fsname[32];
    int mdts, osts;
    int metads; /* stria-metad processes; MDT i is served by metad i mod metads */
    int mgmt_port, meta_port, stor_port;
};

/* The kinds of daemon, in the order `stria up` starts them. */
enum local_svc { LOCAL_MGMT, LOCAL_META, LOCAL_STOR, LOCAL_NSVC };

/* Each kind's program: "stria-mgmtd", "stria-metad", "stria-stord". */
extern const char *const local_svc_bin[LOCAL_NSVC];

/* $XDG_DATA_HOME/stria/local, or ~/.local/share/stria/local, into buf. */
void local_default_dir(char *buf, size_t len);

/*
 * The directory of the `stria up` cluster a command acts on: given (--dir)
 * if not NULL, else the directory of the client.conf the command resolves
 * (cli_conf_path: --conf, $STRIA_CONF, the link), else the default. *conf
 * gets the client.conf that chose it, or "" when none did.
 */
void local_pick_dir(const char *given, char *buf, size_t len, char *conf, size_t conf_len);

/*
 * `stria up` without --dir: the cluster whose client.conf --conf or
 * $STRIA_CONF names, if it is a `stria up` cluster's, into buf; false if
 * there is none. The link is not followed: without --dir, up means the
 * default directory.
 */
bool local_named_dir(char *buf, size_t len);

/* Read the cluster in dir (its marker) into *c. Returns 0, -ENOENT when
 * dir holds none, -EINVAL when the marker is damaged. */
int local_load(const char *dir, struct local_cluster *c);

/*
 * Lay out a new cluster in c->dir (c's dir, fsname, mdts, osts and metads
 * set): free ports, key, configs, client.conf, and the marker last (a
 * directory without it is not a finished cluster). Returns 0, or a
 * negative errno after saying why on stderr.
 */
int local_create(struct local_cluster *c);

/* How many daemons of kind s the cluster runs (several stria-metad). */
int local_instances(const struct local_cluster *c, enum local_svc s);

/* Daemon j of kind s by name: "metad" for the first stria-metad, "metad1",
 * "metad2"... after it; its files are conf/NAME.conf, log/NAME.log and
 * run/NAME.pid. */
void local_svc_name(enum local_svc s, int j, char *buf, size_t len);

/* DIR/run/NAME.pid of daemon j of kind s; 0 or -ENAMETOOLONG. */
int local_pid_path(const struct local_cluster *c, enum local_svc s, int j, char *buf, size_t len);

/* Point ~/.config/stria/client.conf at c's client.conf, unless it is the
 * user's own file (then say so on stdout). */
void local_link_conf(const struct local_cluster *c);

/* Remove ~/.config/stria/client.conf if it points at c's client.conf. */
void local_unlink_conf(const struct local_cluster *c);

#endif
