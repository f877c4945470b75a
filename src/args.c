/*-------------------------------------------------------------------------
 *
 * args.c
 *		The checks every SQL-callable function applies to its arguments, and
 *		the timestamp arithmetic that turns a ttl into an expiry time.
 *
 * Copyright (c) 2026, the dlock developers
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/int.h"
#include "datatype/timestamp.h"
#include "fmgr.h"
#include "pgtime.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/timestamp.h"

#include "compat.h"
#include "dlock.h"

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
				 errmsg("argument \"%s\" must not be null", what)));
}

/* A lock name has 1 to DLOCK_MAX_NAME_BYTES bytes. */
void
DlockCheckName(text *name)
{
	int			len = VARSIZE_ANY_EXHDR(name);

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
}

text *
DlockNameArg(FunctionCallInfo fcinfo, int argno)
{
	text	   *name;

	DlockRejectNull(fcinfo, argno, "name");
	name = PG_GETARG_TEXT_PP(argno);
	DlockCheckName(name);
	return name;
}

int64
DlockTokenArg(FunctionCallInfo fcinfo, int argno)
{
	DlockRejectNull(fcinfo, argno, "token");
	return PG_GETARG_INT64(argno);
}

/*
 * *result = ts + span, on the calendar of the session's time zone exactly as
 * timestamptz + interval computes it, or false if the sum is out of range
 * (where timestamptz + interval would raise an error, or overflow).
 */
static bool
TimestampTzAddInterval(TimestampTz ts, const Interval *span,
					   TimestampTz *result)
{
	struct pg_tm tt,
			   *tm = &tt;
	fsec_t		fsec;
	int			tz;

	if (DlockIntervalIsInfinite(span))
		return false;

	if (span->month != 0)
	{
		int64		months;
		int64		year;

		if (timestamp2tm(ts, &tz, tm, &fsec, NULL, NULL) != 0)
			return false;
		months = (int64) tm->tm_year * MONTHS_PER_YEAR + (tm->tm_mon - 1) +
			span->month;
		year = months >= 0 ? months / MONTHS_PER_YEAR :
			-((-months - 1) / MONTHS_PER_YEAR) - 1;
		if (year < JULIAN_MINYEAR || year > JULIAN_MAXYEAR)
			return false;
		tm->tm_year = (int) year;
		tm->tm_mon = (int) (months - year * MONTHS_PER_YEAR) + 1;
		if (tm->tm_mday > day_tab[isleap(tm->tm_year)][tm->tm_mon - 1])
			tm->tm_mday = day_tab[isleap(tm->tm_year)][tm->tm_mon - 1];
		tz = DetermineTimeZoneOffset(tm, session_timezone);
		if (tm2timestamp(tm, fsec, &tz, &ts) != 0)
			return false;
	}

	if (span->day != 0)
	{
		int64		julian;

		if (timestamp2tm(ts, &tz, tm, &fsec, NULL, NULL) != 0)
			return false;
		julian = (int64) date2j(tm->tm_year, tm->tm_mon, tm->tm_mday) +
			span->day;
		if (julian < 0 || julian > TIMESTAMP_END_JULIAN)
			return false;
		j2date((int) julian, &tm->tm_year, &tm->tm_mon, &tm->tm_mday);
		tz = DetermineTimeZoneOffset(tm, session_timezone);
		if (tm2timestamp(tm, fsec, &tz, &ts) != 0)
			return false;
	}

	if (pg_add_s64_overflow(ts, span->time, &ts) || !IS_VALID_TIMESTAMP(ts))
		return false;
	*result = ts;
	return true;
}

/*
 * An interval's nominal length in microseconds, counting a day as 24 hours
 * and a month as 30 days, as interval comparison does; exact, never
 * overflowing where a 128-bit integer is available.
 */
#ifdef HAVE_INT128
typedef int128 DlockWide;
#else
typedef double DlockWide;
#endif

static DlockWide
IntervalNominalUsecs(const Interval *span)
{
	return (DlockWide) span->time +
		(DlockWide) span->day * USECS_PER_DAY +
		(DlockWide) span->month * DAYS_PER_MONTH * USECS_PER_DAY;
}

/*
 * The longest real time, in microseconds, that a ttl may reach on the
 * calendar: dlock.max_ttl, plus an hour for a ttl counted in days or months,
 * whose days may last 25 hours across a daylight-saving change.  Without
 * this bound a mixed-sign interval ('1200 mons -35999 days': a nominal day)
 * would reach years ahead.
 */
