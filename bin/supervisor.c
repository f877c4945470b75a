/*-------------------------------------------------------------------------
 *
 * supervisor.c
 *		the command dlock-run runs, its signals, and the lease's deadline
 *
 * While the command runs, Supervise keeps the lease: it renews it every
 * --renew-every, and when its deadline (see DeadlineMargin) passes without
 * a successful renewal, or the server says the token no longer holds it,
 * every descendant of dlock-run (the command and everything it started, in
 * any process group) gets --signal and, --kill-after later, SIGKILL; the
 * lease is released, and dlock-run exits, only when none is left.  The
 * same when the command exits and leaves processes running.  Signals
 * dlock-run receives are passed on to the command's process group.
 *
 * Ctrl-Z (SIGTSTP, and SIGTTIN, SIGTTOU) reaches dlock-run's process group
 * only; dlock-run stops every descendant with SIGSTOP, then itself, as a
 * shell or sudo does.  When it is continued, it confirms the lease with the
 * server before it continues them; if the lease was lost meanwhile, they
 * get --signal (and SIGCONT, so that they can act on it) instead.
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
#include <math.h>
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

Lease		lease;

/* durations in seconds, as the server read them */
double		ttl_secs;
double		wait_secs;
double		renew_secs;
double		kill_secs;

/* the command: set up by StartCommand, updated by ReapChildren */
int			child_status = 0;
static pid_t child_pid = 0;
static bool child_running = false;
static bool supervising = false;	/* between fork and the command's end */

/* what the command left running when it exited (for the exit message) */
char		left_behind[512];

/* those of them dlock-run may not signal (another user), waited for */
char		out_of_reach[512];

/* when the descendants get SIGKILL, after they got --signal */
static double kill_at = NO_DEADLINE;
static bool killed = false;

/* the command exited, and what it left running got --signal */
static bool drained = false;

/* Ctrl-Z: dlock-run stopped the descendants, and was continued since */
static bool job_stopped = false;
static bool resumed = false;

/* stall detection: when the loop last looked, and when it planned to */
static double last_boot = NO_DEADLINE;
static double last_wall = 0;
static double planned = NO_DEADLINE;

static void ReapChildren(void);

/*
 * SignalCommand: pass signo on to the command (its whole process group
 * unless --foreground).
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
 * StopEverything: signo to every descendant, then SIGCONT, so that a
 * stopped one acts on it (as timeout(1) does).
 */
static void
StopEverything(int signo)
{
	(void) SignalDescendants(signo);
	if (signo != SIGKILL && signo != SIGCONT)
		(void) SignalDescendants(SIGCONT);
	job_stopped = false;
}

/*
 * CommandAlive: is the command, or anything it started, still running?
 */
static bool
CommandAlive(void)
{
	if (child_running)
		return true;
	if (child_pid <= 0)
		return false;
	return CountDescendants() > 0;
}

/*
 * ReachableAlive: is any descendant that dlock-run may signal running?
 * (One running as another user cannot be stopped, only waited for.)
 */
