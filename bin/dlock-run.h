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
 * Files:
 *	 main.c			the run from start to end: acquire, run, release, exit status
 *	 options.c		the command line, --help
 *	 conn.c			the connection, queries with deadlines, dlock's statements
 *	 supervisor.c	the command (child, process group, signals) and the
 *					lease's deadline while it runs
 *	 output.c		messages on stderr that never block or end dlock-run
 *
 * Protocol (the one thing to keep in mind when changing these files):
 *
 * - Processes.  libpq is used in this process only.  The command is forked
 *   and exec'd at once; unless --foreground, it leads a process group of its
 *   own, and every signal dlock-run sends goes to that whole group.  On Linux
 *   dlock-run is a child subreaper, and the command gets SIGKILL if
 *   dlock-run itself dies (PR_SET_PDEATHSIG).  dlock-run does not exit while
 *   anything is left in the command's process group.
 *
 * - Signals.  A handler writes each signal number into a non-blocking
 *   self-pipe; the only place that waits (WaitEvent) polls that pipe with
 *   the server socket and a deadline, and handles the signals that arrived.
 *   SIGPIPE is ignored: a write to a closed pipe fails instead.
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

/* options.c */
extern Options opts;
extern const char *progname;
extern void ParseOptions(int argc, char **argv);
extern const char *SignalNameOf(int signo);

/* output.c */
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

/* conn.c */
extern PGconn *conn;
extern double ttl_secs;
extern double wait_secs;
extern double renew_secs;
extern double kill_secs;
extern double Now(void);
extern double WallNow(void);
extern double Earliest(double a, double b);
extern bool EnsureConnection(double deadline, bool interruptible, char **errmsg);
extern void DropConnection(void);
extern void BuildQueries(void);
extern double ReadDuration(const char *option, const char *text);
extern const char *SqlState(const PGresult *res);
extern QueryOutcome QueryAcquire(double deadline, PGresult **res, char **errmsg);
extern QueryOutcome QueryRenew(double deadline, bool interruptible, bool *renewed,
							   char **errmsg);
extern QueryOutcome QueryRelease(double deadline, bool interruptible, bool *released,
								 char **errmsg);
extern QueryOutcome QueryRemaining(double deadline, double *remaining, char **errmsg);

/* supervisor.c */
extern Lease lease;
extern int	interrupt_signal;
extern int	child_status;
extern void SetUpSignals(void);
extern bool WaitEvent(int sock, short events, double deadline);
extern void ExitInterrupted(void) __attribute__((noreturn));
extern void Die(int code) __attribute__((noreturn));
extern double DeadlineMargin(void);
extern bool StartCommand(void);
extern void Supervise(void);

#endif							/* DLOCK_RUN_H */
