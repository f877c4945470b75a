/*-------------------------------------------------------------------------
 *
 * conn.c
 *		dlock-run's connection to the server, and the statements it sends
 *
 * One connection, opened in a thread of its own so that waiting for it
 * goes through WaitEvent (signals are handled, deadlines hold, whatever
 * libpq's synchronous host name lookup does).  Every option a
 * user gives (-d, -h, -p, -U and the libpq environment) is passed on each
 * (re)connect, so a multi-host connection string with
 * target_session_attrs=read-write reaches whichever server is the primary
 * now: that is how a renewal follows a failover.
 *
 * Copyright (c) 2026, the dlock developers
 *
 *-------------------------------------------------------------------------
 */
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dlock-run.h"

PGconn	   *conn = NULL;

/*
 * Set (by the supervisor) when nothing is left to keep the lease for: a
 * connection attempt or query in progress gives up at once (the query with
 * QUERY_INTERRUPTED, "abandoned"; its connection is then unusable).
 */
bool		abandon_queries = false;

/* the statements that call dlock (see BuildQueries) */
static char sql_acquire[1024];
static char sql_renew[1024];
static char sql_release[1024];
static char sql_remaining[1024];
static char sql_holder[1024];

/*
 * A connection attempt runs in a thread of its own (ConnectThread), with
 * every signal blocked there: libpq resolves host names synchronously
 * (getaddrinfo inside PQconnectPoll), and a stalled lookup must not hold
 * up the deadline.  The main thread waits for the thread's byte on a pipe
 * through WaitEvent; at its deadline (or a signal that interrupts it) it
 * abandons the attempt, and the thread, when libpq returns at last,
 * finishes the connection and frees the attempt itself.  attempt_lock
 * guards done, abandoned and hanging: whoever sees the other side's flag
 * under the lock owns the attempt.
 */
typedef struct ConnectAttempt
{
	const char *keywords[8];
	const char *values[8];
	PGconn	   *result;			/* set by the thread */
	bool		done;			/* the thread has finished */
	bool		abandoned;		/* the main thread gave up on it */
	int			wfd;			/* the pipe's write end (the thread's) */
} ConnectAttempt;

static pthread_mutex_t attempt_lock = PTHREAD_MUTEX_INITIALIZER;
static int	hanging = 0;		/* abandoned attempts whose thread still runs */

/* no new attempt while this many abandoned ones still hang */
#define MAX_HANGING 4

/*
 * FillOptions: the user's options; the order of psql: a connection string
 * in -d overrides -h, -p, -U.  The values are the process's own strings
 * (argv), which outlive any attempt.
 */
static void
FillOptions(ConnectAttempt *a)
{
	int			n = 0;

	if (opts.host)
	{
		a->keywords[n] = "host";
		a->values[n++] = opts.host;
	}
	if (opts.port)
	{
		a->keywords[n] = "port";
		a->values[n++] = opts.port;
	}
	if (opts.user)
	{
		a->keywords[n] = "user";
		a->values[n++] = opts.user;
	}
	if (opts.dbname)
	{
		a->keywords[n] = "dbname";
		a->values[n++] = opts.dbname;
	}
	a->keywords[n] = "fallback_application_name";
	a->values[n++] = progname;
	a->keywords[n] = NULL;
	a->values[n] = NULL;
}

/*
 * ConnectThread: connect (libpq honours connect_timeout here), then hand
 * the connection over, or finish it if the attempt was abandoned.
 */
static void *
ConnectThread(void *arg)
{
	ConnectAttempt *a = arg;
	PGconn	   *c = PQconnectdbParams(a->keywords, a->values, 1);
	bool		abandoned;

	pthread_mutex_lock(&attempt_lock);
	a->result = c;
	a->done = true;
	abandoned = a->abandoned;
	if (abandoned)
		hanging--;
	else if (write(a->wfd, "x", 1) < 0)
	{
		/* cannot happen: the pipe is empty, and its reader waits */
	}
	pthread_mutex_unlock(&attempt_lock);
	if (abandoned)
	{
		PQfinish(c);
		close(a->wfd);
		free(a);
	}
	return NULL;
}

/*
 * StartAttempt: a new attempt and its thread; NULL with *errmsg set if
 * that failed.  *rfd is the pipe's read end.
 */