static bool
ReachableAlive(void)
{
	int			n;

	ReapChildren();
	n = CountDescendants();
	return n > CountUnreachable();
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
 * Die: exit after a local failure, never leaving the command behind: every
 * descendant gets the lease-lost signal, then SIGKILL after --kill-after
 * (or DIE_GRACE), and the command is reaped.  Uses no libpq and no
 * self-pipe.
 */
void
Die(int code)
{
	if (supervising)
	{
		double		until = Now() + (kill_secs > 0 ? kill_secs : DIE_GRACE);
		struct timespec pause = {0, 50 * 1000 * 1000};

		supervising = false;
		StopEverything(opts.lost_signal);
		while (CommandAlive() && Now() < until)
		{
			nanosleep(&pause, NULL);
			ReapChildren();
		}
		while (ReachableAlive())
		{
			(void) SignalDescendants(SIGKILL);
			nanosleep(&pause, NULL);
			ReapChildren();
		}
	}
	exit(code);
}

/*
 * FatalError: the fatal hook (events.c): say what failed, and Die.
 */
void
FatalError(const char *msg)
{
	Log("error", "%s", msg);
	Die(EXIT_OSERR);
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
 * SuspendJob: Ctrl-Z (or SIGTTIN, SIGTTOU): stop every descendant, then
 * dlock-run itself.  Once continued, the lease is confirmed with the server
 * (Supervise) before the descendants are continued.
 */
static void
SuspendJob(int signo)
{
	int			n = SignalDescendants(SIGSTOP);

	job_stopped = true;
	Verbose("%s: stopped %d process%s of the command; stopping dlock-run",
			SignalNameOf(signo), n, n == 1 ? "" : "es");
	WatchdogSuspend(true);
	(void) raise(SIGSTOP);
	WatchdogSuspend(false);

	/*
	 * Continued.  With --foreground the shell's SIGCONT reached the
	 * command's group too: stop it again at once.  Supervise asks the
	 * server before anything goes on.
	 */
	(void) SignalDescendants(SIGSTOP);
	resumed = true;
}

/*
 * OnSignal: the signal hook (events.c) while the command runs: reap on
 * SIGCHLD, stop the job on the stop signals, and pass the others on.
 */
static bool
OnSignal(int signo, bool from_kernel)
{
	if (signo == SIGCHLD)
	{
		ReapChildren();
		/* all has ended: a renewal in progress (maybe black-holed) is moot */
		if (supervising && !child_running && CountDescendants() == 0)
			abandon_queries = true;
		return true;
	}
	if (!supervising)
		return false;
	if (IsStopSignal(signo))
	{
		SuspendJob(signo);
		return true;
	}

	/*
	 * With --foreground, a signal from the terminal reached the command
	 * already: it shares our process group.
	 */
	if (opts.foreground && from_kernel)
		return true;
	Verbose("passing %s on to the command", SignalNameOf(signo));
	SignalCommand(signo);
	return true;
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
 * PublishDeadline: tell the watchdog (watchdog.c) the lease's deadline; it
 * acts a quarter of the margin after it if dlock-run has not.
 */
void
PublishDeadline(void)
{
	WatchdogArm(lease.deadline, DeadlineMargin() / 4.0, opts.lost_signal, kill_secs);
}

/*
 * PublishKill: dlock-run has sent --signal (StopCommand); what is left for
 * the watchdog is the SIGKILL at kill_at (and, while the lease is held,
 * the deadline), if dlock-run stalls before it.
 */
void
PublishKill(void)
{
	double		due = kill_at >= 0 && !killed ? kill_at : NO_DEADLINE;

	if (lease.held)
		due = due == NO_DEADLINE ? lease.deadline : Earliest(due, lease.deadline);
	WatchdogArm(due, DeadlineMargin() / 4.0, SIGKILL, 0);
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

	if (setenv("DLOCK_NAME", opts.name, 1) != 0 ||
		setenv("DLOCK_TOKEN", lease.token, 1) != 0)
	{
		Log("error", "could not set the environment: %s", strerror(errno));
		return false;
	}
#if defined(__linux__) && defined(PR_SET_CHILD_SUBREAPER)
	(void) prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
#endif

	SetSignalHook(OnSignal);
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
		ResetSignalsForExec();
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
 * StopCommand: give every descendant --signal now (and SIGCONT), and
 * SIGKILL --kill-after later (Supervise sends it).
 */
static void
StopCommand(void)
{
	StopEverything(opts.lost_signal);
	if (kill_at < 0 && kill_secs > 0)
		kill_at = Now() + kill_secs;
	PublishKill();
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
	Log("error", "lost the lease on \"%s\" (token %s) while the command %s: %s; "
		"sending %s to the command and every process it started",
		opts.name, lease.token, job_stopped ? "was stopped" : "runs", why,
		SignalNameOf(opts.lost_signal));
	StopCommand();
}

/*
 * HintEscapes: what dlock-run cannot stop, said where work was stopped.
 */
void
HintEscapes(void)
{
	Hint("Work the command handed to another service (systemd-run, docker, ssh, at), "
		 "and processes that run as another user (sudo, su, setuid programs), "
		 "are out of dlock-run's reach and were not stopped.");
}

/*
 * GiveUpUnreachable: the lease is lost, and all that still runs of the
 * command runs as another user: dlock-run cannot stop it, only say so.
 */
static void
GiveUpUnreachable(void)
{
	char		names[512];

	DescribeDescendants(0, true, names, sizeof(names));
	Log("error", "lost the lease on \"%s\" (token %s), and could not stop %s: "
		"it runs as another user, out of dlock-run's reach, and runs on without the lease",
		opts.name, lease.token, names);
	HintEscapes();
	exit(opts.lost_exit_code);
}

/*
 * NoteUnreachable: after the command exited, say once which processes it
 * left that dlock-run may not signal; it keeps the lease until they end.
 */
static void
NoteUnreachable(void)
{
	if (out_of_reach[0] != '\0' || CountUnreachable() == 0)
		return;
	DescribeDescendants(0, true, out_of_reach, sizeof(out_of_reach));
	if (out_of_reach[0] == '\0')
		return;
	Log("warning", "the command left %s running, which dlock-run may not signal "
		"(it runs as another user); renewing the lease on \"%s\" until it ends",
		out_of_reach, opts.name);
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
		outcome = QueryRenew(opts.name, lease.token, opts.ttl, attempt_deadline, false,
							 &renewed, &errmsg);
	}
	if (outcome != QUERY_OK && abandon_queries)
	{
		Verbose("the command has ended: abandoned the renewal in progress");
		free(errmsg);
		DropConnection();
		return;
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
	PublishDeadline();
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
		outcome = QueryRemaining(opts.name, lease.token, attempt_deadline,
								 &remaining, &errmsg);
	}
	if (outcome != QUERY_OK && abandon_queries)
	{
		free(errmsg);
		DropConnection();
		return;
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
	PublishDeadline();
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
 * Drain: the command ended, but processes it started run on (in any
 * process group).  Give them a moment (they may be dying of the same
 * signal), then stop them: they must not run on without the lease.
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
		drained = true;
		DescribeDescendants(child_pid, false, left_behind, sizeof(left_behind));
		if (left_behind[0] == '\0')
			return;
		Log("warning", "the command exited and left processes running: %s; sending them %s%s",
			left_behind, SignalNameOf(opts.lost_signal),
			kill_secs > 0 ? ", then SIGKILL after --kill-after" : "");
		StopCommand();
	}
}

/*
 * Resumed: dlock-run was continued after Ctrl-Z.  The descendants stay
 * stopped until the server confirms the lease (ContinueJob); if the lease
 * is lost already, they get --signal and SIGCONT.
 */
static void
Resumed(double now)
{
	resumed = false;
	if (!lease.held)
	{
		if (CommandAlive())
			StopCommand();
		return;
	}
	Log("warning", "continued after a stop; confirming the lease on \"%s\" with the server "
		"before the command goes on", opts.name);
	lease.verify = true;
	lease.next_renew = now;
}

/*
 * ContinueJob: the lease is confirmed: continue what SuspendJob stopped.
 */
static void
ContinueJob(void)
{
	int			n = SignalDescendants(SIGCONT);

	job_stopped = false;
	Verbose("the lease on \"%s\" is confirmed; continued %d process%s of the command",
			opts.name, n, n == 1 ? "" : "es");
}

/*
 * KillLeftovers: SIGKILL to every descendant once --kill-after is up, and
 * again to any that turns up later.
 */
static void
KillLeftovers(double now)
{
	if (kill_at < 0 || now < kill_at)
		return;
	if (!killed)
	{
		char		names[512];

		DescribeDescendants(0, false, names, sizeof(names));
		Log("warning", "processes of the command still run %g s after %s: %s; sending SIGKILL",
			kill_secs, SignalNameOf(opts.lost_signal), names);
	}
	(void) SignalDescendants(SIGKILL);
	killed = true;
	PublishKill();
}

/*
 * Supervise: keep the lease while the command (and whatever it started)
 * runs.  Each turn looks for a stall and at the deadline before anything
 * else.
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
		if (lease.lost && !ReachableAlive())
			GiveUpUnreachable();
		now = Now();
		if (resumed)
			Resumed(now);
		if (job_stopped && lease.held && !lease.verify)
			ContinueJob();
		if (!child_running)
			Drain(now);
		if (!child_running && lease.held && drained)
			NoteUnreachable();
		KillLeftovers(now);
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
		if (resumed)
			wake = now;
		if (!child_running || killed)
			wake = Earliest(wake, now + DRAIN_POLL);
		wake = Earliest(wake, now + TICK);
		planned = wake;
		WaitEvent(-1, 0, wake);
	}
	supervising = false;
	abandon_queries = false;
	/* the command has ended: nothing left to watch */
	WatchdogArm(NO_DEADLINE, 0, SIGKILL, 0);
}
