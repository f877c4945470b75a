/*-------------------------------------------------------------------------
 *
 * supervisor.c
 *		the command dlock-run runs, its signals, and the lease's deadline
 *
 * While the command runs, Supervise keeps the lease: it renews it every
 * --renew-every, and when its deadline (see DeadlineMargin) passes without
 * a successful renewal, or the server says the token no longer holds it,
 * the command's process group gets --signal and, --kill-after later,
 * SIGKILL.  Signals dlock-run receives are passed on to the command.
 *
 * Deadlines run on Now() (CLOCK_BOOTTIME).  The loop wakes at least every
 * TICK; a wake-up much later than planned, or a wall clock that moved
 * differently from Now(), is a stall (SIGSTOP, a frozen or suspended
 * machine).  After a stall the deadline is checked first, then the server
 * is asked (a renewal, or with --renew-every 0 the lease's time left)
 * before the lease is trusted again.
 *
 * Copyright (c) 2026, the dlock developers
 *
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "dlock-run.h"

/* The byte written to the self-pipe: signal number, plus this if the kernel sent it */
#define SIGNAL_FROM_KERNEL	0x80

/* Signals passed on to the command while it runs */
static const int forwarded_signals[] = {
	SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2
};

Lease		lease;

/* the first signal that arrived while no command was running */
int			interrupt_signal = 0;

/* the command: set up by StartCommand, updated by ReapChildren */
int			child_status = 0;
static pid_t child_pid = 0;
static bool child_running = false;
static bool supervising = false;	/* between fork and the command's end */

static int	signal_pipe[2] = {-1, -1};
static bool ignored_at_start[NSIG];

/* when the command gets SIGKILL, after it got --signal */
static double kill_at = NO_DEADLINE;
static bool killed = false;

/* stall detection: when the loop last looked, and when it planned to */
static double last_boot = NO_DEADLINE;
static double last_wall = 0;
static double planned = NO_DEADLINE;

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
 * SetUpSignals: SIGPIPE ignored, the self-pipe, and handlers for SIGCHLD
 * and the forwarded signals.  A forwarded signal that was ignored when
 * dlock-run started (as SIGINT is for a background job of a shell script)
 * stays ignored, for dlock-run and for the command.
 */
void
SetUpSignals(void)
{
	struct sigaction sa;
	struct sigaction old;
	size_t		i;
	int			j;

	if (sigaction(SIGPIPE, NULL, &old) == 0 && old.sa_handler == SIG_IGN)
		ignored_at_start[SIGPIPE] = true;
	signal(SIGPIPE, SIG_IGN);

	if (pipe(signal_pipe) != 0)
	{
		Log("error", "could not create pipe: %s", strerror(errno));
		exit(EXIT_OSERR);
	}
	for (j = 0; j < 2; j++)
	{
		fcntl(signal_pipe[j], F_SETFL, fcntl(signal_pipe[j], F_GETFL) | O_NONBLOCK);
		fcntl(signal_pipe[j], F_SETFD, FD_CLOEXEC);
	}

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = SignalHandler;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);

	for (i = 0; i < lengthof(forwarded_signals); i++)
	{
		int			signo = forwarded_signals[i];

		if (sigaction(signo, NULL, &old) == 0 && old.sa_handler == SIG_IGN)
		{
			ignored_at_start[signo] = true;
			continue;
		}
		sigaction(signo, &sa, NULL);
	}
	sa.sa_flags |= SA_NOCLDSTOP;
	sigaction(SIGCHLD, &sa, NULL);
}

/*
 * BlockSignals: block (true) or unblock (false) every signal we handle.
 */
static void
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
	for (i = 0; i < lengthof(forwarded_signals); i++)
		sigaddset(&set, forwarded_signals[i]);
	sigaddset(&set, SIGCHLD);
	sigprocmask(SIG_BLOCK, &set, old);
}

/*
 * SignalCommand: send signo to the command (its whole process group unless
 * --foreground).
 */
static void
SignalCommand(int signo)
{
	if (child_pid <= 0)
		return;
	if (!opts.foreground)
	{
		if (kill(-child_pid, signo) == 0 || errno != ESRCH || !child_running)
			return;
	}
	if (child_running)
		kill(child_pid, signo);
}

/*
 * CommandAlive: is the command, or anything it left in its process group,
 * still running?
 */
static bool
CommandAlive(void)
{
	if (child_running)
		return true;
	if (opts.foreground || child_pid <= 0)
		return false;
	return kill(-child_pid, 0) == 0;
}

