/*
 * stria: the command-line tool's entry point.
 *
 * main() reads the global options that come before the subcommand
 * (--conf, --help, --version), looks the subcommand up in commands[] and
 * runs it with argv starting at the subcommand's name. The same table
 * prints `stria help` and `stria CMD --help`, so the list of commands and
 * their help cannot drift apart. A command whose table entry has no
 * synopsis (the cluster commands) prints its own --help. This file is the
 * top of src/cli: it includes every command family (commands.h) and the
 * shared modules; none of them includes anything of main.
 *
 * Exit status: 0 success, 1 an operation failed, 2 bad usage.
 */
#include "args.h"
#include "commands.h"
#include "connect.h"

#include <stdio.h>
#include <string.h>

#ifndef STRIA_VERSION
#define STRIA_VERSION "0.1.0"
#endif

struct command {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *args;    /* synopsis after the name; NULL: the command has its own --help */
    const char *summary; /* one line for `stria help` */
    const char *options; /* the rest of `stria CMD --help` */
};

static int cmd_help(int argc, char **argv);

static const struct command commands[] = {
    {"up", cmd_up, NULL, "start a cluster on this machine, write its client.conf, mount it", NULL},
    {"down", cmd_down, NULL, "unmount and stop the cluster started by `stria up`", NULL},
    {"status", cmd_status, NULL, "show the cluster's services, mount and targets", NULL},
    {"mkdir", cmd_mkdir, "[-p] [-m MODE] [-c COUNT [-i MDT]] PATH...", "create directories",
     "  -p        create missing parents; no error if the directory exists\n"
     "  -m MODE   permissions in octal (default 0777 less the umask)\n"
     "  -c COUNT  stripe the directory's entries over COUNT MDTs (-1: all), as\n"
     "            lfs mkdir -c; without it the parent's default (setdirstripe -D)\n"
     "  -i MDT    the first MDT of the stripe, which holds the directory's inode\n"
     "            (default: the MDT that holds its name)\n"},
    {"setdirstripe", cmd_setdirstripe,
     "-c COUNT [-i MDT] [-m MODE] PATH... | -D -c COUNT [-i MDT] DIR...",
     "create a directory striped over MDTs, or set the default for new subdirectories",
     "  -c COUNT  MDTs to stripe over (-1: all; with -D, 0 removes the default)\n"
     "  -i MDT    the first MDT (-1: the MDT that holds the name)\n"
     "  -m MODE   permissions of the new directory in octal\n"
     "  -D        set DIR's default for directories made in it later, which\n"
     "            they inherit in turn (as lfs setdirstripe -D)\n"},
    {"getdirstripe", cmd_getdirstripe, "PATH...",
     "show a directory's stripe over MDTs and its default, as lfs getdirstripe", ""},
    {"ls", cmd_ls, "[-l] [-a] [PATH...]", "list directories (default /), sorted by name",
     "  -l  long format: mode, links, uid, gid, size, mtime, name (-> target)\n"
     "  -a  also show names starting with '.', and . and ..\n"},
    {"stat", cmd_stat, "PATH...", "show a file's attributes, as stat(1)", ""},
    {"rm", cmd_rm, "[-r] [-f] PATH...", "remove files, or directory trees with -r",
     "  -r  remove directories and everything below them\n"
     "  -f  ignore paths that do not exist\n"},
    {"mv", cmd_mv, "SRC DST", "rename SRC to DST, or move it into DST if DST is a directory", ""},
    {"cp", cmd_cp, "[-v] [-c COUNT] [-S SIZE] SRC DST",
     "copy a file between the local disk and the cluster, or within the cluster",
     "  -c COUNT  stripe count of a new cluster destination (-1: all OSTs)\n"
     "  -S SIZE   stripe size of a new cluster destination (K/M/G, multiple of 64K)\n"
     "  -v        print what was copied, and how fast, to stderr\n"
     "Bare paths are local here, except inside a stria mount: write cluster paths\n"
     "as stria:/PATH or as paths in the mount (either way cp does striped I/O and\n"
     "honours -c and -S). If DST is a directory the file is copied into it under\n"
     "its own name. Only the data is copied, and the destination is fsynced\n"
     "before cp exits.\n"},
    {"migrate", cmd_migrate,
     "[-v] [-c COUNT] [-S SIZE] [-i OFFSET] [-p POOL] [-E END ...] [FILE|DIR...]",
     "rewrite files' data into a new layout while they stay in use, as lfs migrate",
     "  -c, -S, -i, -p, -E  the new layout, as setstripe takes it (none: the file\n"
     "             system's default layout)\n"
     "  -v         print each file migrated, and a summary\n"
     "  --no-progress  no progress bar (it shows on a terminal)\n"
     "Directories are walked; without paths, they are read one per line from\n"
     "standard input (stria find /x -ost 3 | stria migrate -c 2 drains OST 3).\n"
     "The copy runs while the file stays readable and writable; the layouts\n"
     "are swapped atomically at its end. A file written to during each of\n"
     "three copies is left as it was, with a message. Data-on-MDT components\n"
     "migrate both ways (-E 64K -L mdt ...); released files are not migrated\n"
     "(restore them first).\n"},
    {"rebalance", cmd_rebalance, "[-v] [-n] [--threshold PCT] [--max-bandwidth RATE] [PATH]",
     "move data from the fullest OSTs to the emptiest, online",
     "  --threshold PCT        an OST is out of balance when its fill is more than\n"
     "                         PCT percent of the mean fill from it (20)\n"
     "  --max-bandwidth RATE   copy at most RATE bytes a second (K/M/G; none: as\n"
     "                         fast as the disks go), so training I/O keeps the rest\n"
     "  -n, --dry-run          say what would move, move nothing\n"
     "  -v, --verbose          say what each move is\n"
     "Files under PATH (default /) that keep data on an OST fuller than the mean\n"
     "are migrated (stria migrate), the biggest share first, into a layout of\n"
     "the same shape starting at the emptiest OST, until the fullest OST is\n"
     "within the threshold. Files stay in use throughout. Stopped at any point,\n"
     "every file is whole; run it again to go on (it measures anew).\n"},
    {"setstripe", cmd_setstripe,
     "[-c COUNT] [-S SIZE] [-i OFFSET] [-p POOL] PATH... | -E END [-c N] [-S SIZE] [-i OST] "
     "[-p POOL] -E ... PATH...",
     "set a directory's default layout, or create an empty file with a layout",
     "  -c COUNT   number of OSTs to stripe over (-1: all, 0: the default)\n"
     "  -S SIZE    stripe size, a multiple of 64K (K/M/G suffixes; 0: the default)\n"
     "  -i OFFSET  index of the first OST (-1: any)\n"
     "  -p, --pool [FSNAME.]POOL\n"
     "             keep the stripes within OST pool POOL (stria pool); a plain\n"
     "             layout with a pool is one component to EOF with it\n"
     "  -E END     a composite layout (PFL), as lfs setstripe -E: each -E starts\n"
     "             a component that ends at END (a multiple of 64K; -1: EOF),\n"
     "             with the -c, -S, -i and -p that follow it (-c, -S and -p\n"
     "             carry over; -p none stops a pool's); at most 4 components,\n"
     "             the last ending at -1. A file's components get their OSTs as\n"
     "             writes first reach them.\n"
     "  -L mdt     after the first -E: Data-on-MDT, that component's bytes kept\n"
     "             by the file's MDT (at most 1G): a small file is written and\n"
     "             read with no OST (-L raid0: on OSTs, the default)\n"
     "A file's layout can be set only while it holds no data.\n"},
    {"getstripe", cmd_getstripe, "[-c|-S|-i|-p|--component-count] PATH...",
     "show a file's layout, or a directory's default layout, as lfs getstripe",
     "  -c, --stripe-count     only the stripe count (of the last instantiated\n"
     "                         component of a composite file)\n"
     "  -S, --stripe-size      only the stripe size\n"
     "  -i, --stripe-index     only the first OST\n"
     "  -p, --pool             only the OST pool (an empty line: none)\n"
     "  --component-count      only the number of components\n"},
    {"find", cmd_find, "PATH... [TEST...]", "select files as lfs find does (tests are ANDed)",
     "  -type f|d|l|p|s|c|b       the file's type\n"
     "  -name GLOB                its name (the last component)\n"
     "  -size [+-]N[KMGT]         its size (+ more, - less; rounded up to the unit)\n"
     "  -mtime [+-]DAYS           modified that many whole days ago\n"
     "  -stripe-count [+-]N       stripe count (of the last instantiated component)\n"
     "  -stripe-size [+-]N[KMGT]  stripe size (likewise)\n"
     "  -component-count [+-]N    number of components\n"
     "  -ost N[,N...]             an object on one of these OSTs (3, OST0003)\n"
     "  -pool [FSNAME.]POOL       a component in this OST pool\n"
     "  -layout, -L mdt|raid0|released[,...]\n"
     "                            a component kept by its MDT (Data-on-MDT), one on\n"
     "                            OSTs, or its data in S3 only (released); any of them\n"
     "  -maxdepth N               descend at most N levels\n"
     "  -print                    end each path with a newline (the default)\n"
     "  -print0                   end each path with a NUL, for xargs -0\n"},
    {"df", cmd_df, "[-h] [-i] [-p [FSNAME.]POOL] [--threshold PCT]",
     "show the space (or inodes) of every target, as lfs df",
     "  -h  human-readable sizes (1.5G) instead of 1K blocks\n"
     "  -i  inodes instead of space\n"
     "  -p, --pool [FSNAME.]POOL\n"
     "      only the OSTs of pool POOL (and the MDTs), the summary of those\n"
     "  --threshold PCT\n"
     "      after the table, the OSTs whose fill is more than PCT percent of\n"
     "      the mean fill from it (20): what stria rebalance evens out\n"},
    {"pool", cmd_pool, "new|add|remove|destroy|list ...",
     "make and change OST pools, as lctl pool_* and lfs pool_list",
     "  pool new FSNAME.POOL           a pool, with no OSTs yet\n"
     "  pool add FSNAME.POOL OST...    put OSTs in it\n"
     "  pool remove FSNAME.POOL OST... take OSTs out of it\n"
     "  pool destroy FSNAME.POOL       remove an empty pool\n"
     "  pool list [FSNAME[.POOL]]      the pools of the file system, or a pool's\n"
     "                                 OSTs (as lfs pool_list)\n"
     "An OST is FSNAME-OST0001_UUID, FSNAME-OST0001 or OST0001 (its index in\n"
     "hex), or a range OST[0-3] or FSNAME-OST[0-10/2,12] (decimal, with a step).\n"
     "new, add, remove and destroy are root's; a change is all or nothing, and\n"
     "reaches the MDTs within a heartbeat. POOL is 1 to 15 of A-Z a-z 0-9 _ -.\n"
     "pool_new, pool_add, pool_remove, pool_destroy and pool_list are the same\n"
     "commands under lctl's and lfs's names.\n"},
    {"fsck", cmd_fsck, "[--repair]",
     "check every MDT's namespace (as root); --repair fixes what it finds",
     "  -r, --repair  remove dangling entries, set link counts and parents, and\n"
     "                link inodes no entry names into /lost+found as #<inode>\n"
     "Reports dangling entries, orphan inodes, wrong link counts, wrong parents\n"
     "and records that cannot be decoded. With --repair the MDT holds its other\n"
     "writes until it is done. Exit status 1 when a problem remains.\n"},
    {"scrub", cmd_scrub, "[--ost N]",
     "read every block of every object and check it against its checksum",
     "  -o, --ost N  only OST N (default: every OST)\n"
     "Prints each block whose data no longer matches the CRC32C written with it\n"
     "(the file's inode, component and stripe, and the offset in the object), then\n"
     "a summary per OST. The OSTs also log each mismatch. Exit status 1 when a\n"
     "block is bad or an OST could not be checked.\n"},
    {"stats", cmd_stats, "[-i SECONDS] [-s]",
     "show what each MDT's requests cost: counts, rates, errors, latency",
     "  -i SECONDS  counters over the next SECONDS (1 to 3600) instead of since\n"
     "              each MDT started\n"
     "  -s          each storage server's requests too (WRITE, READ, ...), one\n"
     "              table per server for all its OSTs\n"
     "Latencies are the MDT's service times in microseconds: mean, median (p50),\n"
     "99th percentile (upper bound of its power-of-two bucket) and largest; then\n"
     "the mean and 99th percentile of the time requests waited before their\n"
     "service began (wait_mean_us, wait_p99_us). Under each table, the server's\n"
     "busiest clients: their id, requests, mean service and wait, and address.\n"},
    {"top", cmd_top, "[-i SECONDS] [-n COUNT]",
     "show live what each server's requests cost and who sends them",
     "  -i SECONDS  refresh every SECONDS (1 to 3600; default 1)\n"
     "  -n COUNT    stop after COUNT views (default: until interrupted)\n"
     "Per MDT and storage server, over the last interval: requests per second,\n"
     "mean wait and mean service in microseconds, the busiest kinds of request\n"
     "and the busiest clients. On a terminal each view replaces the last;\n"
     "elsewhere the views follow each other.\n"},
    {"repo", cmd_repo, "add|list|remove|import|sync|export|policy ...",
     "link directories to S3 buckets (data repositories) and import their listing",
     "  repo add PATH s3://BUCKET[/PREFIX] [--endpoint URL] [--region R]\n"
     "           [--addressing path|virtual] [--no-import] [POLICY OPTIONS]\n"
     "      link PATH (a directory) to the prefix and import its listing: a file\n"
     "      per object, with its size and mtime, whose data is fetched from S3 by\n"
     "      the storage hosts at its first read\n"
     "  repo list                 every repository and its settings\n"
     "  repo remove [--force] PATH  unlink (the files stay; refused while\n"
     "                            any is released, unless --force)\n"
     "  repo import PATH          import new objects (resumes a stopped listing)\n"
     "  repo sync PATH            apply the import policy: new, changed and\n"
     "                            deleted objects reach the namespace\n"
     "  repo export PATH [--now]  apply the export policy: archive new and changed\n"
     "                            files quiet for export_delay (--now: all of\n"
     "                            them), delete the objects of removed files\n"
     "  repo policy PATH [POLICY OPTIONS] [--apply]\n"
     "      change and show the settings; --apply releases what the tiering\n"
     "      settings say now\n"
     "Policy options (stria-mgmtd applies them on its own, every policy_interval):\n"
     "  --import-policy new,changed,deleted   what sync takes from S3 (default new)\n"
     "  --sync-interval DURATION   sync this often (90, 30m, 12h, 7d; 0: never)\n"
     "  --export-policy new,changed,deleted   what goes to S3 (default none)\n"
     "  --export-delay DURATION    export a file once unchanged this long (30)\n"
     "  --release-after DURATION   release archived files not read this long (0: never)\n"
     "  --keep-free PERCENT        release the least recently read archived files\n"
     "                             while the OSTs have less free (0: never)\n"
     "  --keep-old DURATION        keep a file an object that changed in S3\n"
     "                             replaced for those who opened it (1h)\n"
     "Requests to S3 are signed by the storage hosts with their own credentials\n"
     "(AWS_ACCESS_KEY_ID... or ~/.aws/credentials of the daemons' user).\n"},
    {"hsm", cmd_hsm, "archive|release|restore|state [-v] FILE|DIR...",
     "move files between the cluster and their repository's bucket, as lfs hsm_*",
     "  archive  upload (in parts, in parallel, by the storage hosts) and mark\n"
     "           archived once the whole object is in S3\n"
     "  release  free the OST space of archived, unchanged files\n"
     "  restore  fetch released files back, every stripe at once\n"
     "  state    print the HSM state as lfs hsm_state (-v: key and etag)\n"},
    {"ondemand", cmd_ondemand, "start|status|stop --nodefile FILE ...",
     "a file system on the nodes of a job, started and stopped over ssh (as BeeOND)",
     "  ondemand start --nodefile F --data-dir D --mount M [--mdts N] [--stripe-all]\n"
     "                 [--ssh OPTIONS] [--keep-going] [--name NAME] [--port P] [--stria PATH]\n"
     "                 [--timeout SECONDS] [--verbose] [--stage-in SRC] [--endpoint URL]\n"
     "                 [--owner UID:GID] [--mode MODE]\n"
     "      over ssh to every node in F (one host name a line) at once: stria-mgmtd\n"
     "      on the first node, a stria-metad on each of the first N nodes, a\n"
     "      stria-stord serving D on every node, mounted at M on every node.\n"
     "      --owner and --mode (octal) set the root's before any node mounts it\n"
     "      (a job's user and 0700, as the Slurm prolog does).\n"
     "      Returns when it is usable everywhere. A node that fails is named, and\n"
     "      what was started is stopped again unless --keep-going.\n"
     "  ondemand status --nodefile F [--name NAME]   each node's daemons and mount\n"
     "  ondemand stop --nodefile F [--stage-out DST] [--cleanup] [--name NAME]\n"
     "      unmount and stop on every node; --cleanup removes D/stria-NAME too\n"
     "--stage-in SRC copies what is in SRC into M once it is up, --stage-out DST\n"
     "what is in M into DST before it stops, with stria pcp on every node; both\n"
     "run on the node that runs the command, which must see SRC or DST. SRC or DST\n"
     "may be s3://BUCKET/PREFIX (--endpoint URL): the storage hosts move the bytes.\n"
     "Every node runs the same stria (--stria PATH: where it is there; default the\n"
     "path of this one). Ports: P (7400) the management service, P+1 storage,\n"
     "P+2... metadata. --ssh OPTIONS go to ssh before its own (-i KEY, -l USER...).\n"
     "--timeout: how long the mounts wait on a node that is gone (30 s: scratch).\n"},
    {"pcp", cmd_pcp,
     "[--nodefile F] [--ssh OPTIONS] [--jobs N] [--chunk SIZE] [--endpoint URL] SRC... DST",
     "copy trees in parallel, every node of a node file taking a share (as beeond-cp)",
     "  Copies between paths every node sees: a global file system and a Stria\n"
     "  mount, either way. Files are cut into chunks (--chunk, 64M), so a large\n"
     "  file is copied by every node at once; each node runs --jobs (4) copies.\n"
     "  Without --nodefile, here alone. Each chunk is fsynced before it counts;\n"
     "  an interrupted copy goes on where it stopped when run again with the\n"
     "  same arguments (the journal is in ~/.local/state/stria, or --journal F).\n"
     "  --ssh OPTIONS and --stria PATH: as for stria ondemand.\n"
     "  pcp s3://BUCKET/PREFIX DIR [--endpoint URL] [--region R]: DIR (in Stria) is\n"
     "  linked to the prefix and every object restored by the storage hosts, each\n"
     "  its own stripes; pcp DIR s3://BUCKET/PREFIX: linked and archived the same way.\n"},
    {"help", cmd_help, "[COMMAND]", "show this help, or a command's", ""},
};

