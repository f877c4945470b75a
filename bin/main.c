/*-------------------------------------------------------------------------
 *
 * main.c
 *		dlock-run: flock(1) for a whole fleet; the run from start to end
 *
 * Connect, read the durations, acquire the lease (or exit busy), confirm it
 * if the wait used part of it, run and supervise the command, release, and
 * exit with the command's status only if the lease was held throughout.
 * See dlock-run.h for the protocol and the map of the files.
 *
 * Copyright (c) 2026, the dlock developers
 *
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dlock-run.h"

/* when the acquire that got the lease was sent */
static double acquire_sent;

/* the owner sent to the server: "<--owner>:<pid>:<random>", or NULL */
static char *owner_id = NULL;

/*
 * MakeOwnerId: the owner string sent to the server for --owner, unique to
 * this run ("<owner>:<pid>:<12 hex digits>", as the Python client does), so
 * that two runs with the same --owner never share a lease and its token
 * through dlock's owner renewal; dlock_leases.owner still starts with the
 * label.
 */
static void
MakeOwnerId(void)
{
	unsigned char rnd[6];
	char		hex[2 * sizeof(rnd) + 1];
	size_t		len;
	size_t		i;
	int			fd;

	if (opts.owner == NULL)
		return;
	/* the server takes 255 bytes; ":PID:" and the digits take at most 21 */
	if (strlen(opts.owner) > 234)
		UsageError("invalid value for option --owner: at most 234 bytes");
	fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	if (fd < 0 || read(fd, rnd, sizeof(rnd)) != (ssize_t) sizeof(rnd))
	{
		struct timespec ts;

		/* no /dev/urandom: the clock still tells two runs apart */
		clock_gettime(CLOCK_REALTIME, &ts);
		for (i = 0; i < sizeof(rnd); i++)
			rnd[i] = (unsigned char) ((ts.tv_nsec >> (8 * (i % 4))) ^ (ts.tv_sec >> i));
	}
	if (fd >= 0)
		close(fd);
	for (i = 0; i < sizeof(rnd); i++)
		snprintf(hex + 2 * i, 3, "%02x", rnd[i]);
	len = strlen(opts.owner) + 32;
	owner_id = malloc(len);
	if (owner_id == NULL)
		Fatal("out of memory");
	snprintf(owner_id, len, "%s:%d:%s", opts.owner, (int) getpid(), hex);
}

/*
 * HintNotFound: dlock's functions were not where dlock-run called them:
 * name the schemas that have dlock (by its dlock_edition() function, in
 * either edition), or say how to install it.
 */
static void
HintNotFound(void)
{
	char	   *schemas = QueryEditionSchemas(Now() + CANCEL_WAIT);

	if (schemas != NULL)
		Hint("dlock is installed in schema %s, which dlock-run did not look in: use --schema.",
			 schemas);
	else
		Hint("Is dlock installed in this database? Install the C edition (CREATE EXTENSION dlock) "
			 "or, on a managed service, the SQL edition (docs/editions.md). "
			 "If it is in a schema outside search_path, use --schema.");
	free(schemas);
}

/*
 * AcquireFailed: the acquire raised an error; exit with the right status
 * and say why, with a hint where one helps.
 */
static void
AcquireFailed(QueryOutcome outcome, const char *sqlstate, const char *errmsg)
{
	if (outcome == QUERY_INTERRUPTED || interrupt_signal != 0)
		ExitInterrupted();
	if (outcome == QUERY_ERROR &&
		(strcmp(sqlstate, "55P03") == 0 || strcmp(sqlstate, "57014") == 0))
	{
		/* lock_timeout or statement_timeout ended the wait: still busy */
		Verbose("lock \"%s\" is busy: %s", opts.name, errmsg);
		exit(opts.conflict_exit_code);
	}
	/* the server rejected an argument: a name or duration out of range */
	if (outcome == QUERY_ERROR && strncmp(sqlstate, "22", 2) == 0)
		UsageError("could not acquire the lease on \"%s\": %s", opts.name, errmsg);
	Log("error", "could not acquire the lease on \"%s\": %s", opts.name, errmsg);
	if (strcmp(sqlstate, "42883") == 0)
		HintNotFound();
	else if (strcmp(sqlstate, "25006") == 0)
		Hint("This server is a standby or read-only; "
			 "connect to the primary (target_session_attrs=read-write).");
	exit(EXIT_UNAVAILABLE);
}

