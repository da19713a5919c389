/* SPDX-License-Identifier: MIT */
/*
 * sandbox.c: a seccomp filter built with libseccomp for the extraction helper. The helper gets
 * the untrusted file on stdin and a pipe on stdout and stderr before it enters the filter, so
 * parsing needs no open(), no socket, no exec, no process or file-system call: only reading
 * and writing the descriptors it holds, its memory (brk, mmap, munmap, mremap, mprotect,
 * madvise), the clock, and exiting. The default action kills the whole process (SIGSYS), which
 * the server reports as a failed extraction. The list was read off the real extractors over the
 * test corpus (strace -f -c), with the glibc and sanitizer runtime calls they need.
 */
#include "sandbox.h"

#include <seccomp.h>
#include <stddef.h>

static const int allowed[] = {
    SCMP_SYS(read),          SCMP_SYS(write),        SCMP_SYS(readv),
    SCMP_SYS(writev),        SCMP_SYS(close),        SCMP_SYS(fstat),
    SCMP_SYS(newfstatat),    SCMP_SYS(lseek),        SCMP_SYS(brk),
    SCMP_SYS(mmap),          SCMP_SYS(munmap),       SCMP_SYS(mremap),
    SCMP_SYS(mprotect),      SCMP_SYS(madvise),      SCMP_SYS(futex),
    SCMP_SYS(clock_gettime), SCMP_SYS(gettimeofday), SCMP_SYS(time),
    SCMP_SYS(getrandom),     SCMP_SYS(rt_sigreturn), SCMP_SYS(rt_sigprocmask),
    SCMP_SYS(sigaltstack),   SCMP_SYS(getpid),       SCMP_SYS(gettid),
    SCMP_SYS(sched_yield),   SCMP_SYS(exit),         SCMP_SYS(exit_group),
};

/*
 * Enter the allow-list (see the file's comment) for the rest of the process's life. Returns 0,
 * or -1 when the filter cannot be built or loaded (the caller must then not parse anything).
 */
int sandbox_enter(void)
{
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_KILL_PROCESS);
    int rc = ctx ? 0 : -1;

    for (size_t i = 0; !rc && i < sizeof(allowed) / sizeof(allowed[0]); i++)
        rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, allowed[i], 0) == 0 ? 0 : -1;
    if (!rc)
        rc = seccomp_load(ctx) == 0 ? 0 : -1;
    seccomp_release(ctx);
    return rc;
}
