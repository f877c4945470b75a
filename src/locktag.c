/*-------------------------------------------------------------------------
 *
 * locktag.c
 *		Every lock key dlock takes: the keyed hash of a lock name, the
 *		secret it is keyed with, and the builders of every locktag.
 *
 * Why a secret.  Up to 1.1 a name's key was hash_any_extended(name, 0):
 * lookup3, unkeyed and invertible, so any role could solve for a printable
 * name whose key is that of a victim's name (in milliseconds) and, through
 * the shared key, keep the victim's free lease from being acquired, delay
 * its holder's renewals or pin it with an idle check.  A seed does not help:
 * pg_locks shows every role the keys of the names it chose, and lookup3 is
 * simple enough that its seed can be recovered from such pairs.
 *
 * From 1.2 on a name's key is SipHash-2-4 (Aumasson and Bernstein, 2012) of
 * the name's bytes, keyed with a 128-bit secret drawn once from
 * pg_strong_random() when the extension is created (or updated to 1.2),
 * kept in @extschema@.dlock_lock_key.  SipHash is a pseudo-random function:
 * without the secret, the keys of any number of chosen names (all of
 * pg_locks) say nothing about the key of another name beyond chance.  A
 * victim's key is visible in pg_locks while it holds a lock, but finding a
 * name with that key takes about 2^64 guesses, each tested only by taking a
 * lock on the server, one per call; recovering the secret from observed
 * keys is, as far as SipHash's published analysis goes, no easier than
 * trying its 2^128 values.  So a collision is an accident of about 2^-64 per
 * pair of names, which nobody can aim at; docs/security.md states what such
 * an accident costs (the two names share their short lock waits, never
 * their leases).
 *
 * The secret table is readable only by its owner (the role that ran CREATE
 * EXTENSION, or the update to 1.2) and superusers, and by members of
 * pg_read_all_data; C reads it here without the caller's privileges.  It is
 * not a configuration table: pg_dump leaves its row out, and a restore
 * makes a new secret (keys only matter for live locks).  pg_upgrade and
 * physical copies carry it.  Whoever reads it can compute keys, and so can
 * aim a collision at a name: what an open transaction on its own name can
 * then do to that name is what an accidental collision does.
 *
 * One key function per database.  The key scheme follows the extension's
 * objects, not the library: on 1.0 and 1.1 objects (before ALTER EXTENSION
 * UPDATE) this library keys names the 1.1 way, as a 1.1 library in the same
 * database does; on 1.2 objects it keys them with the secret, and a 1.1
 * library refuses every call (the 1.2 update renames a column of the lease
 * table that the 1.1 library validates, relation.c).  The secret's row
 * records its scheme; a scheme this library does not know is refused, so a
 * later update that changes it must also change the table's definition (a
 * relcache invalidation, which makes every backend read the row again).
 *
 * Locktags (src/README, "Locks", lists the fields): the name's key and queue key carry
 * 64 bits of the name's hash; the epoch and quota keys carry no name.
 *
 * Copyright (c) 2026, the dlock developers
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "access/tableam.h"
#include "common/hashfn.h"
#include "executor/tuptable.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "port/pg_bswap.h"
#include "storage/lock.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/snapmgr.h"

#include "compat.h"
#include "dlock.h"

#define DLOCK_SECRET_BYTES		16

/* The scheme recorded in dlock_lock_key: SipHash-2-4 with its secret. */
#define DLOCK_KEY_SCHEME_SIPHASH	1

typedef enum LockKeyScheme
{
	LOCK_KEY_UNKNOWN,			/* not loaded in this backend yet */
	LOCK_KEY_LEGACY,			/* 1.0 and 1.1 objects: lookup3, seed 0 */
	LOCK_KEY_SIPHASH			/* 1.2 objects: SipHash-2-4, the secret */
} LockKeyScheme;

/*
 * The scheme and secret of the database's extension, as last loaded.  They
 * never change while the extension exists, so a call that is running keeps
 * using them even if an invalidation comes in meanwhile; relation.c loads
 * them again at the next call.
 */
static LockKeyScheme key_scheme = LOCK_KEY_UNKNOWN;
static uint64 key_k0;
static uint64 key_k1;

/* dlock.developer_key_bits: test only, see LockTagInit. */
static int	developer_key_bits = 64;

#define ROTL64(x, b) (((x) << (b)) | ((x) >> (64 - (b))))

#define SIPROUND \
	do { \
		v0 += v1; v1 = ROTL64(v1, 13); v1 ^= v0; v0 = ROTL64(v0, 32); \
		v2 += v3; v3 = ROTL64(v3, 16); v3 ^= v2; \
		v0 += v3; v3 = ROTL64(v3, 21); v3 ^= v0; \
		v2 += v1; v1 = ROTL64(v1, 17); v1 ^= v2; v2 = ROTL64(v2, 32); \
	} while (0)

