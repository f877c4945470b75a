/*-------------------------------------------------------------------------
 *
 * dlock-run.h
 *		declarations shared by the files of dlock-run
 *
 * dlock-run takes the lease on a lock name with dlock_acquire(), runs the
 * command as its child with DLOCK_NAME and DLOCK_TOKEN in the environment,
 * renews the lease while the command runs, and releases it when the command
 * has ended.  Its one promise: the command never runs on, unreported, past
 * a lease dlock-run no longer holds.  It fails closed: when it cannot be
 * sure the lease is held, the command is stopped and the exit status is 70.
 *
 * Files, each using only those listed above it (no file calls one below it):
 *	 events.c		the leaf: clocks, the self-pipe and signal handlers, the one
 *					place that waits (WaitEvent), signal names; what the others
 *					want done on a signal or a fatal error they register as hooks
 *	 output.c		messages on stderr that never block or end dlock-run
 *	 options.c		the command line, --help
 *	 descendants.c	every process the command started, found in /proc and
 *					signalled through pidfds
 *	 watchdog.c		a process of its own that stops the command at the
 *					deadline when dlock-run is stopped alone or stuck
 *	 conn.c			the connection, queries with deadlines, dlock's statements
 *	 supervisor.c	the command (child, descendants, signals, Ctrl-Z) and the
 *					lease's deadline while it runs
 *	 main.c			the run from start to end: acquire, run, release, exit status
 *
 * Protocol (the one thing to keep in mind when changing these files):
 *
 * - Processes.  libpq is used in this process only, on the main thread,
 *   except that each connection attempt runs in a thread of its own
 *   (conn.c: libpq's host name lookup is synchronous and must not hold up
 *   a deadline); that thread touches nothing but its own attempt and has
 *   every signal blocked.  A descendant that runs as another user cannot
 *   be signalled: it is waited for, and after a loss reported as out of
 *   reach (descendants.c, supervisor.c).  The command is forked
 *   and exec'd at once; unless --foreground, it leads a process group of its
 *   own, and a signal dlock-run passes on goes to that whole group.  On
 *   Linux dlock-run is a child subreaper, so everything the command starts
 *   stays dlock-run's descendant, in whatever process group or session; the
 *   lease-lost signal, SIGKILL and the stop and continue of Ctrl-Z go to
 *   every descendant (descendants.c), and dlock-run does not release the
 *   lease or exit while any descendant runs.  The command gets SIGKILL if
 *   dlock-run itself dies (PR_SET_PDEATHSIG); its descendants do not.
 *   dlock-run's watchdog (watchdog.c), forked at start before any
 *   connection, is dlock-run's child but not the command's: descendants.c
 *   never counts or signals it, and it stops the command at the deadline
 *   only when dlock-run has not.
 *
 * - Signals.  A handler writes each signal number into a non-blocking
 *   self-pipe; the only place that waits (WaitEvent) polls that pipe with
 *   the server socket and a deadline, and hands the signals that arrived to
 *   the hook the supervisor registered.  SIGPIPE is ignored: a write to a
 *   closed pipe fails instead.  SIGTSTP, SIGTTIN and SIGTTOU stop every
 *   descendant, then dlock-run; when dlock-run is continued, the lease is
 *   confirmed with the server before the descendants are continued.
 *
 * - Time.  Local deadlines run on CLOCK_BOOTTIME, which keeps counting
 *   while the machine is suspended.  The lease's local deadline is the
 *   moment the last successful acquire or renewal was *sent*, plus the TTL,
 *   minus a safety margin (DeadlineMargin): the server read its clock later
 *   than that, so the lease on the server does not expire before the local
 *   deadline.  Past the deadline without a successful renewal, the lease
 *   counts as lost and the command is stopped.  After a stall (a gap in the
 *   supervisor's loop, or the wall clock jumping against CLOCK_BOOTTIME) the
 *   deadline is checked first, and then the server is asked before the lease
 *   is trusted again.
 *
 * - Queries.  Every statement is sent with PQsendQueryParams in autocommit
 *   mode, every value as a parameter (the only text put into a statement is
 *   the --schema name, quoted by PQescapeIdentifier), and waited for
 *   through WaitEvent with a deadline, so that a hung server never holds up
 *   signal forwarding or the lease-lost decision.  A broken connection is
 *   reopened with the same connection options, so a multi-host connection
 *   string with target_session_attrs=read-write follows a failover.
 *
 * Copyright (c) 2026, the dlock developers
 *
 *-------------------------------------------------------------------------
 */