/*
 * ReapChildren: collect every child that has ended.  The command's status
 * is kept; orphans reparented to us (we are a subreaper) are just reaped.
 */
static void
ReapChildren(void)
{
	for (;;)
	{
		int			status;
		pid_t		pid = waitpid(-1, &status, WNOHANG);

		if (pid <= 0)
		{
			if (pid < 0 && errno == EINTR)
				continue;
			break;
		}
		if (pid == child_pid && child_running)
		{
			child_running = false;
			child_status = status;
		}
	}
}

/*
 * Die: exit after a local failure, never leaving the command behind: it gets
 * the lease-lost signal, then SIGKILL after --kill-after (or DIE_GRACE),
 * and is reaped.  Uses no libpq and no self-pipe.
 */
void
Die(int code)
{
	if (supervising)
	{
		double		until = Now() + (kill_secs > 0 ? kill_secs : DIE_GRACE);
		struct timespec pause = {0, 50 * 1000 * 1000};

		supervising = false;
		SignalCommand(opts.lost_signal);
		while (CommandAlive() && Now() < until)
		{
			nanosleep(&pause, NULL);
			ReapChildren();
		}
		if (CommandAlive())
			SignalCommand(SIGKILL);
		while (child_running)
		{
			nanosleep(&pause, NULL);
			ReapChildren();
		}
	}
	exit(code);
}

/*
 * ExitInterrupted: a signal interrupted dlock-run before the command ran.
 */
void
ExitInterrupted(void)
{
	Verbose("interrupted by %s", SignalNameOf(interrupt_signal));
	exit(128 + interrupt_signal);
}

/*
 * HandleSignals: act on every signal noted in the self-pipe.
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

			if (signo == SIGCHLD)
				ReapChildren();
			else if (supervising)
			{
				/*
				 * With --foreground, a signal from the terminal reached the
				 * command already: it shares our process group.
				 */
				if (opts.foreground && from_kernel)
					continue;
				Verbose("passing %s on to the command", SignalNameOf(signo));
				SignalCommand(signo);
			}
			else if (interrupt_signal == 0)
				interrupt_signal = signo;
		}
	}
	ReapChildren();
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
		Log("error", "poll failed: %s", strerror(errno));
		Die(EXIT_OSERR);
	}
	HandleSignals();
	return rc > 0 && nfds == 2 && fds[1].revents != 0;
}

/*
 * DeadlineMargin: how much earlier than the TTL says the local deadline
 * falls, for clocks that run at different rates and a signal that takes a
 * moment to act: a tenth of the TTL, at most 5 s plus a thousandth of it.
 */
double
DeadlineMargin(void)
{
	double		margin = ttl_secs / 10.0;
	double		cap = 5.0 + ttl_secs / 1000.0;

	return margin < cap ? margin : cap;
}

/*
 * StartCommand: fork and exec the command with DLOCK_NAME and DLOCK_TOKEN
 * in its environment.  False if it could not be started.
 *
 * The child restores what the command should inherit (signal dispositions,
 * SIGPIPE) and asks for SIGKILL when dlock-run dies, so that the command
 * never runs on without a supervisor that renews its lease.
 */
bool
StartCommand(void)
{
	sigset_t	old;
	pid_t		parent = getpid();
	pid_t		pid;
	size_t		i;

	if (setenv("DLOCK_NAME", opts.name, 1) != 0 ||
		setenv("DLOCK_TOKEN", lease.token, 1) != 0)
	{
		Log("error", "could not set the environment: %s", strerror(errno));
		return false;
	}
#if defined(__linux__) && defined(PR_SET_CHILD_SUBREAPER)
	(void) prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
#endif

	fflush(NULL);
	BlockSignals(true, &old);
	pid = fork();
	if (pid < 0)
	{
		BlockSignals(false, &old);
		Log("error", "could not start the command: %s", strerror(errno));
		return false;
	}
	if (pid == 0)
	{
		for (i = 0; i < lengthof(forwarded_signals); i++)
		{
			if (!ignored_at_start[forwarded_signals[i]])
				signal(forwarded_signals[i], SIG_DFL);
		}
		if (!ignored_at_start[SIGPIPE])
			signal(SIGPIPE, SIG_DFL);
		signal(SIGCHLD, SIG_DFL);
		if (!opts.foreground)
			(void) setpgid(0, 0);
#if defined(__linux__) && defined(PR_SET_PDEATHSIG)
		(void) prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
		if (getppid() != parent)
			_exit(128 + SIGKILL);
#endif
		BlockSignals(false, &old);
		execvp(opts.command[0], opts.command);
		Log("error", "could not execute \"%s\": %s", opts.command[0], strerror(errno));
		_exit(errno == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_EXEC);
	}
	(void) parent;

	/* both sides call setpgid, so that it is done before either goes on */
	if (!opts.foreground)
		(void) setpgid(pid, pid);
	child_pid = pid;
	child_running = true;
	supervising = true;
	BlockSignals(false, &old);
	Verbose("started the command (pid %d)", (int) pid);
	return true;
}

