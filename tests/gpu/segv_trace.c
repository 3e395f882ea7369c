/*
 * LD_PRELOAD helper for crashes on the GPU machine, which has no debugger:
 * on SIGSEGV, SIGBUS or SIGABRT it prints the crashing thread's name and
 * stack to stderr, then lets the signal kill the process as before.
 *     cc -shared -fPIC -o segv_trace.so tests/gpu/segv_trace.c
 *     LD_PRELOAD=$PWD/segv_trace.so PROGRAM...
 * Symbolise the "binary(+0xOFFSET)" lines with addr2line -f -e binary.
 */
#define _GNU_SOURCE
#include <execinfo.h>
#include <stdio.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

static void segv_trace(int sig, siginfo_t *si, void *uc)
{
    void *pc[64];
    char name[32] = "?", line[160];
    int n;

    (void)uc;
    pthread_getname_np(pthread_self(), name, sizeof name);
    n = snprintf(line, sizeof line,
                 "segv_trace: signal %d (%s) at %p in thread %s\n", sig,
                 strsignal(sig), si->si_addr, name);
    if (n > 0 && write(2, line, (size_t)n) < 0)
        _exit(128 + sig);
    backtrace_symbols_fd(pc, backtrace(pc, 64), 2);
    signal(sig, SIG_DFL);
    raise(sig);
}

__attribute__((constructor)) static void segv_trace_install(void)
{
    struct sigaction sa;
    void *pc[2];

    (void)backtrace(pc, 2); /* loads libgcc now, not in the handler */
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = segv_trace;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigaction(SIGSEGV, &sa, NULL);
    sigaction(SIGBUS, &sa, NULL);
    sigaction(SIGABRT, &sa, NULL);
}
