/*
 * stria-mgmtd's policy engine (docs/architecture.md, "The policy
 * engine"): a thread that applies every data repository's settings on its
 * own, through an embedded libstria of the cluster.
 */
#ifndef STRIA_MGMT_POLICY_H
#define STRIA_MGMT_POLICY_H

#include <stdint.h>

/* Start the engine: every interval_s seconds it reads the repositories
 * and runs what their settings ask (sync every sync_interval, export of
 * files quiet for export_delay, tiering). Its client reaches the service
 * at host:port with the key file key_path; its client.conf is written in
 * data_dir. interval_s 0: no engine. */
int policy_start(const char *data_dir, const char *host, uint16_t port, const char *key_path,
                 int64_t interval_s);
/* Stop it: the pass under way ends after its current file (a file being
 * uploaded is left not archived); waits at most a few seconds. */
void policy_stop(void);

#endif
