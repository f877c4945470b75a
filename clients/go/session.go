// Copyright (c) 2026, the dlock developers

package dlock

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Every statement the client sends has no parameters: its values are
// literals written here. A statement without parameters is sent with the
// simple query protocol by lib/pq, and by pgx when it is given
// pgx.QuerySimpleProtocol(true) (registered by the dlockpgx package), so
// nothing is ever prepared on the server, whatever the user's pool does:
// behind PgBouncer in transaction mode a prepared statement, even lib/pq's
// unnamed one (Parse and Bind in two round trips), may land on another
// server connection.

// quote returns s as an E” string literal: its meaning does not depend
// on standard_conforming_strings.
func quote(s string) (string, error) {
	if strings.IndexByte(s, 0) >= 0 {
		return "", fmt.Errorf("dlock: %q contains a NUL byte", s)
	}
	if !utf8.ValidString(s) {
		return "", fmt.Errorf("dlock: %q is not valid UTF-8", s)
	}
	s = strings.ReplaceAll(s, `\`, `\\`)
	s = strings.ReplaceAll(s, `'`, `''`)
	return "E'" + s + "'", nil
}

// interval returns d as an interval literal, in whole microseconds
// (rounded up, so a positive duration stays positive).
func interval(d time.Duration) string {
	us := (d + time.Microsecond - 1) / time.Microsecond
	if d <= 0 {
		us = d / time.Microsecond
	}
	return fmt.Sprintf("'%d microseconds'::pg_catalog.interval", int64(us))
}

func nullableQuote(s *string) (string, error) {
	if s == nil {
		return "NULL::pg_catalog.text", nil
	}
	return quote(*s)
}

// The drivers whose parameterless statements still need an argument to be
// sent with the simple protocol (pgx's QuerySimpleProtocol), by the
// package path of their database/sql driver type.
var (
	driversMu sync.RWMutex
	drivers   = map[string][]any{"github.com/lib/pq": nil}
	// Drivers that prepare even parameterless statements unless told
	// otherwise: refused until registered.
	preparing = map[string]string{
		"github.com/jackc/pgx/v4/stdlib": "import github.com/dlock-project/dlock/clients/go/dlockpgx",
		"github.com/jackc/pgx/v5/stdlib": "register pgx.QueryExecModeSimpleProtocol with dlock.RegisterDriver (README: pgx v5)",
	}
)

// RegisterDriver tells the client which leading arguments make the
// database/sql driver whose driver type lives in package pkgPath send a
// statement without parameters with the simple query protocol. The
// dlockpgx package registers pgx v4's stdlib driver in its init.
func RegisterDriver(pkgPath string, args ...any) {
	driversMu.Lock()
	defer driversMu.Unlock()
	drivers[pkgPath] = args
}

// driverArgs returns the leading arguments for db's driver.
func driverArgs(db *sql.DB) ([]any, error) {
	t := reflect.TypeOf(db.Driver())
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	path := t.PkgPath()
	driversMu.RLock()
	args, ok := drivers[path]
	driversMu.RUnlock()
	if ok {
		return args, nil
	}
	if how, refused := preparing[path]; refused {
		return nil, fmt.Errorf("dlock: the database/sql driver %s prepares statements on the "+
			"server, which breaks behind a transaction pooler: %s", path, how)
	}
	return nil, nil
}

// A Session is one connection taken from a pool, for the statements of one
// lease: its acquire, renewals and release.
type Session interface {
	// QueryRow runs a statement without parameters (autocommit) and scans
	// its first row into dest.
	QueryRow(ctx context.Context, query string, dest ...any) error
	// Close gives the connection back to its pool.
	Close()
	// Discard closes the connection: it is never used again.
	Discard()
}

// A Pool hands out sessions. FromDB makes one of a *sql.DB; the dlockpgx
// package one of a pgxpool.Pool.
type Pool interface {
	Session(ctx context.Context) (Session, error)
}

type dbPool struct {
	db   *sql.DB
	args []any
}

// FromDB returns the Pool of a *sql.DB (lib/pq, pgx's stdlib driver once
// dlockpgx is imported, or any driver that sends parameterless statements
// with the simple query protocol).
func FromDB(db *sql.DB) (Pool, error) {
	args, err := driverArgs(db)
	if err != nil {
		return nil, err
	}
	return &dbPool{db: db, args: args}, nil
}

func (p *dbPool) Session(ctx context.Context) (Session, error) {
	c, err := p.db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	return &dbSession{c: c, args: p.args}, nil
}

type dbSession struct {
	c    *sql.Conn
	args []any
}

func (s *dbSession) QueryRow(ctx context.Context, query string, dest ...any) error {
	return s.c.QueryRowContext(ctx, query, s.args...).Scan(dest...)
}

func (s *dbSession) Close() { _ = s.c.Close() }

func (s *dbSession) Discard() {
	// database/sql closes a connection whose Raw callback says it is bad.
	_ = s.c.Raw(func(any) error { return driver.ErrBadConn })
	_ = s.c.Close()
}

// bounded runs f with a context that ends at timeout, and returns by then
// whatever f does: a driver that does not give up on a silent network
// (lib/pq waits for the server's answer to its cancel request) is left
// behind in its goroutine, and its session is discarded once f returns.
// Any error discards the session too. ok is false when the session was
// discarded: take another one.
func bounded(parent context.Context, timeout time.Duration, s Session, f func(ctx context.Context) error) (err error, ok bool) {
	ctx, cancel := context.WithTimeout(parent, timeout)
	done := make(chan error, 1)
	go func() {
		e := f(ctx)
		done <- e
		if e != nil {
			s.Discard()
		}
	}()
	select {
	case err = <-done:
		cancel()
		return err, err == nil
	case <-ctx.Done():
		cancel()
		select {
		case err = <-done: // it gave up in time
			if err == nil {
				return nil, true
			}
			return fmt.Errorf("%w (%v)", ErrNoAnswer, err), false
		default:
		}
		go func() {
			if e := <-done; e == nil {
				s.Discard() // answered too late: never reused
			}
		}()
		if parent.Err() != nil {
			return parent.Err(), false
		}
		return fmt.Errorf("%w after %v", ErrNoAnswer, timeout), false
	}
}
