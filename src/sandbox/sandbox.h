/* SPDX-License-Identifier: MIT */
/*
 * sandbox: the seccomp allow-list of the extraction helper (the only libseccomp user). Once
 * entered, the process may read and write the descriptors it has, manage its memory, read the
 * clock and exit; any other system call kills it.
 */
#ifndef WORKFORCE_SANDBOX_H
#define WORKFORCE_SANDBOX_H

/* Enter the allow-list for the rest of the process's life. 0, or -1 when it cannot be set. */
int sandbox_enter(void);

#endif
