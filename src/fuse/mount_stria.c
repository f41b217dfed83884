/*
 * mount.stria: the helper mount(8) runs for file systems of type fuse.stria.
 *
 * `mount -t fuse.stria /etc/stria/client.conf /mnt/stria -o OPTS`, or the
 * fstab line "/etc/stria/client.conf /mnt/stria fuse.stria defaults,_netdev
 * 0 0", makes mount(8) run /sbin/mount.fuse.stria (a symlink to this
 * program) as `mount.fuse.stria SOURCE DIR [-o OPTS] [-n] [-s] [-f] [-v]`.
 * The source is the cluster's client.conf. This program turns that into
 * `stria-fuse -o conf=SOURCE,OPTS DIR` and execs it, so the exit status is
 * stria-fuse's own, which returns once the mount is ready.
 *
 * It drops the options that only mean something to mount(8) or to fstab
 * (defaults, _netdev, auto, noauto, user, users, nofail, x-*, comment=...),
 * which FUSE would refuse, and passes everything else on. It never links
 * libfuse and never mounts anything itself.
 */
#include "../common/util.h"

#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FUSE_BIN "stria-fuse"

/* mount(8)'s exit codes for helpers. */
enum { EX_USAGE_MOUNT = 1, EX_FAIL_MOUNT = 32 };

/* Options for mount(8) or fstab only; a trailing '*' matches a prefix. */
static const char *const dropped[] = {
    "defaults", "_netdev", "auto",  "noauto", "user",      "user=*", "nouser",
    "users",    "owner",   "group", "nofail", "comment=*", "x-*",
};

static void usage(FILE *out)
{
    fprintf(out,
            "usage: mount.stria CONF DIR [-o OPTIONS] [-n] [-s] [-f] [-v]\n\n"
            "The mount(8) helper for Stria: mounts the cluster that the client.conf CONF\n"
            "names at DIR by running `%s -o conf=CONF,OPTIONS DIR` and returns its\n"
            "exit status. mount(8) runs it for\n"
            "  mount -t fuse.stria /etc/stria/client.conf /mnt/stria [-o OPTIONS]\n"
            "and for /etc/fstab lines such as\n"
            "  /etc/stria/client.conf /mnt/stria fuse.stria defaults,_netdev 0 0\n"
            "once it is installed as /sbin/mount.fuse.stria:\n"
            "  ln -s /usr/local/sbin/mount.stria /sbin/mount.fuse.stria\n\n"
            "OPTIONS go to %s (attr_timeout=SECS, entry_timeout=SECS, allow_other,\n"
            "default_permissions, ro, fsname=NAME, ...), except those that only mean\n"
            "something to mount(8): defaults, _netdev, auto, noauto, user, users, nouser,\n"
            "owner, group, nofail, x-*, comment=*. conf=FILE among them replaces CONF.\n"
            "%s is looked for next to this program, in ../bin, then in $PATH.\n\n"
            "  -o OPTIONS  comma-separated mount options\n"
            "  -n          do not write /etc/mtab (accepted; there is none to write)\n"
            "  -s          tolerate sloppy options (accepted)\n"
            "  -f          fake: show what would run (with -v) and do nothing\n"
            "  -v          print the command before running it\n"
            "  -h, --help  this help\n",
            FUSE_BIN, FUSE_BIN, FUSE_BIN);
}

static bool is_dropped(const char *opt, size_t len)
{
    for (size_t i = 0; i < sizeof(dropped) / sizeof(dropped[0]); i++) {
        size_t dl = strlen(dropped[i]);
        if (dropped[i][dl - 1] == '*') {
            if (len >= dl - 1 && strncmp(opt, dropped[i], dl - 1) == 0)
                return true;
        } else if (len == dl && strncmp(opt, dropped[i], dl) == 0) {
            return true;
        }
    }
    return false;
}

/* Append the options of list that FUSE understands to out ("a,b,c").
 * Sets *has_conf when one of them is conf=. Returns false when out is full. */
