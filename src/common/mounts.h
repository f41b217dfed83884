/*
 * This process's mounts, from /proc/self/mountinfo: the CLI finds the
 * stria mount a local path lies in, and stria-fuse the backing device of
 * its own mount.
 */
#ifndef STRIA_MOUNTS_H
#define STRIA_MOUNTS_H

#include <stddef.h>

/* One line of mountinfo, with its octal escapes (\040) decoded. */
struct mount_ent {
    const char *point;  /* where it is mounted */
    const char *root;   /* the directory of the file system seen there, "/" usually */
    const char *fstype; /* "fuse.stria" for a stria mount */
    const char *source; /* a stria mount's client.conf */
    const char *dev;    /* "MAJOR:MINOR" of its device (for a FUSE mount, its bdi) */
};

struct mount_table {
    struct mount_ent *v; /* in mountinfo order: of two at one point, the later is on top */
    size_t n;
    char *text; /* what the strings point into */
};

/* Read every mount of this process's mount namespace from path (NULL:
 * /proc/self/mountinfo). Returns 0 or a negative errno; free m with
 * mount_table_free. */
int mount_table_read(const char *path, struct mount_table *m);
void mount_table_free(struct mount_table *m);
/* The mount on top at exactly point (absolute, canonical), or NULL. The
 * result points into m. */
const struct mount_ent *mount_table_top(const struct mount_table *m, const char *point);

#endif