#ifndef DLOCK_RUN_H
#define DLOCK_RUN_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "libpq-fe.h"

#ifndef DLOCK_VERSION
#define DLOCK_VERSION "unknown"
#endif

/* Exit statuses of dlock-run itself (sysexits.h numbers, spelled out) */
#define EXIT_USAGE			64	/* EX_USAGE: bad option or argument */
#define EXIT_UNAVAILABLE	69	/* EX_UNAVAILABLE: no server, no dlock */
#define EXIT_LOST_DEFAULT	70	/* EX_SOFTWARE: lease lost (--lost-exit-code) */
#define EXIT_OSERR			71	/* EX_OSERR: fork, pipe or poll failed */
#define EXIT_BUSY_DEFAULT	75	/* EX_TEMPFAIL: busy (-E) */
#define EXIT_CANNOT_EXEC	126 /* as in POSIX shells */
#define EXIT_NOT_FOUND		127

#define DEFAULT_KILL_AFTER	"10s"

/* how long past --wait to wait for the server to answer an acquire */
#define ACQUIRE_SLACK		30.0
/* the longest pause between two failed renewal attempts */
#define RETRY_DELAY_MAX		1.0
/* how long to wait for the answer to a query cancel */
#define CANCEL_WAIT			5.0
/* how long a release may take after the command has ended, at least */
#define RELEASE_WAIT		5.0
/* how long what the command left in its process group may take to end */
#define DRAIN_GRACE			0.5
/* how often to look whether the command's process group has emptied */
#define DRAIN_POLL			0.05
/* how long the command may take to end when dlock-run must give up */
#define DIE_GRACE			10.0
/* the supervisor wakes at least this often, so that it can see a stall */
#define TICK				1.0
/* a gap this much longer than planned (or a wall clock jump) is a stall */
#define STALL_SLACK			1.0

#define NO_DEADLINE			(-1.0)

#define lengthof(array) (sizeof(array) / sizeof((array)[0]))

typedef enum QueryOutcome
{
	QUERY_OK,					/* a result with one row */
	QUERY_ERROR,				/* the server reported an error */
	QUERY_BROKEN,				/* the connection is gone */
	QUERY_TIMEOUT,				/* no answer by the deadline */
	QUERY_INTERRUPTED			/* a signal interrupted dlock-run */
} QueryOutcome;

typedef struct Options
{
	const char *dbname;			/* -d: a database name or connection string */
	const char *host;
	const char *port;
	const char *user;
	const char *name;
	const char *ttl;			/* DURATION options, as interval text */
	const char *wait;
	const char *min_hold;		/* NULL: none (dlock 1.2's min_hold) */
	const char *renew_every;
	const char *kill_after;
	const char *owner;
	const char *schema;
	int			conflict_exit_code;
	int			lost_exit_code;
	int			lost_signal;
	bool		foreground;
	bool		verbose;
	char	  **command;
} Options;

typedef struct Lease
{
	char		token[32];		/* as the server printed it */
	bool		held;			/* as far as dlock-run knows */
	bool		lost;			/* lost (or maybe lost) before the command ended */
	bool		verify;			/* ask the server before trusting the lease */
	double		deadline;		/* held at least until then (Now() clock) */
	double		next_renew;		/* when to renew next (Now() clock) */
	int			failures;		/* failed renewal attempts in a row */
	char		last_error[512];	/* why the last one failed */
} Lease;