static bool filter_options(const char *list, char *out, size_t size, bool *has_conf)
{
    size_t n = strlen(out);
    while (*list) {
        size_t len = strcspn(list, ",");
        if (len && !is_dropped(list, len)) {
            if (n + (n > 0) + len + 1 > size)
                return false;
            if (n > 0)
                out[n++] = ',';
            memcpy(out + n, list, len);
            n += len;
            out[n] = '\0';
            if (len > 5 && strncmp(list, "conf=", 5) == 0)
                *has_conf = true;
        }
        list += len + (list[len] == ',');
    }
    return true;
}

/* stria-fuse next to this program, in ../bin, else in $PATH. */
static bool find_fuse(char *buf, size_t size)
{
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n > 0) {
        self[n] = '\0';
        const char *dir = dirname(self);
        if (snprintf(buf, size, "%s/%s", dir, FUSE_BIN) < (int)size && access(buf, X_OK) == 0)
            return true;
        if (snprintf(buf, size, "%s/../bin/%s", dir, FUSE_BIN) < (int)size &&
            access(buf, X_OK) == 0)
            return true;
    }
    return util_find_in_path(FUSE_BIN, buf, size);
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {{"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    char opts[8192] = "", given[8192] = "", conf[PATH_MAX], fuse[PATH_MAX];
    bool fake = false, verbose = false, has_conf = false;
    int c;

    /* mount(8) puts CONF and DIR first: getopt moves them behind the options. */
    while ((c = getopt_long(argc, argv, "o:nsfvt:N:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'o':
            if (!filter_options(optarg, given, sizeof(given), &has_conf)) {
                fprintf(stderr, "mount.stria: options too long\n");
                return EX_USAGE_MOUNT;
            }
            break;
        case 'n': /* no mtab to write */
        case 's': /* sloppy: stria-fuse judges the options */
        case 't': /* the type, fuse.stria: that is us */
            break;
        case 'f':
            fake = true;
            break;
        case 'v':
            verbose = true;
            break;
        case 'N':
            fprintf(stderr, "mount.stria: -N (another mount namespace) is not supported\n");
            return EX_USAGE_MOUNT;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return EX_USAGE_MOUNT;
        }
    }
    if (argc - optind != 2) {
        fprintf(stderr, "mount.stria: expected CONF and DIR\n");
        usage(stderr);
        return EX_USAGE_MOUNT;
    }
    const char *source = argv[optind], *dir = argv[optind + 1];

    /* stria-fuse wants an absolute conf: it runs from / once mounted. */
    if (!has_conf) {
        if (!realpath(source, conf)) {
            fprintf(stderr, "mount.stria: %s: %s (the source is the cluster's client.conf)\n",
                    source, strerror(errno));
            return EX_FAIL_MOUNT;
        }
        if (strchr(conf, ',')) {
            fprintf(stderr, "mount.stria: %s: a ',' in the path cannot be passed in -o\n", conf);
            return EX_FAIL_MOUNT;
        }
        int n = snprintf(opts, sizeof(opts), "conf=%s%s%s", conf, given[0] ? "," : "", given);
        if (n < 0 || (size_t)n >= sizeof(opts)) {
            fprintf(stderr, "mount.stria: options too long\n");
            return EX_USAGE_MOUNT;
        }
    } else {
        memcpy(opts, given, sizeof(opts));
    }
    if (!find_fuse(fuse, sizeof(fuse))) {
        fprintf(stderr,
                "mount.stria: %s not found (next to mount.stria, in ../bin, or in $PATH); "
                "install Stria's FUSE client\n",
                FUSE_BIN);
        return EX_FAIL_MOUNT;
    }
    if (verbose)
        fprintf(stderr, "mount.stria: %s -o %s %s\n", fuse, opts, dir);
    if (fake)
        return 0;
    char oflag[] = "-o";
    char *args[] = {fuse, oflag, opts, (char *)dir, NULL};
    execv(fuse, args);
    fprintf(stderr, "mount.stria: cannot run %s: %s\n", fuse, strerror(errno));
    return EX_FAIL_MOUNT;
}