static int64
DlockTtlRealLimit(const Interval *ttl)
{
	int64		limit = (int64) dlock_max_ttl * USECS_PER_SEC;

	if (ttl->month != 0 || ttl->day != 0)
		limit += USECS_PER_HOUR;
	return limit;
}

/*
 * The expiry time now + ttl, after checking that ttl is finite, positive and
 * at most dlock.max_ttl.  The expiry is now + ttl on the calendar, as
 * timestamptz + interval computes it; the limits apply to the ttl's nominal
 * length (24-hour days, 30-day months), so that '1 day' is always allowed
 * under the default maximum of a day, also across a daylight-saving change,
 * and to the real time from now to the expiry (DlockTtlRealLimit).
 * A ttl that cannot be added to now at all is out of range.
 */
TimestampTz
DlockExpiryArg(FunctionCallInfo fcinfo, int argno, TimestampTz now)
{
	Interval   *ttl;
	TimestampTz expires_at;
	DlockWide	nominal;

	DlockRejectNull(fcinfo, argno, "ttl");
	ttl = PG_GETARG_INTERVAL_P(argno);
	if (DlockIntervalIsInfinite(ttl))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("ttl must be finite")));
	if (!TimestampTzAddInterval(now, ttl, &expires_at))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("ttl is out of range")));
	nominal = IntervalNominalUsecs(ttl);
	if (nominal <= 0 || expires_at <= now)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("ttl must be positive")));
	if (nominal > (DlockWide) dlock_max_ttl * USECS_PER_SEC ||
		expires_at - now > DlockTtlRealLimit(ttl))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("ttl exceeds the maximum of %d seconds", dlock_max_ttl),
				 errhint("The maximum is set by \"dlock.max_ttl\".")));
	return expires_at;
}

/*
 * A duration argument (what: "wait", "older_than") in microseconds: zero or
 * more, finite.  Unlike a ttl, which ends at a point on the calendar, a
 * duration counts a day as 24 hours and a month as 30 days, as interval
 * comparison does.  Durations beyond a century are cut to a century.
 */
int64
DlockDurationArg(FunctionCallInfo fcinfo, int argno, const char *what)
{
	Interval   *span;
	const int64 century = (int64) 36525 * USECS_PER_DAY;
	DlockWide	usecs;

	DlockRejectNull(fcinfo, argno, what);
	span = PG_GETARG_INTERVAL_P(argno);
	if (DlockIntervalIsInfinite(span))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"%s\" must be finite", what)));
	usecs = IntervalNominalUsecs(span);
	if (usecs < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"%s\" must not be negative", what)));
	return usecs > century ? century : (int64) usecs;
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

/*
 * An optional duration argument (min_hold, lock_delay) as DlockDurationArg:
 * -1 when it is NULL or the caller's SQL declaration has no such argument
 * (the 1.1 functions, PG_NARGS()).
 */
static int64
DlockOptionalDurationArg(FunctionCallInfo fcinfo, int argno, const char *what)
{
	if (argno >= PG_NARGS() || PG_ARGISNULL(argno))
		return -1;
	return DlockDurationArg(fcinfo, argno, what);
}

/*
 * The minimum hold of an acquire in microseconds, 0 for none (NULL or
 * zero): finite, not negative, and not longer than the ttl (argument
 * ttl_argno, by its nominal length), or 22023.
 */
int64
DlockMinHoldArg(FunctionCallInfo fcinfo, int argno, int ttl_argno)
{
	int64		min_hold = DlockOptionalDurationArg(fcinfo, argno, "min_hold");

	if (min_hold <= 0)
		return 0;
	if ((DlockWide) min_hold >
		IntervalNominalUsecs(PG_GETARG_INTERVAL_P(ttl_argno)))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("min_hold must not be longer than ttl")));
	return min_hold;
}

/*
 * The lock-delay of an acquire or renew in microseconds, 0 for none: the
 * argument, or dlock.lock_delay when it is NULL; finite, not negative, and
 * at most dlock.max_ttl, or 22023.
 */
int64
DlockLockDelayArg(FunctionCallInfo fcinfo, int argno)
{
	int64		lock_delay = DlockOptionalDurationArg(fcinfo, argno,
													  "lock_delay");

	if (lock_delay < 0)
		lock_delay = (int64) dlock_lock_delay * 1000;
	if (lock_delay > (int64) dlock_max_ttl * USECS_PER_SEC)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("lock_delay exceeds the maximum of %d seconds",
						dlock_max_ttl),
				 errhint("The maximum is set by \"dlock.max_ttl\".")));
	return lock_delay;
}
