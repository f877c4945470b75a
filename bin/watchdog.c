/*-------------------------------------------------------------------------
 *
 * watchdog.c
 *		a second process that stops the command when dlock-run cannot
 *
 * SIGSTOP cannot be caught: dlock-run stopped alone (kill -STOP of its pid),
 * held by a debugger, or stuck in the kernel, cannot stop the command when
 * the lease's deadline passes, and the command would run on, unreported,
 * for as long as the stop lasts.  So dlock-run forks a watchdog at start,
 * before it opens a connection: a process of its own process group (a
 * stop of dlock-run's group, or Ctrl-Z, does not reach it) that shares one
 * page of memory with dlock-run and holds nothing else of it (its other
 * descriptors are closed; stdin and stdout are /dev/null).
 *
 * dlock-run publishes the lease's local deadline there whenever it moves
 * (WatchdogArm), and marks the time it stops itself on purpose for Ctrl-Z
 * (WatchdogSuspend: the command is stopped then, and dlock-run confirms the
 * lease before it continues it).  The watchdog sleeps until the deadline
 * plus a quarter of the deadline margin, which is still before the lease
 * expires on the server (DeadlineMargin); if dlock-run has published no
 * later deadline by then and is not suspended on purpose, the watchdog does
 * what dlock-run would have done at the deadline: --signal (and SIGCONT) to
 * every descendant of dlock-run, found as descendants.c finds them from
 * dlock-run's pid, and SIGKILL --kill-after later.  A healthy dlock-run
 * does the same at the deadline itself; the signals then arrive twice,
 * which changes nothing.  When dlock-run runs again it sees the stall and
 * the lost lease, and exits with --lost-exit-code as before.
 *
 * The watchdog ends when dlock-run does: its end of a pipe reads EOF when
 * dlock-run's end closes (dlock-run exits), and it asks for SIGKILL when
 * dlock-run dies (PR_SET_PDEATHSIG).  Without a watchdog (fork failed),
 * dlock-run runs as before and says so with -v.
 *
 * Copyright (c) 2026, the dlock developers
 *
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "dlock-run.h"

/* what dlock-run tells the watchdog; each field is written whole (atomics) */
typedef struct WatchdogState
{
	double		deadline;		/* the lease's local deadline, or NO_DEADLINE */
	int			suspended;		/* dlock-run stopped itself on purpose */
	int			lost_signal;
	double		kill_after;		/* --kill-after in seconds; 0: never SIGKILL */
	double		slack;			/* how long past the deadline to wait */
} WatchdogState;

static WatchdogState *state = NULL;

/*
 * Get, Put: one field, whole (the generic atomics work for doubles too).
 */
#define Get(field, out)		__atomic_load(&state->field, (out), __ATOMIC_SEQ_CST)
#define Put(field, in)		__atomic_store(&state->field, (in), __ATOMIC_SEQ_CST)

/*
 * ParentGone: poll the pipe to dlock-run for up to secs; true at EOF (or
 * when dlock-run is no longer our parent).
 */
static bool
ParentGone(int fd, pid_t parent, double secs)
{
	struct pollfd pfd;
	int			ms = secs <= 0 ? 0 : secs > 1.0 ? 1000 : (int) (secs * 1000.0) + 1;

	pfd.fd = fd;
	pfd.events = POLLIN;
	pfd.revents = 0;
	if (poll(&pfd, 1, ms) > 0 && (pfd.revents & (POLLIN | POLLHUP | POLLERR)))
		return true;
	return getppid() != parent;
}

/*
 * Rearmed: has dlock-run published another deadline than acted_on since?
 */
static bool
Rearmed(double acted_on)
{
	double		deadline;

	Get(deadline, &deadline);
	return deadline != acted_on;
}

/*
 * StopTheCommand: dlock-run did not act by the deadline it published
 * (acted_on): the signal it asked for (and SIGCONT) to every descendant of
 * dlock-run, then SIGKILL kill_after later to whatever still runs, unless
 * dlock-run ends or publishes another deadline first.  False if there was
 * nothing to signal (the watchdog goes on watching).
 */
static bool
StopTheCommand(int fd, pid_t parent, double acted_on)
{
	int			signo;
	double		kill_after;
	int			n;
	double		kill_at;

	Get(lost_signal, &signo);
	Get(kill_after, &kill_after);
	n = SignalDescendants(signo);
	if (n == 0)
		return false;
	if (signo != SIGKILL && signo != SIGCONT)
		(void) SignalDescendants(SIGCONT);
	Log("warning", "dlock-run did not act by its deadline (it is stopped, traced or stuck): "
		"its watchdog sent %s to %d process%s of the command",
		SignalNameOf(signo), n, n == 1 ? "" : "es");
	if (kill_after <= 0 || signo == SIGKILL)
		return true;
	kill_at = Now() + kill_after;
	while (Now() < kill_at)
	{
		if (ParentGone(fd, parent, kill_at - Now()))
			_exit(0);
		if (Rearmed(acted_on))
			return true;		/* dlock-run runs again and acts itself */
	}
	if (CountDescendants() > 0)
	{
		n = SignalDescendants(SIGKILL);
		Log("warning", "processes of the command still ran %g s after %s: the watchdog sent SIGKILL to %d",
			kill_after, SignalNameOf(signo), n);
	}
	return true;
}