static ConnectAttempt *
StartAttempt(int *rfd, char **errmsg)
{
	ConnectAttempt *a = calloc(1, sizeof(ConnectAttempt));
	int			fds[2];
	sigset_t	all;
	sigset_t	old;
	pthread_t	thread;
	int			rc;

	if (a == NULL || pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0)
	{
		free(a);
		*errmsg = CopyMessage("could not start a connection attempt: out of memory or descriptors");
		return NULL;
	}
	FillOptions(a);
	a->wfd = fds[1];
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&thread, NULL, ConnectThread, a);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0)
	{
		close(fds[0]);
		close(fds[1]);
		free(a);
		*errmsg = CopyMessage("could not start a connection attempt: no thread");
		return NULL;
	}
	pthread_detach(thread);
	*rfd = fds[0];
	return a;
}

/*
 * AwaitAttempt: wait for the attempt's thread until deadline; its
 * connection (which may be bad), or NULL with *errmsg set when dlock-run
 * gave up on it (it is then the thread's to finish).
 */
static PGconn *
AwaitAttempt(ConnectAttempt *a, int rfd, double deadline, bool interruptible,
			 char **errmsg)
{
	for (;;)
	{
		bool		interrupted;
		bool		late;
		bool		done;

		(void) WaitEvent(rfd, POLLIN, deadline);
		interrupted = (interruptible && interrupt_signal != 0) || abandon_queries;
		late = deadline >= 0 && Now() >= deadline;
		pthread_mutex_lock(&attempt_lock);
		done = a->done;
		if (!done && (interrupted || late))
		{
			a->abandoned = true;
			hanging++;
		}
		pthread_mutex_unlock(&attempt_lock);
		if (done)
		{
			PGconn	   *c = a->result;

			close(rfd);
			close(a->wfd);
			free(a);
			return c;
		}
		if (interrupted || late)
		{
			close(rfd);
			*errmsg = CopyMessage(interrupted ?
								  (abandon_queries ? "abandoned" : "interrupted") :
								  "could not connect to the server in time: timeout expired "
								  "(the attempt still hangs: a stalled host name lookup, "
								  "or a server that does not answer)");
			return NULL;
		}
	}
}

/*
 * Connect: open a connection, waiting until deadline at most.  On failure
 * returns NULL with *errmsg set (malloc'd).  If interruptible, a signal
 * that interrupts dlock-run ends the attempt too.
 */
static PGconn *
Connect(double deadline, bool interruptible, char **errmsg)
{
	ConnectAttempt *a;
	PGconn	   *c;
	int			rfd;
	int			stuck;

	*errmsg = NULL;
	pthread_mutex_lock(&attempt_lock);
	stuck = hanging;
	pthread_mutex_unlock(&attempt_lock);
	if (stuck >= MAX_HANGING)
	{
		*errmsg = CopyMessage("could not connect to the server: earlier connection attempts "
							  "still hang (a stalled host name lookup?)");
		return NULL;
	}
	a = StartAttempt(&rfd, errmsg);
	if (a == NULL)
		return NULL;
	c = AwaitAttempt(a, rfd, deadline, interruptible, errmsg);
	if (c == NULL && *errmsg != NULL)
		return NULL;
	if (c == NULL)
	{
		*errmsg = CopyMessage("out of memory");
		return NULL;
	}
	if (PQstatus(c) != CONNECTION_OK || PQsetnonblocking(c, 1) != 0)
	{
		*errmsg = CopyMessage(PQerrorMessage(c));
		PQfinish(c);
		return NULL;
	}
	return c;
}

/*
 * DropConnection: forget a connection that is broken or busy with a query
 * we gave up on.
 */
void
DropConnection(void)
{
	if (conn != NULL)
		PQfinish(conn);
	conn = NULL;
}

/*
 * EnsureConnection: (re)connect if needed, until deadline at most.  False
 * with *errmsg set if that failed.
 */
bool
EnsureConnection(double deadline, bool interruptible, char **errmsg)
{
	*errmsg = NULL;
	if (conn != NULL && PQstatus(conn) == CONNECTION_OK)
		return true;
	DropConnection();
	conn = Connect(deadline, interruptible, errmsg);
	return conn != NULL;
}

/*
 * SendCancel: ask the server to cancel the query in progress on c.
 */
static void
SendCancel(PGconn *c)
{
	PGcancel   *cancel = PQgetCancel(c);
	char		errbuf[256];

	if (cancel == NULL)
		return;
	(void) PQcancel(cancel, errbuf, sizeof(errbuf));
	PQfreeCancel(cancel);
}