/* Little-endian 64-bit load, whatever the alignment and the machine. */
static inline uint64
LoadLE64(const unsigned char *p)
{
	uint64		v;

	memcpy(&v, p, sizeof(v));
#ifdef WORDS_BIGENDIAN
	v = pg_bswap64(v);
#endif
	return v;
}

/*
 * SipHash-2-4 of in[0..len) with the key (k0, k1), the reference
 * algorithm: two compression rounds per 8-byte word, four finalization
 * rounds, the length in the top byte of the last word.
 */
static uint64
SipHash24(uint64 k0, uint64 k1, const unsigned char *in, size_t len)
{
	uint64		v0 = k0 ^ UINT64CONST(0x736f6d6570736575);
	uint64		v1 = k1 ^ UINT64CONST(0x646f72616e646f6d);
	uint64		v2 = k0 ^ UINT64CONST(0x6c7967656e657261);
	uint64		v3 = k1 ^ UINT64CONST(0x7465646279746573);
	uint64		b = ((uint64) len) << 56;
	size_t		left = len & 7;
	const unsigned char *end = in + (len - left);
	uint64		m;

	for (; in != end; in += 8)
	{
		m = LoadLE64(in);
		v3 ^= m;
		SIPROUND;
		SIPROUND;
		v0 ^= m;
	}
	switch (left)
	{
		case 7:
			b |= ((uint64) in[6]) << 48;
			/* FALLTHROUGH */
		case 6:
			b |= ((uint64) in[5]) << 40;
			/* FALLTHROUGH */
		case 5:
			b |= ((uint64) in[4]) << 32;
			/* FALLTHROUGH */
		case 4:
			b |= ((uint64) in[3]) << 24;
			/* FALLTHROUGH */
		case 3:
			b |= ((uint64) in[2]) << 16;
			/* FALLTHROUGH */
		case 2:
			b |= ((uint64) in[1]) << 8;
			/* FALLTHROUGH */
		case 1:
			b |= ((uint64) in[0]);
			break;
		case 0:
			break;
	}
	v3 ^= b;
	SIPROUND;
	SIPROUND;
	v0 ^= b;
	v2 ^= 0xff;
	SIPROUND;
	SIPROUND;
	SIPROUND;
	SIPROUND;
	return v0 ^ v1 ^ v2 ^ v3;
}

/*
 * The reference test vectors of SipHash-2-4 (vectors.h of the reference
 * implementation, as 64-bit values): key 00 01 .. 0f, message 00 01 ..
 * (n - 1) for n = 0 .. 63.
 */
static const uint64 siphash_vectors[64] = {
	UINT64CONST(0x726fdb47dd0e0e31), UINT64CONST(0x74f839c593dc67fd),
	UINT64CONST(0x0d6c8009d9a94f5a), UINT64CONST(0x85676696d7fb7e2d),
	UINT64CONST(0xcf2794e0277187b7), UINT64CONST(0x18765564cd99a68d),
	UINT64CONST(0xcbc9466e58fee3ce), UINT64CONST(0xab0200f58b01d137),
	UINT64CONST(0x93f5f5799a932462), UINT64CONST(0x9e0082df0ba9e4b0),
	UINT64CONST(0x7a5dbbc594ddb9f3), UINT64CONST(0xf4b32f46226bada7),
	UINT64CONST(0x751e8fbc860ee5fb), UINT64CONST(0x14ea5627c0843d90),
	UINT64CONST(0xf723ca908e7af2ee), UINT64CONST(0xa129ca6149be45e5),
	UINT64CONST(0x3f2acc7f57c29bdb), UINT64CONST(0x699ae9f52cbe4794),
	UINT64CONST(0x4bc1b3f0968dd39c), UINT64CONST(0xbb6dc91da77961bd),
	UINT64CONST(0xbed65cf21aa2ee98), UINT64CONST(0xd0f2cbb02e3b67c7),
	UINT64CONST(0x93536795e3a33e88), UINT64CONST(0xa80c038ccd5ccec8),
	UINT64CONST(0xb8ad50c6f649af94), UINT64CONST(0xbce192de8a85b8ea),
	UINT64CONST(0x17d835b85bbb15f3), UINT64CONST(0x2f2e6163076bcfad),
	UINT64CONST(0xde4daaaca71dc9a5), UINT64CONST(0xa6a2506687956571),
	UINT64CONST(0xad87a3535c49ef28), UINT64CONST(0x32d892fad841c342),
	UINT64CONST(0x7127512f72f27cce), UINT64CONST(0xa7f32346f95978e3),
	UINT64CONST(0x12e0b01abb051238), UINT64CONST(0x15e034d40fa197ae),
	UINT64CONST(0x314dffbe0815a3b4), UINT64CONST(0x027990f029623981),
	UINT64CONST(0xcadcd4e59ef40c4d), UINT64CONST(0x9abfd8766a33735c),
	UINT64CONST(0x0e3ea96b5304a7d0), UINT64CONST(0xad0c42d6fc585992),
	UINT64CONST(0x187306c89bc215a9), UINT64CONST(0xd4a60abcf3792b95),
	UINT64CONST(0xf935451de4f21df2), UINT64CONST(0xa9538f0419755787),
	UINT64CONST(0xdb9acddff56ca510), UINT64CONST(0xd06c98cd5c0975eb),
	UINT64CONST(0xe612a3cb9ecba951), UINT64CONST(0xc766e62cfcadaf96),
	UINT64CONST(0xee64435a9752fe72), UINT64CONST(0xa192d576b245165a),
	UINT64CONST(0x0a8787bf8ecb74b2), UINT64CONST(0x81b3e73d20b49b6f),
	UINT64CONST(0x7fa8220ba3b2ecea), UINT64CONST(0x245731c13ca42499),
	UINT64CONST(0xb78dbfaf3a8d83bd), UINT64CONST(0xea1ad565322a1a0b),
	UINT64CONST(0x60e61c23a3795013), UINT64CONST(0x6606d7e446282b93),
	UINT64CONST(0x6ca4ecb15c5f91e1), UINT64CONST(0x9f626da15c9625f3),
	UINT64CONST(0xe51b38608ef25f57), UINT64CONST(0x958a324ceb064572),
};