static const struct command *find_command(const char *name)
{
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        if (strcmp(commands[i].name, name) == 0)
            return &commands[i];
    return NULL;
}

/* The synopsis of a command for cli_usage_error, NULL if it has none. */
static const char *synopsis(const char *name)
{
    const struct command *c = find_command(name);
    return c ? c->args : NULL;
}

static void print_help(FILE *out)
{
    fprintf(out, "usage: stria [--conf FILE] COMMAND [ARGS...]\n\n"
                 "Global options:\n"
                 "  --conf FILE  client.conf to use (default: $STRIA_CONF, then\n"
                 "               ~/.config/stria/client.conf, then /etc/stria/client.conf)\n"
                 "  -h, --help   show this help\n"
                 "  --version    show the version\n\n"
                 "Commands:\n");
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\nPaths: stria:/a/b (or stria:a/b) is /a/b in the cluster. So is a path\n"
                 "inside a stria mount (MNT/a/b, or a/b with the working directory at MNT);\n"
                 "without --conf the command then uses that mount's cluster. Any other bare\n"
                 "path starting with / is a cluster path too, except for cp, where such\n"
                 "paths are local files.\n\n"
                 "Exit status: 0 success, 1 an operation failed, 2 bad usage.\n"
                 "Run 'stria COMMAND --help' for a command's options.\n");
}

