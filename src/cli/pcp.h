/*
 * stria pcp (pcp.c, the coordinator) and its worker (pcp_node.c, what
 * each node runs as `stria pcp node`), and the share they pass: one chunk
 * a line, "ID OFF LEN SIZE MODE\tSRC\tDST", the paths escaped.
 */
#ifndef STRIA_CLI_PCP_H
#define STRIA_CLI_PCP_H

#include <stdio.h>

/* Write path s into a share line, %, tab and newline escaped. */
void pcp_put_path(FILE *f, const char *s);
/* Copy the chunks of the share on stdin with jobs threads, saying "done
 * ID" (or "error ID ...") on stdout for each. CLI_OK or CLI_FAIL. */
int pcp_node(int jobs);

#endif
