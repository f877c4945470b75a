// Copyright (c) 2026, the dlock developers

// Package dlock is the Go client of dlock, PostgreSQL lease locks with
// fencing tokens: Acquire holds a lease, renewed in the background on a
// connection of its own, with a context cancelled the moment the lease is
// lost (Lease.Context, Lease.Err); Lease.Fence declares its token in a
// transaction, so that the database refuses the writes of a stale holder;
// RunLeader elects one leader among replicas.
//
// It works on database/sql with lib/pq, or pgx v4's stdlib driver once the
// dlockpgx package is imported (which also adapts a pgxpool.Pool). Every
// statement it sends has no parameters and goes with the simple query
// protocol, so it works behind PgBouncer in transaction mode. The failure
// model, shared with the Python and Node clients, is docs/clients.md in the
// dlock repository.
package dlock