/*
 * WatchdogMain: the watchdog's loop (see the file's header).  Once it has
 * acted on a deadline it waits for dlock-run to publish another one.
 */
static void
WatchdogMain(int fd, pid_t parent)
{
	double		acted_on = NO_DEADLINE;

	for (;;)
	{
		double		deadline;
		double		slack;
		int			suspended;
		double		now = Now();
		double		due;

		Get(deadline, &deadline);
		Get(slack, &slack);
		Get(suspended, &suspended);
		due = deadline + slack;
		if (deadline == NO_DEADLINE || deadline == acted_on || suspended || now < due)
		{
			if (ParentGone(fd, parent,
						   deadline == NO_DEADLINE || deadline == acted_on || suspended ? 1.0 : due - now))
				_exit(0);
			continue;
		}
		if (StopTheCommand(fd, parent, deadline))
			acted_on = deadline;
		else if (ParentGone(fd, parent, 0.1))
			_exit(0);
	}
}

/*
 * CloseInherited: every descriptor but stderr and keep; stdin and stdout
 * on /dev/null, so that the watchdog holds no pipe of the caller's open
 * (a reader waiting for dlock-run's output sees its end when dlock-run
 * exits).
 */
static void
CloseInherited(int keep)
{
	long		max = sysconf(_SC_OPEN_MAX);
	int			null = open("/dev/null", O_RDWR | O_CLOEXEC);
	int			fd;

	if (null >= 0)
	{
		(void) dup2(null, STDIN_FILENO);
		(void) dup2(null, STDOUT_FILENO);
	}
	if (max < 0 || max > 65536)
		max = 65536;
	for (fd = STDERR_FILENO + 1; fd < max; fd++)
	{
		if (fd != keep)
			(void) close(fd);
	}
}

/*
 * StartWatchdog: fork the watchdog (at start, before any connection).
 * False if it could not be started; dlock-run then runs without one.
 */
bool
StartWatchdog(void)
{
	int			pipefd[2];
	pid_t		parent = getpid();
	pid_t		pid;
	sigset_t	old;
	void	   *page;

	page = mmap(NULL, sizeof(WatchdogState), PROT_READ | PROT_WRITE,
				MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (page == MAP_FAILED)
		return false;
	state = page;
	state->deadline = NO_DEADLINE;
	state->lost_signal = SIGTERM;
	if (pipe(pipefd) != 0)
	{
		(void) munmap(page, sizeof(WatchdogState));
		state = NULL;
		return false;
	}
	fflush(NULL);
	BlockSignals(true, &old);
	pid = fork();
	if (pid == 0)
	{
		size_t		i;

		ResetSignalsForExec();
		for (i = 0; i < n_forwarded_signals; i++)
		{
			/* the terminal's and the job's signals are dlock-run's to act on */
			if (forwarded_signals[i] != SIGTERM && forwarded_signals[i] != SIGKILL)
				signal(forwarded_signals[i], SIG_IGN);
		}
		signal(SIGTSTP, SIG_IGN);
		signal(SIGTTIN, SIG_IGN);
		signal(SIGTTOU, SIG_IGN);
		signal(SIGPIPE, SIG_IGN);
		(void) setpgid(0, 0);
#if defined(__linux__) && defined(PR_SET_PDEATHSIG)
		(void) prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
		(void) prctl(PR_SET_NAME, "dlock-run-watch", 0, 0, 0);
#endif
		if (getppid() != parent)
			_exit(0);
		CloseInherited(pipefd[0]);
		BlockSignals(false, &old);
		SetDescendantRoot(parent, getpid());
		WatchdogMain(pipefd[0], parent);
		_exit(0);
	}
	BlockSignals(false, &old);
	close(pipefd[0]);
	if (pid < 0)
	{
		close(pipefd[1]);
		(void) munmap(page, sizeof(WatchdogState));
		state = NULL;
		return false;
	}
	/* dlock-run's end: closed by exit (and by exec in the command) */
	(void) fcntl(pipefd[1], F_SETFD, FD_CLOEXEC);
	SetDescendantRoot(parent, pid);
	return true;
}

/*
 * WatchdogArm: dlock-run will act by deadline (NO_DEADLINE: nothing to
 * watch); if it has not, slack later the watchdog sends every descendant
 * signo (and SIGCONT), then SIGKILL kill_after later (0: never).
 */
void
WatchdogArm(double deadline, double slack, int signo, double kill_after)
{
	if (state == NULL)
		return;
	Put(lost_signal, &signo);
	Put(kill_after, &kill_after);
	Put(slack, &slack);
	Put(deadline, &deadline);
}

/*
 * WatchdogSuspend: dlock-run stops itself on purpose (Ctrl-Z), or goes on.
 */
void
WatchdogSuspend(bool suspended)
{
	int			value = suspended ? 1 : 0;

	if (state != NULL)
		Put(suspended, &value);
}
