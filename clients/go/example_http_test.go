// Copyright (c) 2026, the dlock developers

package dlock_test

// The seed's pattern: an HTTP endpoint that runs a job at most once at a
// time, across every replica of the service: 200 with the token when the
// job ran here, 409 when it is already running somewhere, 503 when the
// lease was lost before the job's fenced write committed (or the database
// is out of reach). TestC13HTTPExample runs it.

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	dlock "github.com/dlock-project/dlock/clients/go"
)

// A Job does its work under the lease, and writes its result in tx, whose
// fenced writes carry the lease's token (Lease.Fence ran first in it).
// ctx is cancelled the moment the lease is lost.
type Job func(ctx context.Context, tx *sql.Tx, token int64) error

// JobHandler serves POST: the job named name, at most once at a time.
func JobHandler(db *sql.DB, name string, ttl time.Duration, job Job) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "POST only", http.StatusMethodNotAllowed)
			return
		}
		acquireCtx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		lease, err := dlock.Acquire(acquireCtx, db, name, ttl, dlock.WithOwner("jobs"))
		cancel()
		if errors.Is(err, dlock.ErrBusy) {
			reply(w, http.StatusConflict, map[string]any{"error": name + " is already running"})
			return
		}
		if err != nil {
			w.Header().Set("Retry-After", "5")
			reply(w, http.StatusServiceUnavailable, map[string]any{"error": err.Error()})
			return
		}
		defer lease.Release(context.Background()) // bounded; a loss is answered below
		// The transaction lives under the lease's context: lost, and
		// database/sql rolls it back; its fenced writes are refused anyway.
		ctx := lease.Context()
		err = func() error {
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			defer tx.Rollback()
			if err := lease.Fence(ctx, tx); err != nil {
				return err
			}
			if err := job(ctx, tx, lease.Token()); err != nil {
				return err
			}
			return tx.Commit()
		}()
		switch {
		case err == nil:
			// Decided by the write: once the fenced transaction committed,
			// the job ran here, even if the lease is lost afterwards.
			reply(w, http.StatusOK, map[string]any{"token": lease.Token()})
		case dlock.IsStaleToken(err) || lease.Err() != nil:
			reply(w, http.StatusServiceUnavailable, map[string]any{
				"error": fmt.Sprintf("the lease was lost before the job's write committed: %v", lease.Err())})
		default:
			reply(w, http.StatusInternalServerError, map[string]any{"error": err.Error()})
		}
	})
}

func reply(w http.ResponseWriter, code int, body map[string]any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(body)
}

func Example_httpEndpoint() {
	db, err := sql.Open("postgres", "dbname=app")
	if err != nil {
		panic(err)
	}
	// The report table has a dlock_fence('nightly-report', 'token') trigger.
	http.Handle("/jobs/nightly-report", JobHandler(db, "nightly-report", time.Minute,
		func(ctx context.Context, tx *sql.Tx, token int64) error {
			_, err := tx.ExecContext(ctx, "INSERT INTO report (job, token, body) VALUES ('nightly-report', NULL, 'done') "+
				"ON CONFLICT (job) DO UPDATE SET token = excluded.token, body = excluded.body")
			return err
		}))
	_ = http.ListenAndServe(":8080", nil)
}
