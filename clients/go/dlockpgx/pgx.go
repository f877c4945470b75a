// Copyright (c) 2026, the dlock developers

// Package dlockpgx connects the dlock client to pgx v4: importing it lets
// dlock.Acquire use database/sql handles opened with pgx's stdlib driver
// (github.com/jackc/pgx/v4/stdlib), and Acquire, RunLeader and Fence here
// take a *pgxpool.Pool and a pgx.Tx. Every statement is sent with the
// simple query protocol (pgx.QuerySimpleProtocol), so nothing is prepared
// on the server, whatever the pool's statement cache is set to.
package dlockpgx

import (
	"context"
	"time"

	dlock "github.com/dlock-project/dlock/clients/go"
	"github.com/jackc/pgx/v4"
	"github.com/jackc/pgx/v4/pgxpool"
)

func init() {
	dlock.RegisterDriver("github.com/jackc/pgx/v4/stdlib", pgx.QuerySimpleProtocol(true))
}

// Pool returns the dlock.Pool of a pgxpool.Pool.
func Pool(p *pgxpool.Pool) dlock.Pool { return pool{p} }

type pool struct{ p *pgxpool.Pool }

func (p pool) Session(ctx context.Context) (dlock.Session, error) {
	c, err := p.p.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	return &session{c}, nil
}

type session struct{ c *pgxpool.Conn }

func (s *session) QueryRow(ctx context.Context, query string, dest ...any) error {
	return s.c.QueryRow(ctx, query, pgx.QuerySimpleProtocol(true)).Scan(dest...)
}

func (s *session) Close() { s.c.Release() }

func (s *session) Discard() {
	// Closed, then given back: the pool destroys a closed connection.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = s.c.Conn().Close(ctx)
	s.c.Release()
}

// Acquire is dlock.Acquire on a pgxpool.Pool.
func Acquire(ctx context.Context, p *pgxpool.Pool, name string, ttl time.Duration, opts ...dlock.Option) (*dlock.Lease, error) {
	return dlock.AcquireFrom(ctx, Pool(p), name, ttl, opts...)
}

// RunLeader is dlock.RunLeader on a pgxpool.Pool.
func RunLeader(ctx context.Context, p *pgxpool.Pool, cfg dlock.LeaderConfig) error {
	return dlock.RunLeaderFrom(ctx, Pool(p), cfg)
}

// Fence is Lease.Fence for a pgx.Tx.
func Fence(ctx context.Context, l *dlock.Lease, tx pgx.Tx) error {
	return l.FenceWith(ctx, func(ctx context.Context, query string) error {
		_, err := tx.Exec(ctx, query, pgx.QuerySimpleProtocol(true))
		return err
	})
}