/*
 * SendQuery: send one statement with text parameters, flushing it out
 * until deadline.
 */
static QueryOutcome
SendQuery(PGconn *c, const char *sql, int nparams, const char *const *params,
		  double deadline, char **errmsg)
{
	int			rc;

	if (!PQsendQueryParams(c, sql, nparams, NULL, params, NULL, NULL, 0))
	{
		*errmsg = CopyMessage(PQerrorMessage(c));
		return QUERY_BROKEN;
	}
	while ((rc = PQflush(c)) != 0)
	{
		if (rc < 0)
		{
			*errmsg = CopyMessage(PQerrorMessage(c));
			return QUERY_BROKEN;
		}
		if (!WaitEvent(PQsocket(c), POLLOUT, deadline) &&
			deadline >= 0 && Now() >= deadline)
		{
			*errmsg = CopyMessage("no answer from the server in time");
			return QUERY_TIMEOUT;
		}
	}
	return QUERY_OK;
}

/*
 * ClassifyResult: the outcome of a statement's (first) result.
 */
static QueryOutcome
ClassifyResult(PGconn *c, PGresult *res, bool canceled, PGresult **result, char **errmsg)
{
	const char *primary;

	if (res == NULL)
	{
		*errmsg = CopyMessage(PQerrorMessage(c));
		return QUERY_BROKEN;
	}
	if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1)
	{
		*result = res;
		return QUERY_OK;
	}
	if (PQresultStatus(res) == PGRES_TUPLES_OK)
	{
		PQclear(res);
		*errmsg = CopyMessage("unexpected result from the server");
		return QUERY_ERROR;
	}
	*result = res;
	primary = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
	*errmsg = CopyMessage(primary ? primary : PQresultErrorMessage(res));
	if (PQstatus(c) == CONNECTION_BAD)
		return QUERY_BROKEN;
	return canceled ? QUERY_INTERRUPTED : QUERY_ERROR;
}

/*
 * RunQuery: send one statement with text parameters and wait for its
 * result until deadline.  On QUERY_OK *result holds one row; on
 * QUERY_ERROR *result holds the error (for its SQLSTATE) and *errmsg its
 * primary message; on the other outcomes *errmsg says what happened.  The
 * caller clears *result and frees *errmsg.  After QUERY_BROKEN or
 * QUERY_TIMEOUT the connection is unusable.
 */
static QueryOutcome
RunQuery(PGconn *c, const char *sql, int nparams, const char *const *params,
		 double deadline, bool interruptible, PGresult **result, char **errmsg)
{
	PGresult   *res = NULL;
	PGresult   *r;
	bool		canceled = false;
	QueryOutcome outcome;

	*result = NULL;
	*errmsg = NULL;
	outcome = SendQuery(c, sql, nparams, params, deadline, errmsg);
	if (outcome != QUERY_OK)
		return outcome;

	/* collect the results; PQgetResult is only called when it cannot block */
	for (;;)
	{
		while (PQisBusy(c))
		{
			bool		ready = WaitEvent(PQsocket(c), POLLIN, deadline);

			if (abandon_queries)
			{
				if (res != NULL)
					PQclear(res);
				*errmsg = CopyMessage("abandoned");
				return QUERY_INTERRUPTED;
			}
			if (interruptible && interrupt_signal != 0 && !canceled)
			{
				SendCancel(c);
				canceled = true;
				deadline = Now() + CANCEL_WAIT;
			}
			if (!ready && deadline >= 0 && Now() >= deadline)
			{
				if (res != NULL)
					PQclear(res);
				*errmsg = CopyMessage(canceled ? "interrupted" :
									  "no answer from the server in time");
				return canceled ? QUERY_INTERRUPTED : QUERY_TIMEOUT;
			}
			if (ready && !PQconsumeInput(c))
			{
				if (res != NULL)
					PQclear(res);
				*errmsg = CopyMessage(PQerrorMessage(c));
				return QUERY_BROKEN;
			}
		}
		r = PQgetResult(c);
		if (r == NULL)
			break;
		if (res == NULL)
			res = r;
		else
			PQclear(r);
	}
	return ClassifyResult(c, res, canceled, result, errmsg);
}

/*
 * SqlState: the SQLSTATE of an error result, or "".
 */
const char *
SqlState(const PGresult *res)
{
	const char *s = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;

	return s ? s : "";
}

/*
 * BuildQueries: the statements that call dlock, its objects qualified with
 * --schema (quoted as an identifier by libpq) if given, or else found
 * through search_path.  Only the schema name goes into the text; every
 * value is a parameter.
 */
