/*-------------------------------------------------------------------------
 *
 * token.c
 *		Fencing tokens: one durable counter for the whole database.
 *
 * The counter is @extschema@.dlock_token_seq (CACHE 1, NO CYCLE, so values
 * are handed out in order across backends and never twice).  A token is
 * drawn only after the name's hand-over lock is won, so busy calls burn
 * none.  The transaction that draws one must commit durably before its
 * token can reach the client: otherwise a crash after an asynchronous
 * commit could lose the sequence's WAL and hand the same token out again.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "commands/sequence.h"
#include "utils/guc.h"

#include "dlock.h"

int64
TokenDraw(const DlockRelations *rels)
{
	int64		token = nextval_internal(rels->token_seq, false);

	/* Flush the commit record before the commit returns ... */
	ForceSyncCommit();

	/*
	 * ... and wait for synchronous standbys too, whatever the caller set.
	 * This lasts until the end of the transaction, like SET LOCAL.
	 */
	if (synchronous_commit < SYNCHRONOUS_COMMIT_REMOTE_FLUSH)
		(void) set_config_option("synchronous_commit", "on",
								 PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_LOCAL, true, 0, false);
	return token;
}