/*
 * StopCommand: give the command --signal now, and SIGKILL --kill-after
 * later (Supervise sends it).
 */
static void
StopCommand(void)
{
	SignalCommand(opts.lost_signal);
	if (kill_at < 0 && kill_secs > 0)
		kill_at = Now() + kill_secs;
}

/*
 * LeaseLost: the lease is gone (or may be); say so, and stop the command.
 */
static void
LeaseLost(const char *why)
{
	lease.held = false;
	lease.lost = true;
	lease.verify = false;
	ReapChildren();
	if (!CommandAlive())
	{
		Log("error", "lost the lease on \"%s\" (token %s): %s",
			opts.name, lease.token, why);
		return;
	}
	Log("error", "lost the lease on \"%s\" (token %s) while the command runs: %s; "
		"sending %s to the command", opts.name, lease.token, why,
		SignalNameOf(opts.lost_signal));
	StopCommand();
}

/*
 * CheckDeadline: past the lease's local deadline without a successful
 * renewal, the lease may have expired on the server: it counts as lost.
 */
static void
CheckDeadline(void)
{
	char		why[1024];

	if (!lease.held || Now() < lease.deadline)
		return;
	if (renew_secs <= 0)
		snprintf(why, sizeof(why), "its TTL ran out (renewal is off)");
	else if (lease.failures > 0)
		snprintf(why, sizeof(why),
				 "no renewal succeeded before its deadline (last error: %s)",
				 lease.last_error);
	else
		snprintf(why, sizeof(why), "no renewal succeeded before its deadline");
	LeaseLost(why);
}

/*
 * RenewFailed: a renewal (or a question about the lease) got no answer:
 * retry until the deadline, reconnecting (another host may be the primary
 * now).
 */
static void
RenewFailed(QueryOutcome outcome, char *errmsg)
{
	double		retry = renew_secs > 0 && renew_secs < RETRY_DELAY_MAX ?
		renew_secs : RETRY_DELAY_MAX;

	if (lease.failures == 0)
		Log("warning", "could not renew the lease on \"%s\": %s; retrying until its deadline",
			opts.name, errmsg ? errmsg : "no connection");
	lease.failures++;
	snprintf(lease.last_error, sizeof(lease.last_error), "%s",
			 errmsg ? errmsg : "no connection");
	free(errmsg);
	DropConnection();
	/* a stale connection: retry at once, then once every retry */
	if (lease.failures == 1 && outcome != QUERY_ERROR)
		lease.next_renew = Now();
	else
		lease.next_renew = Now() + retry;
	CheckDeadline();
}

/*
 * RenewOnce: one renewal attempt.  Success moves the deadline (counted from
 * when the renewal was sent); false from the server means the lease is
 * lost; an error or no answer is retried until the deadline.
 */
static void
RenewOnce(void)
{
	char	   *errmsg = NULL;
	double		sent;
	double		attempt_deadline;
	bool		renewed;
	QueryOutcome outcome = QUERY_BROKEN;

	attempt_deadline = Earliest(lease.deadline,
								Now() + (renew_secs > 1.0 ? renew_secs : 1.0));
	sent = Now();
	if (EnsureConnection(attempt_deadline, false, &errmsg))
	{
		sent = Now();
		outcome = QueryRenew(attempt_deadline, false, &renewed, &errmsg);
	}
	if (outcome != QUERY_OK)
	{
		RenewFailed(outcome, errmsg);
		return;
	}
	if (!renewed)
	{
		LeaseLost("the server says this token no longer holds it "
				  "(it expired, or was released or taken over)");
		return;
	}
	if (lease.failures > 0)
		Log("warning", "renewed the lease on \"%s\" again after %d failed attempts",
			opts.name, lease.failures);
	else if (lease.verify)
		Verbose("renewed the lease on \"%s\" after a stall", opts.name);
	lease.failures = 0;
	lease.verify = false;
	lease.deadline = sent + ttl_secs - DeadlineMargin();
	lease.next_renew = sent + renew_secs;
}