/*
 * Check SipHash24 against the reference vectors, once per backend, before
 * the first key is computed with it: a miscompiled or broken hash would
 * still be a function of the name, and nothing else would notice.
 */
static void
SipHashSelfTest(void)
{
	static bool passed = false;
	unsigned char key[DLOCK_SECRET_BYTES];
	unsigned char msg[64];
	int			i;

	if (passed)
		return;
	for (i = 0; i < DLOCK_SECRET_BYTES; i++)
		key[i] = (unsigned char) i;
	for (i = 0; i < 64; i++)
		msg[i] = (unsigned char) i;
	for (i = 0; i < 64; i++)
		if (SipHash24(LoadLE64(key), LoadLE64(key + 8), msg, i) !=
			siphash_vectors[i])
			elog(ERROR, "SipHash-2-4 does not match its reference vector %d", i);
	passed = true;
}

/* Called once, from _PG_init (before the "dlock" prefix is reserved). */
void
LockTagInit(void)
{
	DefineCustomIntVariable("dlock.developer_key_bits",
							"Test only: keeps this many low bits of each lock name's key.",
							"Below 64, names collide on purpose (0: all of them); "
							"only for tests of collisions.  Every backend of a "
							"database must use the same value.",
							&developer_key_bits,
							64,
							0,
							64,
							PGC_SUSET,
							GUC_NOT_IN_SAMPLE | GUC_NO_SHOW_ALL,
							NULL, NULL, NULL);
}

/* Refuse a secret table this library cannot use; nothing is cached. */
static void
LockKeyRefuse(const char *detail)
{
	key_scheme = LOCK_KEY_UNKNOWN;
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("relation \"dlock_lock_key\" of extension \"dlock\" does not hold a lock key this version of the library can use"),
			 errdetail_internal("%s", detail),
			 errhint("Drop and re-create the extension, or install the library that matches it.")));
}

/*
 * Load the key scheme of the extension's objects (relation.c, whenever it
 * validates them): legacy when key_table is InvalidOid (1.0 and 1.1
 * objects), else the one row of key_table, read without the caller's
 * privileges.  With w, the table's lock is waited for no longer than its
 * deadline (an acquire's: wait.c), and false then; with w NULL, as long as
 * it takes.  True once loaded.
 */