/* events.c: the leaf */
typedef bool (*SignalHook) (int signo, bool from_kernel);
typedef void (*FatalHook) (const char *msg);
extern const int forwarded_signals[];
extern const size_t n_forwarded_signals;
extern int	interrupt_signal;
extern bool ignored_at_start[NSIG];
extern double Now(void);
extern double WallNow(void);
extern double Earliest(double a, double b);
extern const char *SignalNameOf(int signo);
extern int	ParseSignal(const char *arg);
extern bool IsStopSignal(int signo);
extern void SetSignalHook(SignalHook hook);
extern void SetFatalHook(FatalHook hook);
extern void Fatal(const char *msg) __attribute__((noreturn));
extern bool SetUpSignals(void);
extern void BlockSignals(bool block, sigset_t *old);
extern void ResetSignalsForExec(void);
extern bool WaitEvent(int sock, short events, double deadline);

/* output.c */
extern const char *progname;
extern bool verbose;
extern void ProtectStandardFds(void);
extern void Log(const char *level, const char *fmt,...)
			__attribute__((format(printf, 2, 3)));
extern void Verbose(const char *fmt,...)
			__attribute__((format(printf, 1, 2)));
extern void Hint(const char *fmt,...)
			__attribute__((format(printf, 1, 2)));
extern void UsageError(const char *fmt,...)
			__attribute__((format(printf, 1, 2), noreturn));
extern char *CopyMessage(const char *msg);

/* options.c */
extern Options opts;
extern void ParseOptions(int argc, char **argv);

/* descendants.c */
extern void ScanDescendants(void);
extern int	SignalDescendants(int signo);
extern int	CountDescendants(void);
extern int	CountUnreachable(void);
extern void RaiseFdLimit(void);
extern void SetDescendantRoot(pid_t root, pid_t except);
extern void ExcludeEarlierChildren(void);
extern void DescribeDescendants(pid_t except, bool only_unreachable, char *buf,
								size_t len);

/* watchdog.c */
extern bool StartWatchdog(void);
extern void WatchdogArm(double deadline, double slack, int signo, double kill_after);
extern void WatchdogSuspend(bool suspended);

/* conn.c */
extern PGconn *conn;
extern bool abandon_queries;
extern bool EnsureConnection(double deadline, bool interruptible, char **errmsg);
extern void DropConnection(void);
extern void BuildQueries(void);
extern const char *SqlState(const PGresult *res);
extern QueryOutcome QueryDuration(const char *text, double *secs, PGresult **res,
								  char **errmsg);
extern QueryOutcome QueryAcquire(const char *name, const char *ttl, const char *wait,
								 const char *owner, double deadline, PGresult **res,
								 char **errmsg);
extern char *QueryEditionSchemas(double deadline);
extern QueryOutcome QueryHolder(const char *name, double deadline, PGresult **res,
								char **errmsg);
extern QueryOutcome QueryRenew(const char *name, const char *token, const char *ttl,
							   double deadline, bool interruptible, bool *renewed,
							   char **errmsg);
extern QueryOutcome QueryRelease(const char *name, const char *token,
								 double deadline, bool interruptible, bool *released,
								 char **errmsg);
extern QueryOutcome QueryRemaining(const char *name, const char *token,
								   double deadline, double *remaining, char **errmsg);

/* supervisor.c */
extern Lease lease;
extern int	child_status;
extern double ttl_secs;
extern double wait_secs;
extern double renew_secs;
extern double kill_secs;
extern char left_behind[512];
extern char out_of_reach[512];
extern void ExitInterrupted(void) __attribute__((noreturn));
extern void Die(int code) __attribute__((noreturn));
extern void FatalError(const char *msg) __attribute__((noreturn));
extern void HintEscapes(void);
extern double DeadlineMargin(void);
extern void PublishDeadline(void);
extern void PublishKill(void);
extern bool StartCommand(void);
extern void Supervise(void);

#endif							/* DLOCK_RUN_H */
