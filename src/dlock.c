/*-------------------------------------------------------------------------
 *
 * dlock.c
 *		Module set-up: the GUCs, finding the extension's own relations, and
 *		the checks every SQL-callable function applies to its arguments.
 *
 * The relations are found through the schema of the called function, which
 * is the schema the extension was created in; the caller's search_path is
 * never consulted.  Their OIDs are cached for the backend and forgotten on
 * any relcache invalidation that concerns them (DROP EXTENSION, say).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <float.h>
#include <math.h>

#include "catalog/namespace.h"
#include "datatype/timestamp.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"

#include "compat.h"
#include "dlock.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

int			dlock_max_ttl = 86400;
int			dlock_max_leases_per_role = 0;

static DlockRelations cached_relations;
static bool cached_relations_valid = false;

static void
DlockRelcacheCallback(Datum arg, Oid relid)
{
	if (relid == InvalidOid ||
		relid == cached_relations.lease_table ||
		relid == cached_relations.lease_index ||
		relid == cached_relations.token_seq)
		cached_relations_valid = false;
}

void
_PG_init(void)
{
	DefineCustomIntVariable("dlock.max_ttl",
							"Largest ttl a lease may be acquired or renewed for.",
							"A longer ttl is rejected with SQLSTATE 22023.",
							&dlock_max_ttl,
							86400,
							1,
							INT_MAX,
							PGC_SUSET,
							GUC_UNIT_S,
							NULL, NULL, NULL);
	DefineCustomIntVariable("dlock.max_leases_per_role",
							"Largest number of leases one role may hold at once.",
							"Zero means no limit.  Checked at each new acquisition "
							"with a scan of the lease table.",
							&dlock_max_leases_per_role,
							0,
							0,
							INT_MAX,
							PGC_SUSET,
							0,
							NULL, NULL, NULL);
	MarkGUCPrefixReserved("dlock");

	CacheRegisterRelcacheCallback(DlockRelcacheCallback, (Datum) 0);
}

static Oid
DlockLookupRelation(const char *relname, Oid nspid)
{
	Oid			relid = get_relname_relid(relname, nspid);

	if (!OidIsValid(relid))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("relation \"%s.%s\" of extension \"dlock\" does not exist",
						get_namespace_name(nspid), relname),
				 errhint("Drop and re-create the extension.")));
	return relid;
}

/*
 * The extension's relations, found in the schema of the function that is
 * being called.
 */
const DlockRelations *
DlockGetRelations(FunctionCallInfo fcinfo)
{
	if (!cached_relations_valid)
	{
		Oid			nspid;

		if (fcinfo->flinfo == NULL || !OidIsValid(fcinfo->flinfo->fn_oid))
			elog(ERROR, "dlock function called without a function OID");
		nspid = get_func_namespace(fcinfo->flinfo->fn_oid);
		if (!OidIsValid(nspid))
			elog(ERROR, "cache lookup failed for function %u",
				 fcinfo->flinfo->fn_oid);

		cached_relations.lease_table = DlockLookupRelation("dlock_lease", nspid);
		cached_relations.lease_index = DlockLookupRelation("dlock_lease_pkey", nspid);
		cached_relations.token_seq = DlockLookupRelation("dlock_token_seq", nspid);
		cached_relations_valid = true;
	}
	return &cached_relations;
}

/*
 * Argument checks.  None of the functions is STRICT: a NULL argument is an
 * error (22004), never a silent NULL result.
 */
static void
DlockRejectNull(FunctionCallInfo fcinfo, int argno, const char *what)
{
	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be null", what)));
}

text *
DlockNameArg(FunctionCallInfo fcinfo, int argno)
{
	text	   *name;
	int			len;

	DlockRejectNull(fcinfo, argno, "lock name");
	name = PG_GETARG_TEXT_PP(argno);
	len = VARSIZE_ANY_EXHDR(name);
	if (len == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("lock name must not be empty")));
	if (len > DLOCK_MAX_NAME_BYTES)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("lock name is too long"),
				 errdetail("A lock name has at most %d bytes; this one has %d.",
						   DLOCK_MAX_NAME_BYTES, len)));
	return name;
}