/* `stria CMD --help`: from the table, or from the command itself. */
static int command_help(const struct command *c)
{
    if (!c->args) {
        char name[32], help[] = "--help";
        snprintf(name, sizeof(name), "%s", c->name);
        char *av[] = {name, help, NULL};
        return c->fn(2, av);
    }
    printf("usage: stria %s %s\n%s.\n", c->name, c->args, c->summary);
    if (c->options[0])
        printf("\n%s", c->options);
    return CLI_OK;
}

static int cmd_help(int argc, char **argv)
{
    if (argc < 2) {
        print_help(stdout);
        return CLI_OK;
    }
    if (argc > 2)
        return cli_usage_error(argv[0], "too many arguments");
    const struct command *c = find_command(argv[1]);
    if (!c) {
        fprintf(stderr, "stria: unknown command '%s'; run 'stria help' for the list\n", argv[1]);
        return CLI_USAGE;
    }
    return command_help(c);
}

/* Whether "--help" appears among a command's arguments before "--". */
static int wants_help(int argc, char **argv)
{
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
        if (strcmp(argv[i], "--help") == 0)
            return 1;
    return 0;
}

/* Consume the global options; returns the index of the subcommand, or -1
 * with *exit_code set when main should exit right away. */
static int parse_global(int argc, char **argv, int *exit_code)
{
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0)
            return i + 1;
        if (strcmp(a, "--conf") == 0 && i + 1 < argc) {
            cli_conf = argv[++i];
        } else if (strncmp(a, "--conf=", 7) == 0) {
            cli_conf = a + 7;
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            print_help(stdout);
            *exit_code = CLI_OK;
            return -1;
        } else if (strcmp(a, "--version") == 0) {
            printf("stria %s\n", STRIA_VERSION);
            *exit_code = CLI_OK;
            return -1;
        } else {
            fprintf(stderr, "stria: %s '%s'; run 'stria help'\n",
                    strcmp(a, "--conf") == 0 ? "missing FILE after" : "unknown option", a);
            *exit_code = CLI_USAGE;
            return -1;
        }
    }
    if (cli_conf && !cli_conf[0]) {
        fprintf(stderr, "stria: --conf needs a file name\n");
        *exit_code = CLI_USAGE;
        return -1;
    }
    return i;
}

int main(int argc, char **argv)
{
    int code = CLI_USAGE;
    cli_usage_init(synopsis);
    int i = parse_global(argc, argv, &code);
    if (i < 0)
        return code;
    if (i >= argc) {
        print_help(stderr);
        return CLI_USAGE;
    }
    const struct command *c = find_command(argv[i]);
    /* lctl's and lfs's names: pool_new ... is pool new ... */
    char pool[] = "pool", sub[16];
    char *av[argc - i + 2];
    if (!c && !strncmp(argv[i], "pool_", 5) && strlen(argv[i]) < 5 + sizeof(sub)) {
        snprintf(sub, sizeof(sub), "%s", argv[i] + 5);
        av[0] = pool;
        av[1] = sub;
        for (int k = i + 1; k <= argc; k++)
            av[k - i + 1] = argv[k];
        c = find_command(pool);
        argc = argc - i + 1;
        argv = av;
        i = 0;
    }
    if (!c) {
        fprintf(stderr, "stria: unknown command '%s'; run 'stria help' for the list\n", argv[i]);
        return CLI_USAGE;
    }
    if (c->args && wants_help(argc - i, argv + i))
        return command_help(c);
    cli_connect_init(argc - i, argv + i);
    return c->fn(argc - i, argv + i);
}
