// Copyright (c) 2026, the dlock developers

package dlock

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// LeaderCallbacks are called by RunLeader, as client-go's leaderelection
// calls its own.
type LeaderCallbacks struct {
	// OnStartedLeading runs in a goroutine of its own when this process is
	// elected; ctx is the term's Context(), cancelled when the term is
	// lost, or when RunLeader's ctx is done. It must return once ctx is
	// done: RunLeader waits for it before it campaigns again, and, when
	// its ctx is done, before it releases the term (the term is renewed
	// until then, so no other leader is elected while this one winds
	// down).
	OnStartedLeading func(ctx context.Context, term *Lease)
	// OnStoppedLeading is called as soon as a term is lost, or, when
	// RunLeader's ctx is done, once the term is released (after
	// OnStartedLeading returned); term.Err() says why.
	OnStoppedLeading func(term *Lease)
	// OnNewLeader is called when the leader observed changes: with this
	// process's Lease.OwnerID() when it is elected, with the other
	// leader's owner string when a campaign finds the lease held.
	OnNewLeader func(identity string)
}

// LeaderConfig configures RunLeader.
type LeaderConfig struct {
	Name  string        // the lock name of the election
	Owner string        // this process's label (a host name); required
	TTL   time.Duration // a term's ttl
	// RetryPeriod is how often a campaign tries again (default TTL/3).
	RetryPeriod time.Duration
	Callbacks   LeaderCallbacks
}

// RunLeader campaigns for leadership until ctx is done: each campaign
// acquires cfg.Name with this process's owner string every RetryPeriod
// until it is elected; a term is renewed by acquiring again with the same
// owner string, and ends when it is lost (a renewal refused or past its
// deadline: a stalled leader is replaced once its term expires) or when ctx
// is done (the term's context is then cancelled, and the term released
// once OnStartedLeading has returned). After a lost term it campaigns
// again. It returns ctx.Err(), or an error that no retry can fix (dlock not
// installed).
func RunLeader(ctx context.Context, db *sql.DB, cfg LeaderConfig) error {
	p, err := FromDB(db)
	if err != nil {
		return err
	}
	return RunLeaderFrom(ctx, p, cfg)
}

// RunLeaderFrom is RunLeader on any Pool.
func RunLeaderFrom(ctx context.Context, p Pool, cfg LeaderConfig) error {
	if cfg.Owner == "" {
		return errors.New("dlock: a leader needs an owner label of its own (e.g. the host name)")
	}
	if cfg.TTL <= 0 || cfg.RetryPeriod < 0 {
		return fmt.Errorf("dlock: a leader's TTL must be above zero and RetryPeriod zero or more (TTL %v, RetryPeriod %v)",
			cfg.TTL, cfg.RetryPeriod)
	}
	if cfg.RetryPeriod == 0 {
		cfg.RetryPeriod = cfg.TTL / 3
	}
	id, err := MakeOwnerID(cfg.Owner)
	if err != nil {
		return err
	}
	o := options{ownerID: id, renew: true, reacquire: true}
	cb := cfg.Callbacks
	seen := ""
	observe := func(who string) {
		if who != seen {
			seen = who
			if cb.OnNewLeader != nil {
				cb.OnNewLeader(who)
			}
		}
	}
	for {
		term, err := campaign(ctx, p, cfg, o, observe)
		if err != nil {
			return err
		}
		observe(id)
		started := make(chan struct{})
		go func() {
			defer close(started)
			if cb.OnStartedLeading != nil {
				cb.OnStartedLeading(term.Context(), term)
			}
		}()
		select {
		case <-term.Done():
			if cb.OnStoppedLeading != nil {
				cb.OnStoppedLeading(term)
			}
			<-started
		case <-ctx.Done():
			// Stop the leader's work first (the term's context), wait
			// for OnStartedLeading to return, and only then give the
			// term back: another candidate is elected once this one
			// has stopped, never while it still winds down. The term
			// is renewed meanwhile.
			term.cancel()
			<-started
			rctx, cancel := context.WithTimeout(context.Background(), releaseMax)
			_ = term.Release(rctx)
			cancel()
			if cb.OnStoppedLeading != nil {
				cb.OnStoppedLeading(term)
			}
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// campaign acquires until elected; busy answers and failures alike are
// retried every RetryPeriod.
func campaign(ctx context.Context, p Pool, cfg LeaderConfig, o options, observe func(string)) (*Lease, error) {
	for {
		term, err := acquire(ctx, p, cfg.Name, cfg.TTL, o)
		if err == nil {
			return term, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if errors.Is(err, ErrNotInstalled) {
			return nil, err
		}
		if errors.Is(err, ErrBusy) {
			if who, err := leaderOf(ctx, p, cfg.Name, cfg.RetryPeriod); err == nil && who != "" {
				observe(who)
			}
		}
		t := time.NewTimer(cfg.RetryPeriod)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}

// leaderOf returns the owner of the held lease name ("" if none or anonymous).
func leaderOf(ctx context.Context, p Pool, name string, timeout time.Duration) (string, error) {
	n, err := quote(name)
	if err != nil {
		return "", err
	}
	s, err := session(ctx, p, timeout)
	if err != nil {
		return "", err
	}
	var owner sql.NullString
	err, ok := bounded(ctx, timeout, s, func(ctx context.Context) error {
		err := s.QueryRow(ctx, fmt.Sprintf("SELECT (SELECT owner FROM dlock_leases WHERE name = %s AND held)", n), &owner)
		return err
	})
	if ok {
		s.Close()
	}
	return owner.String, err
}