void
BuildQueries(void)
{
	char	   *quoted = NULL;
	const char *prefix = "";
	const char *dot = "";
	int			n;

	if (opts.schema != NULL)
	{
		quoted = PQescapeIdentifier(conn, opts.schema, strlen(opts.schema));
		if (quoted == NULL)
			UsageError("invalid value \"%s\" for option --schema: %s",
					   opts.schema, PQerrorMessage(conn));
		prefix = quoted;
		dot = ".";
	}
	snprintf(sql_acquire, sizeof(sql_acquire),
			 "SELECT %s%sdlock_acquire($1::pg_catalog.text, "
			 "$2::pg_catalog.interval, $3::pg_catalog.interval, "
			 "$4::pg_catalog.text%s)", prefix, dot,
			 opts.min_hold != NULL ? ", min_hold => $5::pg_catalog.interval" : "");
	snprintf(sql_renew, sizeof(sql_renew),
			 "SELECT %s%sdlock_renew($1::pg_catalog.text, $2::pg_catalog.int8, "
			 "$3::pg_catalog.interval)", prefix, dot);
	snprintf(sql_release, sizeof(sql_release),
			 "SELECT %s%sdlock_release($1::pg_catalog.text, $2::pg_catalog.int8)",
			 prefix, dot);
	n = snprintf(sql_remaining, sizeof(sql_remaining),
				 "SELECT %s%sdlock_check($1::pg_catalog.text, $2::pg_catalog.int8), "
				 "(SELECT pg_catalog.max(pg_catalog.date_part('epoch', l.expires_at "
				 "OPERATOR(pg_catalog.-) pg_catalog.clock_timestamp())) "
				 "FROM %s%sdlock_leases l WHERE l.name OPERATOR(pg_catalog.=) $1::pg_catalog.text "
				 "AND l.token OPERATOR(pg_catalog.=) $2::pg_catalog.int8)",
				 prefix, dot, prefix, dot);
	if (n >= 0 && (size_t) n < sizeof(sql_remaining))
		n = snprintf(sql_holder, sizeof(sql_holder),
					 "SELECT l.role::pg_catalog.text, l.owner, l.expires_at::pg_catalog.text, "
					 "pg_catalog.date_part('epoch', l.expires_at "
					 "OPERATOR(pg_catalog.-) pg_catalog.clock_timestamp()) "
					 "FROM (SELECT) AS one LEFT JOIN %s%sdlock_leases l "
					 "ON l.name OPERATOR(pg_catalog.=) $1::pg_catalog.text AND l.held",
					 prefix, dot);
	if (quoted != NULL)
		PQfreemem(quoted);
	if (n < 0 || (size_t) n >= sizeof(sql_holder))
		UsageError("invalid value \"%s\" for option --schema: too long", opts.schema);
}

/*
 * QueryDuration: the length of a DURATION in seconds, as the server reads
 * the interval (months and days counted on the calendar from now), in
 * *secs when the outcome is QUERY_OK.  On QUERY_ERROR *res holds the error.
 */
QueryOutcome
QueryDuration(const char *text, double *secs, PGresult **res, char **errmsg)
{
	const char *params[1];
	QueryOutcome outcome;

	params[0] = text;
	*secs = 0;
	outcome = RunQuery(conn,
					   "SELECT pg_catalog.date_part('epoch', "
					   "(pg_catalog.now() OPERATOR(pg_catalog.+) $1::pg_catalog.interval) "
					   "OPERATOR(pg_catalog.-) pg_catalog.now())",
					   1, params, NO_DEADLINE, true, res, errmsg);
	if (outcome == QUERY_OK)
	{
		*secs = strtod(PQgetvalue(*res, 0, 0), NULL);
		PQclear(*res);
		*res = NULL;
	}
	return outcome;
}

/*
 * QueryAcquire: dlock_acquire(name, ttl, wait, owner), with --min-hold's
 * min_hold when given; the caller looks at the result.  owner NULL:
 * anonymous.
 */
QueryOutcome
QueryAcquire(const char *name, const char *ttl, const char *wait, const char *owner,
			 double deadline, PGresult **res, char **errmsg)
{
	const char *params[5];

	params[0] = name;
	params[1] = ttl;
	params[2] = wait;
	params[3] = owner;
	params[4] = opts.min_hold;
	return RunQuery(conn, sql_acquire, opts.min_hold != NULL ? 5 : 4, params,
					deadline, true, res, errmsg);
}