/*
 * SayBusy: with --verbose (busy is quiet otherwise, as with flock -n), say
 * who holds the lease (the role, and the owner label if any) and until
 * when, as far as dlock_leases shows this role; just that it is busy if it
 * cannot (no privilege on the view, the lease released meanwhile).
 */
static void
SayBusy(void)
{
	PGresult   *res = NULL;
	char	   *errmsg = NULL;
	QueryOutcome outcome;

	if (!opts.verbose)
		return;
	outcome = QueryHolder(opts.name, Now() + CANCEL_WAIT, &res, &errmsg);
	if (outcome != QUERY_OK || PQgetisnull(res, 0, 2))
		Verbose("lock \"%s\" is busy", opts.name);
	else
	{
		const char *role = PQgetisnull(res, 0, 0) ? NULL : PQgetvalue(res, 0, 0);
		const char *owner = PQgetisnull(res, 0, 1) ? NULL : PQgetvalue(res, 0, 1);

		Verbose("lock \"%s\" is busy: held by %s%s%s%s%s until %s (%.1f s from now)",
			opts.name, role ? "role " : "", role ? role : "an unknown role",
			owner ? " (owner \"" : "", owner ? owner : "", owner ? "\")" : "",
			PQgetvalue(res, 0, 2), strtod(PQgetvalue(res, 0, 3), NULL));
	}
	if (res != NULL)
		PQclear(res);
	free(errmsg);
}

/*
 * Acquire: take the lease, or exit (busy, error, interrupted).
 */
static void
Acquire(void)
{
	PGresult   *res;
	char	   *errmsg;
	double		sent;
	QueryOutcome outcome;

	sent = Now();
	outcome = QueryAcquire(opts.name, opts.ttl, opts.wait, owner_id,
						   sent + wait_secs + ACQUIRE_SLACK, &res, &errmsg);
	if (outcome != QUERY_OK)
		AcquireFailed(outcome, SqlState(res), errmsg);
	if (PQgetisnull(res, 0, 0))
	{
		PQclear(res);
		if (interrupt_signal != 0)
			ExitInterrupted();
		SayBusy();
		exit(opts.conflict_exit_code);
	}
	acquire_sent = sent;
	snprintf(lease.token, sizeof(lease.token), "%s", PQgetvalue(res, 0, 0));
	PQclear(res);
	lease.held = true;
	lease.deadline = sent + ttl_secs - DeadlineMargin();
	lease.next_renew = sent + renew_secs;
	Verbose("acquired the lease on \"%s\" with token %s", opts.name, lease.token);
}

/*
 * Release: give the lease back, trying until deadline.  Sets *released to
 * what the server said; false if it could not be asked.  If
 * interruptible, a signal gives up the attempt (the lease then expires on
 * its own).
 */
static bool
Release(double deadline, bool interruptible, bool *released)
{
	char	   *errmsg = NULL;
	QueryOutcome outcome;
	double		retry = renew_secs > 0 && renew_secs < RETRY_DELAY_MAX ?
		renew_secs : RETRY_DELAY_MAX;

	for (;;)
	{
		outcome = QUERY_BROKEN;
		if (EnsureConnection(deadline, interruptible, &errmsg))
			outcome = QueryRelease(opts.name, lease.token, deadline, interruptible,
								   released, &errmsg);
		if (outcome == QUERY_OK)
		{
			if (*released)
				Verbose("released the lease on \"%s\" (token %s)", opts.name, lease.token);
			return true;
		}
		DropConnection();
		if ((interruptible && interrupt_signal != 0) || Now() + retry >= deadline)
			break;
		free(errmsg);
		errmsg = NULL;
		WaitEvent(-1, 0, Now() + retry);
	}
	Log("warning", "could not release the lease on \"%s\" (token %s): %s; "
		"it expires on its own", opts.name, lease.token, errmsg ? errmsg : "interrupted");
	free(errmsg);
	return false;
}

