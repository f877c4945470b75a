// Copyright (c) 2026, the dlock developers

package dlock

import (
	"context"
	"crypto/rand"
	"database/sql"
	"database/sql/driver"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"
)

// How much longer than its wait an acquire may take before the client
// gives up on it (a network that swallows packets after the connect).
const acquireMargin = 5 * time.Second

// A release waits at most releaseMax, and at least releaseMin (else the
// time left on the lease, which expires by itself if the release never
// arrives).
const (
	releaseMax = 5 * time.Second
	releaseMin = 1 * time.Second
)

// deadlineMargin is how much earlier than the server's expiry (as far as
// the client can tell: a ttl after the confirmation was asked for) the
// local deadline falls: a tenth of the ttl, at most 100 ms, so that a late
// timer or a short pause of the process does not let the lease be
// reported held past the server's expiry.
func deadlineMargin(ttl time.Duration) time.Duration {
	return minDuration(ttl/10, 100*time.Millisecond)
}

// OwnerMaxBytes is the longest owner label: the server takes 255 bytes, and
// the client adds ":<pid>:<12 hex digits>".
const OwnerMaxBytes = 200

// An Option changes what Acquire does.
type Option func(*options)

type options struct {
	wait      time.Duration
	owner     string
	ownerID   string
	onLost    func(*Lease)
	renew     bool
	reacquire bool
}

// WithWait makes Acquire wait up to d for a lease held by somebody else
// (default 0: answer ErrBusy at once).
func WithWait(d time.Duration) Option { return func(o *options) { o.wait = d } }

// WithOwner labels the lease (a host name, a service): it shows in
// dlock_leases.owner as "<label>:<pid>:<random>" (Lease.OwnerID), new for
// every lease, so two leases with one label never share a token.
func WithOwner(label string) Option { return func(o *options) { o.owner = label } }

// WithOnLost calls f once when the lease is lost, from the goroutine that
// finds out (the renewer's, or one calling Err, Context or Fence after the
// deadline, or Release). Keep it short; Lease.Context() is cancelled just
// before. It may call Release (which returns the loss at once).
func WithOnLost(f func(*Lease)) Option { return func(o *options) { o.onLost = f } }

// WithoutRenewal holds the lease for its ttl only: nothing renews it.
func WithoutRenewal() Option { return func(o *options) { o.renew = false } }

// MakeOwnerID returns the owner string sent to the server for a label:
// "<label>:<pid>:<random>".
func MakeOwnerID(label string) (string, error) {
	if label == "" || len(label) > OwnerMaxBytes {
		return "", fmt.Errorf("dlock: an owner label is 1 to %d bytes, not %d", OwnerMaxBytes, len(label))
	}
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s:%d:%s", label, os.Getpid(), hex.EncodeToString(b[:])), nil
}

type state int

const (
	held state = iota
	lost
	released
)

// A Lease is a lock held until it is released or lost. It is safe for
// concurrent use.
type Lease struct {
	name    string
	ownerID string
	ttl     time.Duration
	opts    options
	pool    Pool
	args    []any // leading arguments of fenced statements (see RegisterDriver)

	ctx    context.Context
	cancel context.CancelFunc

	mu        sync.Mutex
	token     int64
	sent      time.Duration // now() when the last confirmation was asked for
	deadline  time.Duration // now() until which the lease surely holds
	state     state
	err       error
	releasing bool    // a release is in flight: a stale fence is its doing
	sess      Session // the renewer's; nil when it must take a new one

	stopRenewer context.CancelFunc
	renewerDone chan struct{}
	releaseMu   sync.Mutex
}

// Acquire takes the lease name for ttl, committed when it returns: the
// token is valid at once. It returns an error wrapping ErrBusy if somebody
// else still holds it after the wait (WithWait), and waits at most the
// wait plus 5 s for the server's answer (then ErrNoAnswer: if the acquire
// committed meanwhile, that lease is nobody's and expires by itself at its
// ttl; the same when ctx ends first). A lease granted after a wait has
// its deadline from the server's dlock_remaining, asked right after the
// grant (see README: Acquire). The lease's statements run on a
// connection taken from db's pool for the lease's lifetime; a goroutine
// renews the lease on it at a third of its ttl until Release, or until the
// lease is lost (see Context).
func Acquire(ctx context.Context, db *sql.DB, name string, ttl time.Duration, opts ...Option) (*Lease, error) {
	p, err := FromDB(db)
	if err != nil {
		return nil, err
	}
	return AcquireFrom(ctx, p, name, ttl, opts...)
}

