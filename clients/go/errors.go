// Copyright (c) 2026, the dlock developers

package dlock

import (
	"errors"
	"fmt"
	"strings"
)

// StaleTokenSQLState is the SQLSTATE that dlock_assert() and the
// dlock_fence() trigger raise for a token that no longer holds its lease.
const StaleTokenSQLState = "LK001"

var (
	// ErrBusy: somebody else held the lease for the whole wait.
	ErrBusy = errors.New("dlock: lease is busy")
	// ErrLost: the lease is no longer ours. Errors that say so are
	// *LostError; test with errors.Is(err, ErrLost).
	ErrLost = errors.New("dlock: lease lost")
	// ErrStaleToken: the server refused a token as stale (SQLSTATE LK001).
	// Errors that say so are *StaleTokenError, or a driver's error with
	// SQLSTATE LK001 (see IsStaleToken).
	ErrStaleToken = errors.New("dlock: stale fencing token")
	// ErrReleased: the lease was released by this process; Lease.Err()
	// after a clean release, and Fence() on a released lease.
	ErrReleased = errors.New("dlock: lease released")
	// ErrNotInstalled: the dlock functions are not found in the database
	// (dlock is not installed, or its schema is not on search_path).
	ErrNotInstalled = errors.New("dlock: dlock is not installed in this database, or its " +
		"schema is not on search_path: a superuser runs CREATE EXTENSION dlock, and " +
		"ordinary roles need USAGE on its schema")
	// ErrNoAnswer: a statement got no answer from the server in time; its
	// connection was discarded.
	ErrNoAnswer = errors.New("dlock: no answer from the server in time")
)

// BusyError is the error of an acquire that found the lease held.
type BusyError struct {
	Name string
	Wait float64 // seconds waited
}

func (e *BusyError) Error() string {
	return fmt.Sprintf("dlock: lease %q is busy (waited %g s)", e.Name, e.Wait)
}

// Is makes errors.Is(err, ErrBusy) true.
func (e *BusyError) Is(target error) bool { return target == ErrBusy }

// LostError says why a lease was lost.
type LostError struct {
	Name   string
	Token  int64
	Reason string
	Err    error // the underlying error, if any (a *StaleTokenError, a driver error)
}

func (e *LostError) Error() string {
	return fmt.Sprintf("dlock: lease %q (token %d) lost: %s", e.Name, e.Token, e.Reason)
}

// Is makes errors.Is(err, ErrLost) true.
func (e *LostError) Is(target error) bool { return target == ErrLost }

// Unwrap returns the underlying error.
func (e *LostError) Unwrap() error { return e.Err }

// StaleTokenError is a refusal of the server (SQLSTATE LK001): the token
// no longer holds its lease. Err is the driver's error. The transaction it
// happened in is aborted: roll it back, and write nothing more under this
// lease.
type StaleTokenError struct {
	Name  string
	Token int64
	Err   error
}

func (e *StaleTokenError) Error() string {
	if e.Name == "" {
		return fmt.Sprintf("dlock: stale fencing token: %v", e.Err)
	}
	return fmt.Sprintf("dlock: stale fencing token %d for lease %q: %v", e.Token, e.Name, e.Err)
}

// Is makes errors.Is(err, ErrStaleToken) true.
func (e *StaleTokenError) Is(target error) bool { return target == ErrStaleToken }

// Unwrap returns the driver's error.
func (e *StaleTokenError) Unwrap() error { return e.Err }

// sqlState is what the errors of lib/pq (*pq.Error) and pgx
// (*pgconn.PgError) have in common.
type sqlState interface{ SQLState() string }

// SQLState returns the SQLSTATE of a driver error (lib/pq, pgx) anywhere
// in err's chain, or "".
func SQLState(err error) string {
	var s sqlState
	if errors.As(err, &s) {
		return s.SQLState()
	}
	return ""
}

// IsStaleToken reports whether err says a fencing token was stale: a
// *StaleTokenError, or a driver error with SQLSTATE LK001 (a write that a
// dlock_fence() trigger refused).
func IsStaleToken(err error) bool {
	return errors.Is(err, ErrStaleToken) || SQLState(err) == StaleTokenSQLState
}

// StaleTokenErrors turns a driver error with SQLSTATE LK001 into a
// *StaleTokenError; other errors pass through unchanged.
func StaleTokenErrors(err error) error {
	if err != nil && !errors.Is(err, ErrStaleToken) && SQLState(err) == StaleTokenSQLState {
		return &StaleTokenError{Err: err}
	}
	return err
}

// notInstalled says whether err is "function dlock_...(...) does not exist".
func notInstalled(err error) bool {
	return SQLState(err) == "42883" && strings.Contains(err.Error(), "dlock_")
}

type notInstalledError struct{ err error }

func (e *notInstalledError) Error() string {
	return ErrNotInstalled.Error() + " (" + e.err.Error() + ")"
}
func (e *notInstalledError) Is(target error) bool {
	return target == ErrNotInstalled
}
func (e *notInstalledError) Unwrap() error { return e.err }

// noAnswerError is a statement given up without an answer: it wraps
// ErrNoAnswer and the cause (a context's error, the driver's), whichever
// ended it (Go 1.19's errors has no multiple %w).
type noAnswerError struct {
	msg   string
	cause error
}

func (e *noAnswerError) Error() string { return e.msg }

// Is makes errors.Is(err, ErrNoAnswer) true.
func (e *noAnswerError) Is(target error) bool { return target == ErrNoAnswer }

// Unwrap returns the cause.
func (e *noAnswerError) Unwrap() error { return e.cause }

// releasedStaleError is a fence refused as stale while this process's
// release was in flight: errors.Is(err, ErrReleased) and
// errors.Is(err, ErrStaleToken) are both true, and errors.As finds the
// *StaleTokenError.
type releasedStaleError struct {
	name  string
	stale *StaleTokenError
}

func (e *releasedStaleError) Error() string {
	return fmt.Sprintf("dlock: cannot fence with lease %q: %v, its release in flight (%v)",
		e.name, ErrReleased, e.stale)
}

// Is makes errors.Is(err, ErrReleased) true.
func (e *releasedStaleError) Is(target error) bool { return target == ErrReleased }

// Unwrap returns the *StaleTokenError.
func (e *releasedStaleError) Unwrap() error { return e.stale }