/*
 * GiveUpBeforeStart: the lease is taken but the command will not run:
 * release it (if it can be done quickly) and exit.
 */
static void
GiveUpBeforeStart(int code)
{
	bool		released;

	(void) Release(Now() + CANCEL_WAIT, false, &released);
	if (interrupt_signal != 0)
		ExitInterrupted();
	exit(code);
}

/*
 * ConfirmLease: when waiting for the lease used up part of it, ask the
 * server before the command starts: a renewal (or, with --renew-every 0,
 * the lease's time left) sets a fresh deadline.  Exits if the lease cannot
 * be confirmed.
 */
static void
ConfirmLease(void)
{
	char	   *errmsg = NULL;
	double		sent = Now();
	double		remaining = 0;
	bool		renewed = false;
	QueryOutcome outcome;

	if (renew_secs > 0)
	{
		outcome = QueryRenew(opts.name, lease.token, opts.ttl, sent + ttl_secs, true,
							 &renewed, &errmsg);
		remaining = renewed ? ttl_secs : 0;
	}
	else
		outcome = QueryRemaining(opts.name, lease.token, sent + ttl_secs, &remaining,
								 &errmsg);
	if (outcome == QUERY_OK && remaining == 0)
	{
		Log("error", "lost the lease on \"%s\" (token %s) before the command started: "
			"the server says this token no longer holds it", opts.name, lease.token);
		exit(opts.lost_exit_code);
	}
	if (outcome != QUERY_OK || interrupt_signal != 0)
	{
		if (interrupt_signal == 0)
			Log("error", "could not confirm the lease on \"%s\" (token %s) before the "
				"command started: %s", opts.name, lease.token, errmsg);
		DropConnection();
		GiveUpBeforeStart(EXIT_UNAVAILABLE);
	}
	if (remaining > 0)
		lease.deadline = sent + remaining - DeadlineMargin();
	lease.next_renew = sent + renew_secs;
}

/*
 * ReadDuration: the length of a DURATION option in seconds, as the server
 * reads it.  Exits on a bad value.
 */
static double
ReadDuration(const char *option, const char *text)
{
	PGresult   *res = NULL;
	char	   *errmsg = NULL;
	double		secs;
	QueryOutcome outcome;

	outcome = QueryDuration(text, &secs, &res, &errmsg);
	if (outcome == QUERY_INTERRUPTED || interrupt_signal != 0)
		ExitInterrupted();
	if (outcome == QUERY_ERROR && strncmp(SqlState(res), "22", 2) == 0)
		UsageError("invalid value \"%s\" for option %s: %s", text, option, errmsg);
	if (outcome != QUERY_OK)
	{
		Log("error", "could not read option %s: %s", option, errmsg);
		exit(EXIT_UNAVAILABLE);
	}
	return secs;
}

/*
 * ReadOptionsFromServer: the durations, as the server reads them, and the
 * checks that need them.
 */
static void
ReadOptionsFromServer(void)
{
	ttl_secs = ReadDuration("--ttl", opts.ttl);
	wait_secs = ReadDuration("-w/--wait", opts.wait);
	kill_secs = ReadDuration("-k/--kill-after", opts.kill_after);
	if (ttl_secs <= 0)
		UsageError("invalid value \"%s\" for option --ttl: must be positive", opts.ttl);
	if (opts.renew_every == NULL)
		renew_secs = ttl_secs / 3;
	else
		renew_secs = ReadDuration("--renew-every", opts.renew_every);
	if (wait_secs < 0)
		UsageError("invalid value \"%s\" for option -w/--wait: must not be negative", opts.wait);
	if (kill_secs < 0)
		UsageError("invalid value \"%s\" for option -k/--kill-after: must not be negative",
				   opts.kill_after);
	if (opts.renew_every != NULL && (renew_secs < 0 || renew_secs >= ttl_secs))
		UsageError("invalid value \"%s\" for option --renew-every: "
				   "must be 0 (no renewal) or shorter than --ttl", opts.renew_every);
	/* later than the local deadline, every renewal would come too late */
	if (renew_secs > 0 && renew_secs >= ttl_secs - DeadlineMargin())
		UsageError("invalid value \"%s\" for option --renew-every: "
				   "must be shorter than --ttl minus its safety margin (%.3g s here)",
				   opts.renew_every, ttl_secs - DeadlineMargin());
}

