/*-------------------------------------------------------------------------
 *
 * events.c
 *		dlock-run's event loop, signal plumbing and clocks
 *
 * The leaf of dlock-run's files: it calls no other file of dlock-run.
 * What the others want done when a signal arrives, or when waiting itself
 * fails, they register as hooks (SetSignalHook, SetFatalHook).
 *
 * A handler writes each signal number into a non-blocking self-pipe; the
 * only place that waits (WaitEvent) polls that pipe with a socket and a
 * deadline, and hands each signal that arrived to the signal hook.  A
 * signal the hook does not take is remembered in interrupt_signal (the
 * first one), except the stop signals (SIGTSTP, SIGTTIN, SIGTTOU), which
 * then stop dlock-run as they would by default.
 *
 * Copyright (c) 2026, the dlock developers
 *
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "dlock-run.h"

/* The byte written to the self-pipe: signal number, plus this if the kernel sent it */
#define SIGNAL_FROM_KERNEL	0x80

/* Signals passed on to the command while it runs */
const int	forwarded_signals[] = {
	SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2
};
const size_t n_forwarded_signals = lengthof(forwarded_signals);

/* Signals that stop a job; dlock-run stops the command's processes first */
static const int stop_signals[] = {SIGTSTP, SIGTTIN, SIGTTOU};

typedef struct SignalName
{
	const char *name;
	int			signo;
} SignalName;

static const SignalName signal_names[] = {
	{"HUP", SIGHUP},
	{"INT", SIGINT},
	{"QUIT", SIGQUIT},
	{"KILL", SIGKILL},
	{"USR1", SIGUSR1},
	{"USR2", SIGUSR2},
	{"ALRM", SIGALRM},
	{"TERM", SIGTERM},
	{"CONT", SIGCONT},
	{"STOP", SIGSTOP},
	{"TSTP", SIGTSTP},
	{"TTIN", SIGTTIN},
	{"TTOU", SIGTTOU},
	{NULL, 0}
};

/* the first signal that arrived and no hook took */
int			interrupt_signal = 0;

/* signals that were ignored when dlock-run started */
bool		ignored_at_start[NSIG];

static int	signal_pipe[2] = {-1, -1};
static SignalHook signal_hook = NULL;
static FatalHook fatal_hook = NULL;

/*
 * Now: seconds on CLOCK_BOOTTIME, which (unlike CLOCK_MONOTONIC) keeps
 * counting while the machine is suspended.  Every deadline uses it.
 */
