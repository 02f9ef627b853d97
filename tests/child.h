/* child.h - a part of a test run in a forked child, for what only a
 * process of its own can measure (its peak RSS): the child writes one
 * line of results on the pipe it is given and exits.
 *
 *   static void part(void *ctx, int fd) { ... write(fd, line, len); _exit(0); }
 *   char line[160];
 *   int ok = child_run(part, ctx, line, sizeof line);   1: exited 0, line read
 */
#ifndef ED_TEST_CHILD_H
#define ED_TEST_CHILD_H

#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

static inline int child_run(void (*fn)(void *ctx, int fd), void *ctx, char *line, size_t cap) {
    int fds[2];
    memset(line, 0, cap);
    if (pipe(fds) != 0) return 0;
    pid_t pid = fork();
    if (pid < 0) return 0;
    if (pid == 0) {
        close(fds[0]);
        fn(ctx, fds[1]);
        _exit(3);
    }
    close(fds[1]);
    ssize_t got = read(fds[0], line, cap - 1);
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    return got > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

#endif