/*
 * Finish: the command and its process group have ended; exit with its
 * status if the lease was held throughout, or with --lost-exit-code.
 */
static void
Finish(void)
{
	int			status;
	bool		released = false;
	bool		answered;

	status = WIFEXITED(child_status) ? WEXITSTATUS(child_status) :
		WIFSIGNALED(child_status) ? 128 + WTERMSIG(child_status) : 1;
	Verbose("the command exited with status %d", status);

	if (left_behind[0] != '\0' && out_of_reach[0] != '\0')
		Log("warning", "the command exited with status %d and left processes running: %s; "
			"dlock-run kept the lease until they ended (it may not signal %s)",
			status, left_behind, out_of_reach);
	else if (left_behind[0] != '\0')
		Log("warning", "the command exited with status %d and left processes running, "
			"which dlock-run ended before it let go of the lease: %s",
			status, left_behind);
	if (left_behind[0] != '\0' && !lease.lost)
		HintEscapes();
	if (lease.lost)
	{
		Log("error", "the command ended with status %d after the lease on \"%s\" was lost; "
			"no process it started is left", status, opts.name);
		HintEscapes();
		exit(opts.lost_exit_code);
	}
	answered = Release(Now() + RELEASE_WAIT, true, &released);
	if (answered && !released)
	{
		Log("error", "the lease on \"%s\" (token %s) was lost before the command ended "
			"(it expired, or was released or taken over); the command ended with status %d",
			opts.name, lease.token, status);
		HintEscapes();
		exit(opts.lost_exit_code);
	}
	if (!answered && lease.verify)
	{
		Log("error", "the lease on \"%s\" (token %s) may have been lost while the command ran "
			"(dlock-run was stalled and could not ask the server); the command ended "
			"with status %d", opts.name, lease.token, status);
		HintEscapes();
		exit(opts.lost_exit_code);
	}
	DropConnection();
	exit(status);
}

int
main(int argc, char **argv)
{
	char	   *errmsg;

	ProtectStandardFds();
	RaiseFdLimit();
	SetFatalHook(FatalError);
	if (!SetUpSignals())
		Fatal("could not create pipe");
	ParseOptions(argc, argv);
	ExcludeEarlierChildren();
	if (!StartWatchdog())
		Verbose("could not start the watchdog (%s): a stop of dlock-run alone leaves the command unsupervised",
				strerror(errno));

	if (!EnsureConnection(NO_DEADLINE, true, &errmsg))
	{
		if (interrupt_signal != 0)
			ExitInterrupted();
		Log("error", "could not connect to the database: %s", errmsg);
		exit(EXIT_UNAVAILABLE);
	}
	BuildQueries();
	ReadOptionsFromServer();
	MakeOwnerId();

	Acquire();
	/* interrupted while the acquire was on its way: give the lease back */
	if (interrupt_signal != 0)
		GiveUpBeforeStart(0);
	/* a long wait may have used up part of the lease: confirm it first */
	if (renew_secs > 0 ? Now() >= lease.next_renew :
		Now() - acquire_sent > DeadlineMargin())
		ConfirmLease();

	/* the deadline is confirmed now (a long wait may have used it up) */
	PublishDeadline();
	if (!StartCommand())
		GiveUpBeforeStart(EXIT_OSERR);
	Supervise();
	Finish();
	return 0;
}