double
Now(void)
{
	struct timespec ts;

#ifdef CLOCK_BOOTTIME
	if (clock_gettime(CLOCK_BOOTTIME, &ts) != 0)
#endif
		clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

/*
 * WallNow: seconds on the wall clock, only to notice a stall that stopped
 * CLOCK_BOOTTIME too (a paused virtual machine whose clock is set right
 * afterwards).
 */
double
WallNow(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

/*
 * Earliest: the earlier of two deadlines, NO_DEADLINE being the latest.
 */
double
Earliest(double a, double b)
{
	if (a < 0)
		return b;
	if (b < 0)
		return a;
	return a < b ? a : b;
}

/*
 * SignalNameOf: "SIGTERM" for SIGTERM.
 */
const char *
SignalNameOf(int signo)
{
	static char buf[32];
	int			i;

	for (i = 0; signal_names[i].name != NULL; i++)
	{
		if (signal_names[i].signo == signo)
		{
			snprintf(buf, sizeof(buf), "SIG%s", signal_names[i].name);
			return buf;
		}
	}
	snprintf(buf, sizeof(buf), "signal %d", signo);
	return buf;
}

/*
 * ParseSignal: "TERM", "SIGTERM", "term" or "15"; -1 if none of these.
 */
int
ParseSignal(const char *arg)
{
	const char *p = arg;
	char	   *end;
	long		n;
	int			i;

	if (strncasecmp(p, "SIG", 3) == 0)
		p += 3;
	for (i = 0; signal_names[i].name != NULL; i++)
	{
		if (strcasecmp(p, signal_names[i].name) == 0)
			return signal_names[i].signo;
	}
	errno = 0;
	n = strtol(arg, &end, 10);
	if (errno == 0 && end != arg && *end == '\0' && n > 0 && n < NSIG)
		return (int) n;
	return -1;
}

/*
 * IsStopSignal: SIGTSTP, SIGTTIN or SIGTTOU.
 */
bool
IsStopSignal(int signo)
{
	return signo == SIGTSTP || signo == SIGTTIN || signo == SIGTTOU;
}

/*
 * SetSignalHook, SetFatalHook: what to do with a signal that arrived, and
 * when waiting fails (see Fatal).
 */
void
SetSignalHook(SignalHook hook)
{
	signal_hook = hook;
}

void
SetFatalHook(FatalHook hook)
{
	fatal_hook = hook;
}

/*
 * Fatal: a local failure dlock-run cannot go on after (poll failed, out of
 * memory).  The fatal hook says so and ends the command; without one, the
 * message goes to stderr as it is and dlock-run exits.
 */
void
Fatal(const char *msg)
{
	ssize_t		rc;

	if (fatal_hook != NULL)
		fatal_hook(msg);
	rc = write(2, "dlock-run: error: ", 18);
	rc = write(2, msg, strlen(msg));
	rc = write(2, "\n", 1);
	(void) rc;
	exit(EXIT_OSERR);
}

/*
 * SignalHandler: note the signal in the self-pipe; WaitEvent handles it.
 */
static void
SignalHandler(int signo, siginfo_t *info, void *context)
{
	int			save_errno = errno;
	unsigned char b = (unsigned char) signo;
	ssize_t		rc;

	(void) context;
	if (info != NULL && info->si_code == SI_KERNEL)
		b |= SIGNAL_FROM_KERNEL;
	rc = write(signal_pipe[1], &b, 1);
	(void) rc;
	errno = save_errno;
}

/*
 * Catch: install SignalHandler for signo, unless it was ignored at start
 * and keep_ignored.
 */
static void
Catch(int signo, int flags, bool keep_ignored)
{
	struct sigaction sa;
	struct sigaction old;

	if (keep_ignored && sigaction(signo, NULL, &old) == 0 && old.sa_handler == SIG_IGN)
	{
		ignored_at_start[signo] = true;
		return;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = SignalHandler;
	sa.sa_flags = SA_SIGINFO | flags;
	sigemptyset(&sa.sa_mask);
	sigaction(signo, &sa, NULL);
}

/*
 * SetUpSignals: SIGPIPE ignored, the self-pipe, and handlers for SIGCHLD,
 * the forwarded signals and the stop signals.  A signal that was ignored
 * when dlock-run started (as SIGINT is for a background job of a shell
 * script) stays ignored, for dlock-run and for the command.  The stop
 * signals interrupt system calls (no SA_RESTART): a write to the terminal
 * from a background job then fails instead of raising SIGTTOU again and
 * again.  False if the self-pipe could not be made.
 */
bool
SetUpSignals(void)
{
	struct sigaction old;
	size_t		i;
	int			j;

	if (sigaction(SIGPIPE, NULL, &old) == 0 && old.sa_handler == SIG_IGN)
		ignored_at_start[SIGPIPE] = true;
	signal(SIGPIPE, SIG_IGN);

	if (pipe(signal_pipe) != 0)
		return false;
	for (j = 0; j < 2; j++)
	{
		fcntl(signal_pipe[j], F_SETFL, fcntl(signal_pipe[j], F_GETFL) | O_NONBLOCK);
		fcntl(signal_pipe[j], F_SETFD, FD_CLOEXEC);
	}
	for (i = 0; i < n_forwarded_signals; i++)
		Catch(forwarded_signals[i], SA_RESTART, true);
	for (i = 0; i < lengthof(stop_signals); i++)
		Catch(stop_signals[i], 0, true);
	/* even if ignored: an ignored SIGCHLD would reap the command for us */
	Catch(SIGCHLD, SA_RESTART | SA_NOCLDSTOP, false);
	return true;
}

/*
 * BlockSignals: block (true) or restore (false) every signal we handle.
 */
void
BlockSignals(bool block, sigset_t *old)
{
	sigset_t	set;
	size_t		i;

	if (!block)
	{
		sigprocmask(SIG_SETMASK, old, NULL);
		return;
	}
	sigemptyset(&set);
	for (i = 0; i < n_forwarded_signals; i++)
		sigaddset(&set, forwarded_signals[i]);
	for (i = 0; i < lengthof(stop_signals); i++)
		sigaddset(&set, stop_signals[i]);
	sigaddset(&set, SIGCHLD);
	sigprocmask(SIG_BLOCK, &set, old);
}

/*
 * ResetSignalsForExec: in the command's process, the dispositions it
 * should inherit: what dlock-run found, not its handlers.
 */
void
ResetSignalsForExec(void)
{
	size_t		i;

	for (i = 0; i < n_forwarded_signals; i++)
	{
		if (!ignored_at_start[forwarded_signals[i]])
			signal(forwarded_signals[i], SIG_DFL);
	}
	for (i = 0; i < lengthof(stop_signals); i++)
	{
		if (!ignored_at_start[stop_signals[i]])
			signal(stop_signals[i], SIG_DFL);
	}
	if (!ignored_at_start[SIGPIPE])
		signal(SIGPIPE, SIG_DFL);
	signal(SIGCHLD, SIG_DFL);
}

/*
 * HandleSignals: hand every signal noted in the self-pipe to the hook.
 */
static void
HandleSignals(void)
{
	unsigned char buf[64];
	ssize_t		n;
	ssize_t		i;

	for (;;)
	{
		n = read(signal_pipe[0], buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		for (i = 0; i < n; i++)
		{
			int			signo = buf[i] & ~SIGNAL_FROM_KERNEL;
			bool		from_kernel = (buf[i] & SIGNAL_FROM_KERNEL) != 0;

			if (signal_hook != NULL && signal_hook(signo, from_kernel))
				continue;
			if (IsStopSignal(signo))
				(void) raise(SIGSTOP);
			else if (signo != SIGCHLD && interrupt_signal == 0)
				interrupt_signal = signo;
		}
	}
}

/*
 * TimeoutMs: milliseconds from now until deadline, for poll(); -1 if none.
 */
static int
TimeoutMs(double deadline)
{
	double		left;

	if (deadline < 0)
		return -1;
	left = deadline - Now();
	if (left <= 0)
		return 0;
	if (left > 3600.0)
		return 3600 * 1000;
	return (int) (left * 1000.0) + 1;
}

/*
 * WaitEvent: wait until sock (if >= 0) is ready for events, a signal
 * arrives, or deadline passes (NO_DEADLINE: no limit).  Signals that
 * arrived are handled before it returns.  True if the socket is ready.
 */
bool
WaitEvent(int sock, short events, double deadline)
{
	struct pollfd fds[2];
	nfds_t		nfds = 1;
	int			rc;

	fds[0].fd = signal_pipe[0];
	fds[0].events = POLLIN;
	fds[0].revents = 0;
	if (sock >= 0)
	{
		fds[1].fd = sock;
		fds[1].events = events;
		fds[1].revents = 0;
		nfds = 2;
	}
	rc = poll(fds, nfds, TimeoutMs(deadline));
	if (rc < 0 && errno != EINTR)
	{
		char		msg[256];

		snprintf(msg, sizeof(msg), "poll failed: %s", strerror(errno));
		Fatal(msg);
	}
	HandleSignals();
	return rc > 0 && nfds == 2 && fds[1].revents != 0;
}