bool
LockKeyLoad(Oid key_table, const DlockWait *w)
{
	Relation	rel;
	Snapshot	snapshot;
	TableScanDesc scan;
	TupleTableSlot *slot;
	int			rows = 0;
	int32		scheme = 0;
	bytea	   *secret = NULL;

	if (!OidIsValid(key_table))
	{
		key_scheme = LOCK_KEY_LEGACY;
		return true;
	}
	SipHashSelfTest();
	if (w != NULL && !WaitForRelationLockMode(key_table, AccessShareLock, w))
		return false;
	rel = table_open(key_table, w != NULL ? NoLock : AccessShareLock);
	if (RelationGetDescr(rel)->natts != 2)
		LockKeyRefuse("The table does not have two columns.");
	snapshot = RegisterSnapshot(GetLatestSnapshot());
	scan = table_beginscan(rel, snapshot, 0, NULL);
	slot = table_slot_create(rel, NULL);
	while (table_scan_getnextslot(scan, ForwardScanDirection, slot))
	{
		bool		isnull1;
		bool		isnull2;
		Datum		d1 = slot_getattr(slot, 1, &isnull1);
		Datum		d2 = slot_getattr(slot, 2, &isnull2);

		if (++rows > 1 || isnull1 || isnull2)
			break;
		scheme = DatumGetInt32(d1);
		secret = DatumGetByteaPCopy(d2);
	}
	ExecDropSingleTupleTableSlot(slot);
	table_endscan(scan);
	UnregisterSnapshot(snapshot);
	table_close(rel, w != NULL ? NoLock : AccessShareLock);
	if (w != NULL)
		RelationLockGiveBackMode(key_table, AccessShareLock);

	if (rows != 1 || secret == NULL)
		LockKeyRefuse("The table must hold exactly one row, with no NULL.");
	if (scheme != DLOCK_KEY_SCHEME_SIPHASH)
		LockKeyRefuse(psprintf("Its key scheme is %d; this library knows only %d.",
							   scheme, DLOCK_KEY_SCHEME_SIPHASH));
	if (VARSIZE_ANY_EXHDR(secret) != DLOCK_SECRET_BYTES)
		LockKeyRefuse("Its secret is not 16 bytes long.");
	key_k0 = LoadLE64((unsigned char *) VARDATA_ANY(secret));
	key_k1 = LoadLE64((unsigned char *) VARDATA_ANY(secret) + 8);
	key_scheme = LOCK_KEY_SIPHASH;
	pfree(secret);
	return true;
}

/*
 * dlock_new_lock_key(): 16 bytes from pg_strong_random(), for the secret
 * (called only by the update script that creates dlock_lock_key).
 */
PG_FUNCTION_INFO_V1(dlock_new_lock_key);
Datum
dlock_new_lock_key(PG_FUNCTION_ARGS)
{
	bytea	   *secret = palloc(VARHDRSZ + DLOCK_SECRET_BYTES);

	SET_VARSIZE(secret, VARHDRSZ + DLOCK_SECRET_BYTES);
	if (!pg_strong_random(VARDATA(secret), DLOCK_SECRET_BYTES))
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("could not generate a random lock key")));
	PG_RETURN_BYTEA_P(secret);
}

/*
 * The 64-bit hash of a lock name: its lock key, and its row cache slot.
 * Every SQL-callable function validates the extension's objects first
 * (DlockGetRelations), which loads the key scheme.
 */
uint64
NameHash(text *name)
{
	const unsigned char *bytes = (unsigned char *) VARDATA_ANY(name);
	size_t		len = VARSIZE_ANY_EXHDR(name);
	uint64		hash;

	switch (key_scheme)
	{
		case LOCK_KEY_LEGACY:
			return DatumGetUInt64(hash_any_extended(bytes, len, 0));
		case LOCK_KEY_SIPHASH:
			hash = SipHash24(key_k0, key_k1, bytes, len);
			if (developer_key_bits < 64)
				hash &= (UINT64CONST(1) << developer_key_bits) - 1;
			return hash;
		case LOCK_KEY_UNKNOWN:
			break;
	}
	elog(ERROR, "dlock lock key used before it was loaded");
	return 0;					/* keep compiler quiet */
}

/*
 * The key of a lock name: 64 bits of its hash in fields 2 and 3, the
 * database in field 1, and DLOCK_LOCKTAG_NAME in field 4, a value no SQL
 * function reaches (see src/README, "Locks").
 */
void
NameLockTag(text *name, LOCKTAG *tag)
{
	uint64		hash = NameHash(name);

	SET_LOCKTAG_ADVISORY(*tag, MyDatabaseId, (uint32) (hash >> 32),
						 (uint32) hash, DLOCK_LOCKTAG_NAME);
}

/* The queue key of the name whose key is tag: the same hash, field 4 differs. */
void
NameQueueTag(const LOCKTAG *tag, LOCKTAG *queue_tag)
{
	SET_LOCKTAG_ADVISORY(*queue_tag, tag->locktag_field1,
						 tag->locktag_field2, tag->locktag_field3,
						 DLOCK_LOCKTAG_WAITERS);
}

/*
 * One stripe of the lock that orders token draws and jumps in this database
 * (token.c, TokenNextval): field3 is the stripe.
 */
void
TokenJumpTag(LOCKTAG *tag, int stripe)
{
	SET_LOCKTAG_ADVISORY(*tag, MyDatabaseId, 0, (uint32) stripe,
						 DLOCK_LOCKTAG_EPOCH);
}

/* The lease quota lock of a role (dlock.max_leases_per_role, acquire.c). */
void
RoleQuotaTag(Oid role, LOCKTAG *tag)
{
	SET_LOCKTAG_ADVISORY(*tag, MyDatabaseId, role, 0, DLOCK_LOCKTAG_QUOTA);
}