// AcquireFrom is Acquire on any Pool (the dlockpgx package makes one of
// a pgxpool.Pool).
func AcquireFrom(ctx context.Context, p Pool, name string, ttl time.Duration, opts ...Option) (*Lease, error) {
	o := options{renew: true}
	for _, f := range opts {
		f(&o)
	}
	if o.owner != "" && o.ownerID == "" {
		id, err := MakeOwnerID(o.owner)
		if err != nil {
			return nil, err
		}
		o.ownerID = id
	}
	return acquire(ctx, p, name, ttl, o)
}

func acquire(ctx context.Context, p Pool, name string, ttl time.Duration, o options) (*Lease, error) {
	if ttl <= 0 || o.wait < 0 {
		return nil, fmt.Errorf("dlock: ttl must be above zero and wait zero or more (ttl %v, wait %v)", ttl, o.wait)
	}
	l := &Lease{name: name, ownerID: o.ownerID, ttl: ttl, opts: o, pool: p}
	if dp, ok := p.(*dbPool); ok {
		l.args = dp.args
	}
	q, err := l.acquireSQL(o.wait)
	if err != nil {
		return nil, err
	}
	budget := o.wait + acquireMargin
	end := now() + budget
	var s Session
	var token sql.NullInt64
	var sent time.Duration
	var ok bool
	// A connection the pool kept after the server closed it (a restart, a
	// failover) fails without an answer: the acquire is tried again on
	// another (the pool's other idle ones may be stale too: up to ten
	// times), within the budget. Had the first attempt
	// committed after all, the second finds the lease busy (or, with an
	// owner, renews it and gets the same token): never two holders.
	for attempt := 0; ; attempt++ {
		if s, err = session(ctx, p, end-now()); err != nil {
			return nil, err
		}
		sent = now()
		err, ok = bounded(ctx, end-now(), s, func(ctx context.Context) error {
			return s.QueryRow(ctx, q, &token)
		})
		if !brokenConn(ctx, err) || attempt == 9 || end-now() <= 0 {
			break
		}
	}
	if err != nil {
		if notInstalled(err) {
			return nil, &notInstalledError{err}
		}
		if errors.Is(err, ErrNoAnswer) {
			return nil, fmt.Errorf("dlock: acquire of lease %q got no answer in %v: its connection is "+
				"dropped; if it committed, the lease expires by itself at its ttl (%w)", name, budget, err)
		}
		return nil, fmt.Errorf("dlock: acquire of lease %q: %w", name, err)
	}
	if !token.Valid {
		if ok {
			s.Close()
		}
		return nil, &BusyError{Name: name, Wait: o.wait.Seconds()}
	}
	l.token, l.sent, l.deadline = token.Int64, sent, sent+ttl-deadlineMargin(ttl)
	if now()-sent > ttl/10 {
		// The acquire waited (or its answer was slow): sent+ttl
		// undercounts what the server granted, and may even be past.
		// Ask the server how long the lease holds, counted from before
		// that question: still never later than the server's expiry.
		s = l.confirmGrant(ctx, s)
	}
	l.sess = s
	l.ctx, l.cancel = context.WithCancel(context.Background())
	l.renewerDone = make(chan struct{})
	if o.renew {
		rctx, stop := context.WithCancel(context.Background())
		l.stopRenewer = stop
		go l.renewLoop(rctx)
	} else {
		l.stopRenewer = func() {}
		close(l.renewerDone)
		go l.expireLoop()
	}
	return l, nil
}

// confirmGrant measures the deadline of a lease just granted from the
// server's dlock_remaining, asked on s (or a new session when s is nil),
// and returns the session to keep (nil if it was discarded). On any
// failure the deadline stays at the acquire's sent+ttl (fail-closed).
func (l *Lease) confirmGrant(ctx context.Context, s Session) Session {
	timeout := minDuration(l.ttl, acquireMargin)
	if s == nil {
		var err error
		if s, err = session(ctx, l.pool, timeout); err != nil {
			return nil
		}
	}
	n, _ := quote(l.name) // checked by the acquire
	q := fmt.Sprintf("SELECT (extract(epoch FROM dlock_remaining(%s, %d)) * 1000000)::pg_catalog.int8",
		n, l.token)
	var us sql.NullInt64
	sent := now()
	err, ok := bounded(ctx, timeout, s, func(ctx context.Context) error {
		return s.QueryRow(ctx, q, &us)
	})
	if !ok {
		s = nil
	}
	if d := sent + time.Duration(us.Int64)*time.Microsecond - deadlineMargin(l.ttl); err == nil && us.Valid && d > l.deadline {
		l.sent, l.deadline = sent, d
	}
	return s
}