/*
 * QueryHolder: who holds the lease on name, as dlock_leases shows it to
 * this role: one row of role, owner, expires_at (as text) and the seconds
 * left, all NULL if the lease is not held now (dlock_lease's key is the
 * name: one row at most).  The caller clears *res.
 */
QueryOutcome
QueryHolder(const char *name, double deadline, PGresult **res, char **errmsg)
{
	const char *params[1];

	params[0] = name;
	return RunQuery(conn, sql_holder, 1, params, deadline, false, res, errmsg);
}

/*
 * QueryEditionSchemas: the schemas that have a dlock_edition() function,
 * quoted and comma-separated, or NULL if none (or if the query failed):
 * how dlock-run finds dlock when its functions are not where it looked.
 * Both editions have that function; the SQL edition's script makes no
 * pg_extension row, so dlock-run never looks there.  The caller frees the
 * result.
 */
char *
QueryEditionSchemas(double deadline)
{
	PGresult   *res = NULL;
	char	   *errmsg = NULL;
	char	   *found = NULL;

	if (RunQuery(conn,
				 "SELECT pg_catalog.string_agg(pg_catalog.quote_ident(n.nspname), ', ' ORDER BY n.nspname)"
				 " FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n"
				 " ON n.oid OPERATOR(pg_catalog.=) p.pronamespace"
				 " WHERE p.proname OPERATOR(pg_catalog.=) 'dlock_edition'"
				 " AND p.pronargs OPERATOR(pg_catalog.=) 0",
				 0, NULL, deadline, false, &res, &errmsg) == QUERY_OK &&
		!PQgetisnull(res, 0, 0))
		found = CopyMessage(PQgetvalue(res, 0, 0));
	if (res != NULL)
		PQclear(res);
	free(errmsg);
	return found;
}

/*
 * QueryBoolean: a statement on the lease (name, token[, ttl]) that returns
 * one boolean, in *answer when the outcome is QUERY_OK.
 */
static QueryOutcome
QueryBoolean(const char *sql, const char *const *params, int nparams, double deadline,
			 bool interruptible, bool *answer, char **errmsg)
{
	PGresult   *res = NULL;
	QueryOutcome outcome;

	*answer = false;
	outcome = RunQuery(conn, sql, nparams, params, deadline, interruptible,
					   &res, errmsg);
	if (outcome == QUERY_OK)
		*answer = strcmp(PQgetvalue(res, 0, 0), "t") == 0;
	if (res != NULL)
		PQclear(res);
	return outcome;
}

/*
 * QueryRenew: dlock_renew(name, token, ttl).
 */
QueryOutcome
QueryRenew(const char *name, const char *token, const char *ttl, double deadline,
		   bool interruptible, bool *renewed, char **errmsg)
{
	const char *params[3];

	params[0] = name;
	params[1] = token;
	params[2] = ttl;
	return QueryBoolean(sql_renew, params, 3, deadline, interruptible, renewed, errmsg);
}

/*
 * QueryRelease: dlock_release(name, token).
 */
QueryOutcome
QueryRelease(const char *name, const char *token, double deadline,
			 bool interruptible, bool *released, char **errmsg)
{
	const char *params[2];

	params[0] = name;
	params[1] = token;
	return QueryBoolean(sql_release, params, 2, deadline, interruptible, released, errmsg);
}

/*
 * QueryRemaining: how many seconds the lease has left on the server's
 * clock, without renewing it: 0 if the token no longer holds it, -1 if it
 * holds it but dlock_leases does not show this role the expiry.
 */
QueryOutcome
QueryRemaining(const char *name, const char *token, double deadline,
			   double *remaining, char **errmsg)
{
	const char *params[2];
	PGresult   *res = NULL;
	QueryOutcome outcome;

	params[0] = name;
	params[1] = token;
	*remaining = 0;
	outcome = RunQuery(conn, sql_remaining, 2, params, deadline, false, &res, errmsg);
	if (outcome == QUERY_OK && strcmp(PQgetvalue(res, 0, 0), "t") == 0)
	{
		if (PQgetisnull(res, 0, 1))
			*remaining = -1;
		else
		{
			*remaining = strtod(PQgetvalue(res, 0, 1), NULL);
			if (*remaining < 0)
				*remaining = 0;
		}
	}
	if (res != NULL)
		PQclear(res);
	return outcome;
}
