/*
 * The process supervisor: detached children, pid files, bounded waits.
 *
 * A daemon runs in a session of its own with nothing of ours but the log
 * it writes to, so it neither dies with the terminal nor holds the
 * caller's pipes open (a `stria up | grep` would never end). A pid file is
 * trusted only while its process is alive and runs the program named:
 * pids are recycled. Nothing here knows a cluster's layout (local.c) or
 * what a mount is (mount.c); nothing here waits without a bound.
 */
#include "proc.h"

#include "../common/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Our environment without $NOTIFY_SOCKET, then notify's (malloc'd; the
 * strings are environ's but the one built into *own). Made before fork:
 * the child of a process with threads may only exec. */
static char **child_env(const char *notify, char **own)
{
    size_t n = 0;
    while (environ[n])
        n++;
    char **env = malloc((n + 2) * sizeof(*env));
    *own = NULL;
    if (!env)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "NOTIFY_SOCKET=", 14))
            env[k++] = environ[i];
    if (notify) {
        size_t len = strlen("NOTIFY_SOCKET=") + strlen(notify) + 1;
        if (!(*own = malloc(len))) {
            free(env);
            return NULL;
        }
        snprintf(*own, len, "NOTIFY_SOCKET=%s", notify);
        env[k++] = *own;
    }
    env[k] = NULL;
    return env;
}

pid_t proc_spawn(char *const argv[], int out_fd, const char *wd, const char *notify)
{
    char *own;
    char **env = child_env(notify, &own);
    if (!env)
        return -ENOMEM;
    pid_t pid = fork();
    if (pid != 0) {
        int err = errno;
        free(own);
        free(env);
        return pid < 0 ? -err : pid;
    }
    setsid();
    int in = open("/dev/null", O_RDONLY);
    if (in < 0 || dup2(in, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(out_fd, 2) < 0 ||
        (wd && chdir(wd) < 0))
        _exit(127);
    close_range(3, ~0u, 0);
    execve(argv[0], argv, env);
    _exit(127);
}

int proc_run_bounded(char *const argv[], int out_fd, int ms)
{
    fflush(NULL); /* what we printed comes before what it prints to out_fd */
    pid_t pid = proc_spawn(argv, out_fd, NULL, NULL);
    if (pid < 0)
        return pid;
    int st;
    uint64_t deadline = util_now_mono_ns() + (uint64_t)ms * 1000000ull;
    for (;;) {
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid)
            break;
        if (r < 0 && errno != EINTR)
            return -errno;
        if (util_now_mono_ns() >= deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
            return -ETIMEDOUT;
        }
        usleep(20 * 1000);
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

void proc_bin_dir(char *buf, size_t len)
{
    char self[CLI_PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n <= 0) {
        snprintf(buf, len, "/usr/local/bin");
        return;
    }
    self[n] = '\0';
    snprintf(buf, len, "%s", dirname(self));
}

bool proc_find_prog(const char *name, char *buf, size_t len)
{
    char dir[CLI_PATH_MAX];
    proc_bin_dir(dir, sizeof(dir));
    if (snprintf(buf, len, "%s/%s", dir, name) < (int)len && access(buf, X_OK) == 0)
        return true;
    return util_find_in_path(name, buf, len);
}

bool proc_gone(pid_t pid)
{
    char path[64], st[256] = "";
    if (kill(pid, 0) < 0 && errno == ESRCH)
        return true;
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return true;
    if (!fgets(st, sizeof(st), f))
        st[0] = '\0';
    fclose(f);
    char *rp = strrchr(st, ')');
    return rp && rp[1] == ' ' && (rp[2] == 'Z' || rp[2] == 'X');
}

pid_t proc_running(const char *pidfile, const char *bin)
{
    char *text = NULL;
    if (util_read_file(pidfile, 64, &text, NULL))
        return 0;
    pid_t pid = (pid_t)atoi(text);
    free(text);
    if (pid <= 0 || kill(pid, 0) < 0)
        return 0;
    char cmdpath[64], cmd[512] = "";
    snprintf(cmdpath, sizeof(cmdpath), "/proc/%d/cmdline", (int)pid);
    FILE *f = fopen(cmdpath, "r");
    if (f) {
        size_t n = fread(cmd, 1, sizeof(cmd) - 1, f);
        cmd[n] = '\0';
        fclose(f);
    }
    if (!strstr(cmd, bin))
        return 0;
    /* A zombie child of ours counts as gone. */
    char statpath[64], st[256] = "";
    snprintf(statpath, sizeof(statpath), "/proc/%d/stat", (int)pid);
    if ((f = fopen(statpath, "r"))) {
        if (!fgets(st, sizeof(st), f))
            st[0] = '\0';
        fclose(f);
        char *rp = strrchr(st, ')');
        if (rp && rp[1] == ' ' && rp[2] == 'Z')
            return 0;
    }
    return pid;
}

int proc_start(const char *bin, const char *conf, const char *log, const char *pidfile,
               const char *notify, pid_t *pid)
{
    int rc;
    if (access(bin, X_OK) < 0) {
        rc = -errno;
        fprintf(stderr, "stria up: cannot run %s: %s\n", bin, strerror(-rc));
        return rc;
    }
    int out = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (out < 0) {
        rc = -errno;
        fprintf(stderr, "stria up: cannot open %s: %s\n", log, strerror(-rc));
        return rc;
    }
    char config_flag[] = "--config";
    char *const argv[] = {(char *)bin, config_flag, (char *)conf, NULL};
    pid_t child = proc_spawn(argv, out, NULL, notify);
    close(out);
    if (child < 0)
        return child;
    *pid = child;
    char text[32];
    snprintf(text, sizeof(text), "%d\n", (int)child);
    return util_write_file_atomic(pidfile, text, strlen(text), 0644);
}

pid_t proc_stop(const char *pidfile, const char *bin)
{
    pid_t pid = proc_running(pidfile, bin);
    if (!pid) {
        unlink(pidfile);
        return 0;
    }
    kill(pid, SIGTERM);
    for (int i = 0; i < 100 && proc_running(pidfile, bin); i++) {
        waitpid(pid, NULL, WNOHANG);
        usleep(100 * 1000);
    }
    if (proc_running(pidfile, bin)) {
        fprintf(stderr, "stria down: %s (pid %d) ignored SIGTERM for 10 s; killing it\n", bin,
                (int)pid);
        kill(pid, SIGKILL);
        usleep(100 * 1000);
    }
    unlink(pidfile);
    return pid;
}