// brokenConn says whether err is a broken connection: an error of the
// connection itself, with no SQLSTATE, that was neither a timeout nor ctx.
func brokenConn(ctx context.Context, err error) bool {
	return err != nil && ctx.Err() == nil && SQLState(err) == "" && !errors.Is(err, ErrNoAnswer) &&
		(errors.Is(err, driver.ErrBadConn) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
			errors.As(err, new(net.Error)))
}

// session takes a session from p, giving up after timeout (a connect that
// hangs): a session that arrives later is given back.
func session(ctx context.Context, p Pool, timeout time.Duration) (Session, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	type got struct {
		s   Session
		err error
	}
	ch := make(chan got, 1)
	go func() {
		s, err := p.Session(ctx)
		ch <- got{s, err}
	}()
	select {
	case g := <-ch:
		return g.s, g.err
	case <-ctx.Done():
		go func() {
			if g := <-ch; g.err == nil {
				g.s.Discard()
			}
		}()
		return nil, fmt.Errorf("%w: no connection in %v (%v)", ErrNoAnswer, timeout, ctx.Err())
	}
}

func (l *Lease) acquireSQL(wait time.Duration) (string, error) {
	n, err := quote(l.name)
	if err != nil {
		return "", err
	}
	var owner *string
	if l.ownerID != "" {
		owner = &l.ownerID
	}
	o, err := nullableQuote(owner)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("SELECT dlock_acquire(%s, %s, %s, %s)", n, interval(l.ttl), interval(wait), o), nil
}

func (l *Lease) tokenSQL(f string, extra string) string {
	n, _ := quote(l.name) // checked by the acquire
	return fmt.Sprintf("SELECT %s(%s, %d%s)", f, n, l.token, extra)
}

// Name returns the lease's name.
func (l *Lease) Name() string { return l.name }

// Token returns the lease's fencing token.
func (l *Lease) Token() int64 { return l.token }

// OwnerID returns what the server sees as the owner ("" without WithOwner).
func (l *Lease) OwnerID() string { return l.ownerID }

// TTL returns the lease's time to live, as given.
func (l *Lease) TTL() time.Duration { return l.ttl }

// Context returns a context that is cancelled the moment the lease is lost
// (Err then returns a *LostError), or when it is released (Err then
// returns ErrReleased). Run the lease's work under it.
func (l *Lease) Context() context.Context {
	l.checkDeadline()
	return l.ctx
}

// Done is Context().Done().
func (l *Lease) Done() <-chan struct{} { return l.Context().Done() }