/*
 * VerifyOnce: with renewal off, after a stall, ask the server how much of
 * the lease is left, and take the deadline from its answer.
 */
static void
VerifyOnce(void)
{
	char	   *errmsg = NULL;
	double		sent;
	double		remaining = 0;
	double		attempt_deadline = Earliest(lease.deadline, Now() + 1.0);
	QueryOutcome outcome = QUERY_BROKEN;

	sent = Now();
	if (EnsureConnection(attempt_deadline, false, &errmsg))
	{
		sent = Now();
		outcome = QueryRemaining(attempt_deadline, &remaining, &errmsg);
	}
	if (outcome != QUERY_OK)
	{
		RenewFailed(outcome, errmsg);
		return;
	}
	if (remaining == 0)
	{
		LeaseLost("the server says this token no longer holds it "
				  "(it expired, or was released or taken over)");
		return;
	}
	if (remaining > 0)
		lease.deadline = Earliest(lease.deadline, sent + remaining - DeadlineMargin());
	lease.failures = 0;
	lease.verify = false;
	Verbose("confirmed the lease on \"%s\" after a stall", opts.name);
	CheckDeadline();
}

/*
 * StallCheck: a wake-up much later than planned, or a wall clock that
 * moved differently from Now(), means dlock-run was stopped or frozen.
 * Check the deadline first; if the lease may still be held, ask the
 * server before trusting it.
 */
static void
StallCheck(void)
{
	double		now = Now();
	double		wall = WallNow();
	double		late = planned >= 0 ? now - planned : 0;
	double		jump = last_boot >= 0 ? (wall - last_wall) - (now - last_boot) : 0;

	last_boot = now;
	last_wall = wall;
	planned = NO_DEADLINE;
	if (late <= STALL_SLACK && fabs(jump) <= STALL_SLACK)
		return;
	CheckDeadline();
	if (!lease.held)
		return;
	Log("warning", "dlock-run was stalled for %.1f s; confirming the lease on \"%s\" with the server",
		late > fabs(jump) ? late : fabs(jump), opts.name);
	lease.verify = true;
	lease.next_renew = now;
}

/*
 * Drain: the command ended, but processes are left in its group.  Give them
 * a moment (they may be dying of the same signal), then stop them: they
 * must not run on without the lease.
 */
static void
Drain(double now)
{
	static double drain_since = NO_DEADLINE;
	static bool drain_signalled = false;

	if (drain_since < 0)
		drain_since = now;
	if (!drain_signalled && now >= drain_since + DRAIN_GRACE)
	{
		drain_signalled = true;
		Log("warning", "the command left processes running in its process group; "
			"sending them %s", SignalNameOf(opts.lost_signal));
		StopCommand();
	}
}

/*
 * Supervise: keep the lease while the command (and whatever it left in its
 * process group) runs.  Each turn looks for a stall and at the deadline
 * before anything else.
 */
void
Supervise(void)
{
	for (;;)
	{
		double		now;
		double		wake = NO_DEADLINE;

		StallCheck();
		CheckDeadline();
		ReapChildren();
		if (!CommandAlive())
			break;
		now = Now();
		if (!child_running)
			Drain(now);
		if (kill_at >= 0 && !killed && now >= kill_at)
		{
			Log("warning", "the command is still running %g s after %s; sending SIGKILL",
				kill_secs, SignalNameOf(opts.lost_signal));
			SignalCommand(SIGKILL);
			killed = true;
		}
		if (lease.held && now >= lease.next_renew && (renew_secs > 0 || lease.verify))
		{
			if (renew_secs > 0)
				RenewOnce();
			else
				VerifyOnce();
			continue;
		}

		if (lease.held)
			wake = lease.deadline;
		if (lease.held && (renew_secs > 0 || lease.verify))
			wake = Earliest(wake, lease.next_renew);
		if (kill_at >= 0 && !killed)
			wake = Earliest(wake, kill_at);
		if (!child_running || killed)
			wake = Earliest(wake, now + DRAIN_POLL);
		wake = Earliest(wake, now + TICK);
		planned = wake;
		WaitEvent(-1, 0, wake);
	}
	supervising = false;
}