int64
DlockTokenArg(FunctionCallInfo fcinfo, int argno)
{
	DlockRejectNull(fcinfo, argno, "token");
	return PG_GETARG_INT64(argno);
}

/* An interval's length in microseconds, counting a month as 30 days. */
static double
IntervalApproxUsecs(const Interval *span)
{
	return (double) span->time +
		(double) span->day * USECS_PER_DAY +
		(double) span->month * DAYS_PER_MONTH * USECS_PER_DAY;
}

/*
 * The expiry time now + ttl, after checking that ttl is positive, finite and
 * at most dlock.max_ttl.  Months and days are added on the calendar, as
 * timestamptz + interval does.
 */
TimestampTz
DlockExpiryArg(FunctionCallInfo fcinfo, int argno, TimestampTz now)
{
	Interval   *ttl;
	double		approx;
	double		max_usecs = (double) dlock_max_ttl * USECS_PER_SEC;
	TimestampTz expires_at = 0;
	bool		too_long;

	DlockRejectNull(fcinfo, argno, "ttl");
	ttl = PG_GETARG_INTERVAL_P(argno);
	if (DlockIntervalIsInfinite(ttl))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("ttl must be finite")));

	/*
	 * Decide far-off values on the approximate length, so that adding them
	 * cannot overflow; a calendar month or day differs from the
	 * approximation by far less than the margin.
	 */
	approx = IntervalApproxUsecs(ttl);
	if (approx <= -2.0 * USECS_PER_DAY * DAYS_PER_MONTH)
		too_long = false;
	else if (approx >= max_usecs + 2.0 * USECS_PER_DAY * DAYS_PER_MONTH)
		too_long = true;
	else
	{
		expires_at = DatumGetTimestampTz(DirectFunctionCall2(timestamptz_pl_interval,
															 TimestampTzGetDatum(now),
															 IntervalPGetDatum(ttl)));
		too_long = (double) (expires_at - now) > max_usecs;
		approx = (double) (expires_at - now);
	}

	if (approx <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("ttl must be positive")));
	if (too_long)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("ttl exceeds the maximum of %d seconds", dlock_max_ttl),
				 errhint("The maximum is set by \"dlock.max_ttl\".")));
	return expires_at;
}

/*
 * A duration argument (what: "wait", "older_than") in microseconds: zero or
 * more, finite.  Durations beyond a century are cut to a century.
 */
int64
DlockDurationArg(FunctionCallInfo fcinfo, int argno, const char *what)
{
	Interval   *wait;
	double		approx;
	const double century = 100.0 * DAYS_PER_YEAR * USECS_PER_DAY;

	DlockRejectNull(fcinfo, argno, what);
	wait = PG_GETARG_INTERVAL_P(argno);
	if (DlockIntervalIsInfinite(wait))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be finite", what)));
	approx = IntervalApproxUsecs(wait);
	if (approx < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must not be negative", what)));
	if (approx > century)
		approx = century;
	return (int64) approx;
}

/* The owner label, or NULL for an anonymous holder. */
char *
DlockOwnerArg(FunctionCallInfo fcinfo, int argno)
{
	text	   *owner;
	int			len;

	if (PG_ARGISNULL(argno))
		return NULL;
	owner = PG_GETARG_TEXT_PP(argno);
	len = VARSIZE_ANY_EXHDR(owner);
	if (len == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("owner must not be empty"),
				 errhint("Pass NULL for an anonymous holder.")));
	if (len > DLOCK_MAX_OWNER_BYTES)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("owner is too long"),
				 errdetail("An owner has at most %d bytes; this one has %d.",
						   DLOCK_MAX_OWNER_BYTES, len)));
	return text_to_cstring(owner);
}