// Err returns nil while the lease is held, a *LostError once it is lost
// (also once its deadline has passed, before the renewer says so), and
// ErrReleased after a release.
func (l *Lease) Err() error {
	l.checkDeadline()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// Remaining returns how long the lease is sure to be held: the last
// expiry the server confirmed, counted down on a monotonic clock that
// also counts a suspended machine (never the wall clock); 0 once lost or
// released.
func (l *Lease) Remaining() time.Duration {
	l.checkDeadline()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.state != held {
		return 0
	}
	if left := l.deadline - now(); left > 0 {
		return left
	}
	return 0
}

func (l *Lease) checkDeadline() {
	l.mu.Lock()
	past := l.state == held && now() >= l.deadline
	l.mu.Unlock()
	if past {
		l.markLost("not renewed before its deadline", nil)
	}
}

// markLost ends the lease as lost; the first time, it tells the
// application (the context, then the callback). It returns the lease's
// error.
func (l *Lease) markLost(reason string, cause error) error {
	l.mu.Lock()
	if l.state != held {
		err := l.err
		l.mu.Unlock()
		return err
	}
	l.state, l.err = lost, &LostError{Name: l.name, Token: l.token, Reason: reason, Err: cause}
	err := l.err
	l.mu.Unlock()
	l.cancel()
	if l.opts.onLost != nil {
		l.opts.onLost(l)
	}
	return err
}

func (l *Lease) markReleased() {
	l.mu.Lock()
	if l.state == held {
		l.state, l.err = released, ErrReleased
	}
	l.mu.Unlock()
	l.cancel()
}

// expireLoop ends a lease that is not renewed at its deadline.
func (l *Lease) expireLoop() {
	for {
		l.mu.Lock()
		st, left := l.state, l.deadline-now()
		l.mu.Unlock()
		if st != held {
			return
		}
		if left <= 0 {
			l.markLost("not renewed before its deadline (renewal is off)", nil)
			return
		}
		select {
		case <-l.ctx.Done():
			return
		case <-time.After(minDuration(left, time.Second)):
		}
	}
}

func minDuration(a, b time.Duration) time.Duration {
	if a < b {
		return a
	}
	return b
}

// How many renewals in a row a broken connection retries at once on
// another connection, before the renewer sleeps a slice.
const renewQuickTries = 10

// renewLoop renews at a third of the ttl until stopped or lost. A renewal
// that cannot get through (a broken connection, a failover, no answer) is
// retried on a new connection until the deadline (at once after a broken
// connection, up to renewQuickTries times); then, or on a renewal
// the server refuses, the lease is lost. It sleeps in slices of at most a
// second (ttl/10 when shorter), each checking the deadline on the clock
// that counts a suspend.
func (l *Lease) renewLoop(ctx context.Context) {
	defer close(l.renewerDone)
	every := l.ttl / 3
	slice := l.ttl / 10
	if slice > time.Second {
		slice = time.Second
	}
	if slice < 20*time.Millisecond {
		slice = 20 * time.Millisecond
	}
	sleep := func(d time.Duration) bool {
		if d <= 0 {
			return ctx.Err() == nil
		}
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
			return true
		}
	}
	for {
		for {
			l.mu.Lock()
			pause, left := l.sent+every-now(), l.deadline-now()
			l.mu.Unlock()
			if pause <= 0 || left <= 0 {
				break
			}
			if !sleep(minDuration(pause, slice)) {
				return
			}
		}
		why := "no answer from the server"
		if l.deadline <= now() {
			why = "the renewer did not run in time: a suspended machine, or a stalled process"
		}
		for quick := 0; ; {
			left := l.deadline - now()
			if left <= 0 {
				l.markLost("not renewed before its deadline ("+why+")", nil)
				return
			}
			ok, sent, err := l.renewOnce(ctx, left)
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				why = err.Error()
				// A broken connection (the pool's idle ones are all dead
				// after a restart): the next one at once, up to
				// renewQuickTries times a slice.
				if quick++; brokenConn(ctx, err) && quick < renewQuickTries {
					continue
				}
				quick = 0
				if !sleep(minDuration(slice, l.deadline-now())) {
					return
				}
				continue
			}
			if !ok {
				l.markLost("renewal refused: the lease expired or was taken over", nil)
				return
			}
			l.mu.Lock()
			l.sent, l.deadline = sent, sent+l.ttl-deadlineMargin(l.ttl)
			l.mu.Unlock()
			break
		}
	}
}

// renewOnce sends one renewal, bounded by timeout.
func (l *Lease) renewOnce(ctx context.Context, timeout time.Duration) (bool, time.Duration, error) {
	end := now() + timeout
	s := l.sess
	if s == nil {
		var err error
		if s, err = session(ctx, l.pool, timeout); err != nil {
			return false, 0, err
		}
		l.sess = s
	}
	var q string
	if l.opts.reacquire {
		q, _ = l.acquireSQL(0)
	} else {
		q = l.tokenSQL("dlock_renew", ", "+interval(l.ttl))
	}
	var token sql.NullInt64
	var renewed sql.NullBool
	sent := now()
	err, ok := bounded(ctx, end-now(), s, func(ctx context.Context) error {
		if l.opts.reacquire {
			return s.QueryRow(ctx, q, &token)
		}
		return s.QueryRow(ctx, q, &renewed)
	})
	if !ok {
		l.sess = nil
	}
	if err != nil {
		return false, 0, err
	}
	if l.opts.reacquire {
		// The same token back: our owner still holds it. NULL: somebody
		// else does. Another token: it expired meanwhile.
		return token.Valid && token.Int64 == l.token, sent, nil
	}
	return renewed.Valid && renewed.Bool, sent, nil
}

