/*
 * Node files, as `stria ondemand` and `stria pcp` take them (and Slurm's
 * `scontrol show hostnames` writes them): one host name or address a
 * line, blank lines and # comments ignored, a name given twice taken once.
 */
#ifndef STRIA_CLI_NODES_H
#define STRIA_CLI_NODES_H

#define NODES_MAX 4096

/* The nodes of file path into *v (n of them, in file order; the caller
 * frees with nodes_free). Says why on stderr, as command cmd, and returns
 * a negative errno when the file cannot be read, names no node, more than
 * NODES_MAX, or a word that is not a host name (one that starts with '-'
 * would be an option to ssh). */
int nodes_read(const char *cmd, const char *path, char ***v, int *n);
void nodes_free(char **v, int n);

#endif