// Release stops the renewer and gives the lease back. It returns nil when
// the server released it, a *LostError when the lease had been lost or the
// server says the token no longer held it (the work overran its lease:
// another holder may have run meanwhile), and an error wrapping
// ErrNoAnswer when the release got no answer in min(5 s, max(1 s, time
// left on the lease)): its connection is discarded and the lease expires
// by itself at its deadline (not a loss). Safe to call from several
// goroutines: one releases, the others wait for it; a later call returns
// nil after a release, the *LostError after a loss.
func (l *Lease) Release(ctx context.Context) error {
	// A lost or released lease answers at once, without releaseMu: the
	// WithOnLost callback may call Release while a Release that found
	// the loss holds it (markLost sets the state before the callback).
	l.mu.Lock()
	st, err := l.state, l.err
	l.mu.Unlock()
	switch st {
	case released:
		return nil
	case lost:
		return err
	}
	l.releaseMu.Lock()
	defer l.releaseMu.Unlock()
	l.mu.Lock()
	st, err = l.state, l.err
	budget := l.deadline - now()
	l.mu.Unlock()
	switch st {
	case released:
		return nil
	case lost:
		return err
	}
	if budget > releaseMax {
		budget = releaseMax
	}
	if budget < releaseMin {
		budget = releaseMin
	}
	end := now() + budget
	l.stopRenewer()
	select {
	case <-l.renewerDone:
	case <-time.After(budget):
	}
	l.checkDeadline()
	l.mu.Lock()
	st, err = l.state, l.err
	l.mu.Unlock()
	if st == lost {
		return err
	}
	l.mu.Lock()
	l.releasing = true
	l.mu.Unlock()
	q := l.tokenSQL("dlock_release", "")
	for attempt := 0; ; attempt++ {
		s := l.sess
		l.sess = nil
		if s == nil {
			if s, err = session(ctx, l.pool, end-now()); err != nil {
				break
			}
		}
		var done sql.NullBool
		var ok bool
		err, ok = bounded(ctx, end-now(), s, func(ctx context.Context) error {
			return s.QueryRow(ctx, q, &done)
		})
		if err == nil {
			s.Close()
			if done.Valid && done.Bool {
				l.markReleased()
				return nil
			}
			return l.markLost("release refused: the lease expired or changed hands before "+
				"the work ended (the critical section overran its lease)", nil)
		}
		_ = ok
		// A broken connection (a restart, a cut): once more on a new one.
		// Had the first attempt committed, this one says false: a loss
		// reported, never the other way round.
		if errors.Is(err, ErrNoAnswer) || ctx.Err() != nil || attempt > 0 || end-now() <= 0 {
			break
		}
	}
	l.markReleased()
	return &noAnswerError{msg: fmt.Sprintf("dlock: release of lease %q (token %d) got no answer (%v): "+
		"it may have committed; if not, the lease expires by itself at its deadline", l.name, l.token, err), cause: err}
}

// Fence declares the lease's token in tx (dlock_assert): the fenced writes
// later in tx carry the token, and the lease cannot change hands until tx
// ends. It returns a *StaleTokenError (and the lease is lost) when the
// server says the token is stale, the *LostError when the lease is already
// lost, and an error wrapping ErrReleased after a release: it never
// vouches for a lease this process does not hold.
func (l *Lease) Fence(ctx context.Context, tx *sql.Tx) error {
	return l.FenceWith(ctx, func(ctx context.Context, query string) error {
		_, err := tx.ExecContext(ctx, query, l.args...)
		return err
	})
}

// FenceWith is Fence with a function that runs a statement without
// parameters in the caller's transaction (the dlockpgx package uses it
// for pgx.Tx).
func (l *Lease) FenceWith(ctx context.Context, exec func(ctx context.Context, query string) error) error {
	l.checkDeadline()
	l.mu.Lock()
	st, err := l.state, l.err
	l.mu.Unlock()
	switch st {
	case released:
		return fmt.Errorf("dlock: cannot fence with lease %q: %w", l.name, ErrReleased)
	case lost:
		return err
	}
	err = exec(ctx, l.tokenSQL("dlock_assert", ""))
	if SQLState(err) == StaleTokenSQLState {
		stale := &StaleTokenError{Name: l.name, Token: l.token, Err: err}
		l.mu.Lock()
		mine := l.state == released || l.releasing
		l.mu.Unlock()
		if mine {
			return &releasedStaleError{name: l.name, stale: stale}
		}
		l.markLost("the server refused its token as stale", stale)
		return stale
	}
	return err
}
