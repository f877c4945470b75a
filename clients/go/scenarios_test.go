// Copyright (c) 2026, the dlock developers

package dlock_test

// The scenarios of docs/clients.md (C01-C13, but C11, which is Node's).
// Timings are generous: they say "within the bound", never "how fast".

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	dlock "github.com/dlock-project/dlock/clients/go"
	"github.com/dlock-project/dlock/clients/go/dlockpgx"
)

func TestC01AcquireAndBusy(t *testing.T) {
	eachDriver(t, func(t *testing.T, driver string) {
		db, a, name := open(t, driver, srv.db, ""), admin(t), lockName(t)
		l := acquire(t, db, name, 30*time.Second, dlock.WithOwner("c01"))
		if !held(t, a, name, l.Token()) {
			t.Fatal("the acquire is not committed when Acquire returns")
		}
		// A second acquirer, with the same owner label too, is busy.
		_, err := dlock.Acquire(ctx(t), db, name, 30*time.Second, dlock.WithOwner("c01"))
		var busy *dlock.BusyError
		if !errors.Is(err, dlock.ErrBusy) || !errors.As(err, &busy) || busy.Name != name {
			t.Fatalf("second acquire: got %v, want a *BusyError wrapping ErrBusy", err)
		}
		if !strings.HasPrefix(l.OwnerID(), "c01:") {
			t.Fatalf("owner id %q", l.OwnerID())
		}
		if err := l.Release(ctx(t)); err != nil {
			t.Fatal(err)
		}
		if err := l.Err(); !errors.Is(err, dlock.ErrReleased) {
			t.Fatalf("Err after release: %v", err)
		}
		if l.Context().Err() == nil {
			t.Fatal("the context is not done after the release")
		}
		l2 := acquire(t, db, name, 30*time.Second)
		if l2.Token() <= l.Token() {
			t.Fatalf("token %d after %d", l2.Token(), l.Token())
		}
	})
	eachDriverAs(t, "names", func(t *testing.T, driver string) {
		// Names are user data: every one is sent as a literal that means
		// itself, also with standard_conforming_strings off.
		a := admin(t)
		for _, sc := range []string{"on", "off"} {
			db, err := sql.Open(driver, dsn(srv.db, "")+" standard_conforming_strings="+sc)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			for _, n := range []string{`it's`, `a\'; SELECT 1; --`, `E'\x41'`, "$$ $q$ \n \u00e9 \U0001f512",
				strings.Repeat("n", 255)} {
				l, err := dlock.Acquire(ctx(t), db, n, 30*time.Second, dlock.WithOwner(`o'\`))
				if sc == "off" && driver == "pgx" {
					// pgx refuses the simple protocol then: an error, never
					// a literal read another way.
					if err == nil || !strings.Contains(err.Error(), "standard_conforming_strings") {
						t.Fatalf("pgx with standard_conforming_strings off: %v", err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("%s: acquire %q: %v", sc, n, err)
				}
				var owner string
				if err := a.QueryRow("SELECT owner FROM dlock_leases WHERE name = $1 AND held AND token = $2",
					n, l.Token()).Scan(&owner); err != nil || owner != l.OwnerID() {
					t.Fatalf("%s: lease %q (owner %q) not found as sent: %v", sc, n, owner, err)
				}
				if err := l.Release(ctx(t)); err != nil {
					t.Fatal(err)
				}
			}
		}
	})
	t.Run("pgxpool", func(t *testing.T) {
		p, name := openPool(t, srv.db, ""), lockName(t)
		l, err := dlockpgx.Acquire(ctx(t), p, name, 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := dlockpgx.Acquire(ctx(t), p, name, 30*time.Second); !errors.Is(err, dlock.ErrBusy) {
			t.Fatalf("second acquire: %v", err)
		}
		if err := l.Release(ctx(t)); err != nil {
			t.Fatal(err)
		}
	})
}

// The pool's idle connections broken meanwhile (a server restart): the
// acquire is tried on another connection, not refused.
func TestC01AcquireOnStalePooledConnections(t *testing.T) {
	eachDriver(t, func(t *testing.T, driver string) {
		p, name := newProxy(t, ""), lockName(t)
		db := open(t, driver, srv.db, p.addr())
		db.SetMaxIdleConns(4)
		conns := make([]*sql.Conn, 3)
		for i := range conns {
			c, err := db.Conn(ctx(t))
			if err != nil {
				t.Fatal(err)
			}
			if err := c.PingContext(ctx(t)); err != nil {
				t.Fatal(err)
			}
			conns[i] = c
		}
		for _, c := range conns {
			c.Close() // idle in the pool
		}
		p.cut()
		time.Sleep(100 * time.Millisecond)
		l := acquire(t, db, name, 30*time.Second)
		if err := l.Release(ctx(t)); err != nil {
			t.Fatal(err)
		}
	})
}

func TestC02Wait(t *testing.T) {
	eachDriver(t, func(t *testing.T, driver string) {
		db, name := open(t, driver, srv.db, ""), lockName(t)
		first := acquire(t, db, name, 30*time.Second)
		go func() {
			time.Sleep(500 * time.Millisecond)
			_ = first.Release(context.Background())
		}()
		start := time.Now()
		l, err := dlock.Acquire(ctx(t), db, name, 30*time.Second, dlock.WithWait(20*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer l.Release(context.Background())
		if d := time.Since(start); d > 10*time.Second {
			t.Fatalf("the waiter got the lease %v after the release", d)
		}
		if l.Token() <= first.Token() {
			t.Fatal("the waiter's token is not newer")
		}
	})
	// A wait longer than the ttl: the lease's deadline counts from the
	// grant, not from when the waiting acquire was sent.
	eachDriverAs(t, "longer-than-ttl", func(t *testing.T, driver string) {
		db, a, name := open(t, driver, srv.db, ""), admin(t), lockName(t)
		first := acquire(t, db, name, 10*time.Second)
		go func() {
			time.Sleep(3 * time.Second)
			_ = first.Release(context.Background())
		}()
		ttl := 2 * time.Second
		l, err := dlock.Acquire(ctx(t), db, name, ttl, dlock.WithWait(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer l.Release(context.Background())
		if err := l.Err(); err != nil {
			t.Fatalf("the waiter's lease is lost when granted: %v", err)
		}
		if r := l.Remaining(); r <= ttl/2 || r > ttl {
			t.Fatalf("remaining %v of a ttl of %v just after the grant", r, ttl)
		}
		time.Sleep(2 * ttl) // renewed meanwhile
		if err := l.Err(); err != nil || !held(t, a, name, l.Token()) {
			t.Fatalf("not renewed: %v", err)
		}
		if err := l.Release(ctx(t)); err != nil {
			t.Fatal(err)
		}
	})
}

func TestC03Renewal(t *testing.T) {
	eachDriver(t, func(t *testing.T, driver string) {
		db, a, name := open(t, driver, srv.db, ""), admin(t), lockName(t)
		ttl := time.Second
		l := acquire(t, db, name, ttl)
		for end := time.Now().Add(4 * ttl); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
			if err := l.Err(); err != nil {
				t.Fatalf("lost while renewed: %v", err)
			}
			if !held(t, a, name, l.Token()) {
				t.Fatal("the server does not hold the lease for its token")
			}
			if l.Remaining() <= 0 || l.Remaining() > ttl {
				t.Fatalf("remaining %v", l.Remaining())
			}
		}
		if err := l.Release(ctx(t)); err != nil {
			t.Fatal(err)
		}
		if held(t, a, name, l.Token()) {
			t.Fatal("still held after the release")
		}
	})
}

// C03: the local deadline falls a margin (a tenth of the ttl, at most
// 100 ms) before the server's expiry, so a late timer still reports the
// loss before the server hands the lease on.
func TestC03DeadlineMargin(t *testing.T) {
	eachDriver(t, func(t *testing.T, driver string) {
		db, name := open(t, driver, srv.db, ""), lockName(t)
		ttl := 2 * time.Second
		l := acquire(t, db, name, ttl)
		if r := l.Remaining(); r > ttl-100*time.Millisecond || r <= 0 {
			t.Fatalf("remaining %v just after the acquire, ttl %v: no safety margin", r, ttl)
		}
		time.Sleep(ttl) // renewed meanwhile: the margin holds there too
		if r := l.Remaining(); r > ttl-100*time.Millisecond || r <= 0 {
			t.Fatalf("remaining %v after renewals, ttl %v: no safety margin", r, ttl)
		}
	})
}

func TestC04Overrun(t *testing.T) {
	eachDriver(t, func(t *testing.T, driver string) {
		db, a, name := open(t, driver, srv.db, ""), admin(t), lockName(t)
		var calls int32
		l := acquire(t, db, name, 500*time.Millisecond, dlock.WithoutRenewal(),
			dlock.WithOnLost(func(*dlock.Lease) { atomic.AddInt32(&calls, 1) }))
		select {
		case <-l.Context().Done():
		case <-time.After(10 * time.Second):
			t.Fatal("the context was not cancelled at the deadline")
		}
		var lost *dlock.LostError
		if err := l.Err(); !errors.As(err, &lost) || !errors.Is(err, dlock.ErrLost) || lost.Token != l.Token() {
			t.Fatalf("Err: %v", err)
		}
		if l.Remaining() != 0 {
			t.Fatal("remaining time on a lost lease")
		}
		taker := grab(t, a, name, "10 s")
		if taker <= l.Token() {
			t.Fatal("the next holder did not get the lease")
		}
		if err := l.Release(ctx(t)); !errors.Is(err, dlock.ErrLost) {
			t.Fatalf("release after the overrun: %v", err)
		}
		if !held(t, a, name, taker) {
			t.Fatal("the overrunning holder's release touched the new lease")
		}
		if n := atomic.LoadInt32(&calls); n != 1 {
			t.Fatalf("on-lost called %d times", n)
		}
	})
	t.Run("refused", func(t *testing.T) {
		// The server refuses the renewal of a lease that expired meanwhile
		// (its renewal connection stalled past the ttl, then came back).
		p, a, name := newProxy(t, ""), admin(t), lockName(t)
		db := open(t, "postgres", srv.db, p.addr())
		l := acquire(t, db, name, time.Second)
		p.freeze()
		<-l.Context().Done()
		if err := l.Release(ctx(t)); !errors.Is(err, dlock.ErrLost) {
			t.Fatalf("release: %v", err)
		}
		if grab(t, a, name, "10 s") == 0 {
			t.Fatal("the lease was not free after its ttl")
		}
	})
}

func TestC05RenewalConnectionLost(t *testing.T) {
	for _, how := range []string{"killed", "black-holed"} {
		how := how
		for _, driver := range drivers {
			driver := driver
			t.Run(how+"/"+driver, func(t *testing.T) {
				p, a, name := newProxy(t, ""), admin(t), lockName(t)
				db := open(t, driver, srv.db, p.addr())
				ttl := 1500 * time.Millisecond
				var calls int32
				l := acquire(t, db, name, ttl, dlock.WithOnLost(func(*dlock.Lease) { atomic.AddInt32(&calls, 1) }))
				if how == "killed" {
					p.setRefuse(true)
					p.cut()
				} else {
					p.freeze()
				}
				at := time.Now()
				select {
				case <-l.Context().Done():
				case <-time.After(ttl + 30*time.Second):
					t.Fatal("never reported lost")
				}
				// docs/clients.md: at the latest at the deadline (a ttl after
				// the last confirmed renewal), plus the renewer's slice.
				if d := time.Since(at); d > ttl+time.Second {
					t.Fatalf("reported lost %v after the fault, ttl %v", d, ttl)
				}
				var lost *dlock.LostError
				if !errors.As(l.Err(), &lost) || !strings.Contains(lost.Reason, "not renewed before its deadline") {
					t.Fatalf("Err: %v", l.Err())
				}
				time.Sleep(300 * time.Millisecond)
				if n := atomic.LoadInt32(&calls); n != 1 {
					t.Fatalf("on-lost called %d times", n)
				}
				if tok := grab(t, a, name, "30 s"); tok <= l.Token() {
					t.Fatal("the next holder did not get the lease after its expiry")
				}
			})
		}
	}
	eachDriverAs(t, "broken-reopened", func(t *testing.T, driver string) {
		// A broken connection is not a loss: the renewal is retried on a new one.
		p, a, name := newProxy(t, ""), admin(t), lockName(t)
		db := open(t, driver, srv.db, p.addr())
		ttl := 3 * time.Second
		l := acquire(t, db, name, ttl)
		for i := 0; i < 3; i++ {
			p.cut()
			time.Sleep(ttl / 2)
		}
		time.Sleep(ttl)
		if err := l.Err(); err != nil {
			t.Fatalf("lost after broken connections: %v", err)
		}
		if !held(t, a, name, l.Token()) || p.count() < 4 {
			t.Fatalf("held %v, %d connections", held(t, a, name, l.Token()), p.count())
		}
		if err := l.Release(ctx(t)); err != nil {
			t.Fatal(err)
		}
	})
}

// C05: a server restart shorter than the ttl, with many idle connections
// in the pool (all dead after the restart): the renewer tries the next one
// at once, and the lease is not lost. It restarts the suite's own cluster
// (PGDATA, pg_ctl on PATH: test/run's go suite sets both).
func TestC05RenewalAcrossServerRestart(t *testing.T) {
	pgdata := os.Getenv("PGDATA")
	pgctl, err := exec.LookPath("pg_ctl")
	if pgdata == "" || err != nil {
		t.Skip("needs PGDATA and pg_ctl on PATH: the suite's own cluster, restarted")
	}
	eachDriver(t, func(t *testing.T, driver string) {
		db, name := open(t, driver, srv.db, ""), lockName(t)
		db.SetMaxIdleConns(20)
		conns := make([]*sql.Conn, 15)
		for i := range conns {
			c, err := db.Conn(ctx(t))
			if err != nil {
				t.Fatal(err)
			}
			if err := c.PingContext(ctx(t)); err != nil {
				t.Fatal(err)
			}
			conns[i] = c
		}
		for _, c := range conns {
			c.Close() // idle in the pool
		}
		ttl := 10 * time.Second
		l := acquire(t, db, name, ttl)
		out, err := exec.Command(pgctl, "restart", "-m", "fast", "-w", "-D", pgdata,
			"-l", filepath.Join(srv.host, "server.log")).CombinedOutput()
		if err != nil {
			t.Fatalf("pg_ctl restart: %v\n%s", err, out)
		}
		time.Sleep(ttl + 2*time.Second)
		if err := l.Err(); err != nil {
			t.Fatalf("lost across a restart: %v", err)
		}
		if !held(t, admin(t), name, l.Token()) {
			t.Fatal("the server does not hold the lease for its token")
		}
		if err := l.Release(ctx(t)); err != nil {
			t.Fatal(err)
		}
	})
}

func fencedTable(t testing.TB, a *sql.DB, table, name string) {
	t.Helper()
	for _, q := range []string{
		fmt.Sprintf("DROP TABLE IF EXISTS %s", table),
		fmt.Sprintf("CREATE TABLE %s (id int PRIMARY KEY, token bigint, v text)", table),
		fmt.Sprintf("CREATE TRIGGER fence BEFORE INSERT OR UPDATE OR DELETE ON %s FOR EACH ROW "+
			"EXECUTE FUNCTION dlock_fence(%s, 'token')", table, "'"+strings.ReplaceAll(name, "'", "''")+"'"),
	} {
		if _, err := a.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { a.Exec("DROP TABLE IF EXISTS " + table) })
}

func TestC06StaleFence(t *testing.T) {
	eachDriver(t, func(t *testing.T, driver string) {
		db, a, name := open(t, driver, srv.db, ""), admin(t), lockName(t)
		table := "c06_" + driver
		fencedTable(t, a, table, name)
		l := acquire(t, db, name, 800*time.Millisecond, dlock.WithoutRenewal())
		// While held: the fenced write goes through.
		tx, err := db.BeginTx(ctx(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Fence(ctx(t), tx); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(fmt.Sprintf("INSERT INTO %s VALUES (1, NULL, 'held')", table)); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		// Lost: another holder took the lease.
		waitFor(t, "the next holder", 30*time.Second, func() bool { return grab(t, a, name, "0") != 0 })
		// A fenced write with the stale token is refused by the trigger.
		tx, _ = db.BeginTx(ctx(t), nil)
		_, err = tx.Exec(fmt.Sprintf("UPDATE %s SET token = %d, v = 'stale'", table, l.Token()))
		tx.Rollback()
		if !dlock.IsStaleToken(err) || dlock.SQLState(err) != dlock.StaleTokenSQLState {
			t.Fatalf("stale write: %v", err)
		}
		var st *dlock.StaleTokenError
		if err := dlock.StaleTokenErrors(err); !errors.As(err, &st) || !errors.Is(err, dlock.ErrStaleToken) {
			t.Fatalf("StaleTokenErrors: %v", err)
		}
		// Fence on the lease already lost here: fails closed, nothing sent.
		tx, _ = db.BeginTx(ctx(t), nil)
		if err := l.Fence(ctx(t), tx); !errors.Is(err, dlock.ErrLost) {
			t.Fatalf("fence of a lost lease: %v", err)
		}
		tx.Rollback()
	})
	eachDriverAs(t, "server-refuses", func(t *testing.T, driver string) {
		// The server is the one that says so: the lease taken over while
		// the client still believed it held it (its clock stepped, or a
		// rebase): Fence returns *StaleTokenError and the lease is lost.
		db, a, name := open(t, driver, srv.db, ""), admin(t), lockName(t)
		l := acquire(t, db, name, 30*time.Second)
		if _, err := a.Exec("SELECT dlock_release($1, $2)", name, l.Token()); err != nil {
			t.Fatal(err)
		}
		grab(t, a, name, "0")
		tx, _ := db.BeginTx(ctx(t), nil)
		defer tx.Rollback()
		err := l.Fence(ctx(t), tx)
		var st *dlock.StaleTokenError
		if !errors.As(err, &st) || !errors.Is(err, dlock.ErrStaleToken) || dlock.SQLState(err) != "LK001" || st.Token != l.Token() {
			t.Fatalf("fence with a stale token: %v", err)
		}
		if !errors.Is(l.Err(), dlock.ErrLost) || l.Context().Err() == nil {
			t.Fatalf("the lease is not lost after a stale fence: %v", l.Err())
		}
	})
}

// C06: a fence refused as stale while this process's release is in flight
// (the server released it, the answer has not come back): the error says
// both released and stale (errors.Is either, IsStaleToken).
func TestC06StaleFenceDuringRelease(t *testing.T) {
	eachDriver(t, func(t *testing.T, driver string) {
		p, a, name := newProxy(t, ""), admin(t), lockName(t)
		db, direct := open(t, driver, srv.db, p.addr()), open(t, driver, srv.db, "")
		l := acquire(t, db, name, 30*time.Second)
		// The release commits (here: another holder of the token does it),
		// and its answer never arrives.
		if _, err := a.Exec("SELECT dlock_release($1, $2)", name, l.Token()); err != nil {
			t.Fatal(err)
		}
		p.freeze()
		released := make(chan error, 1)
		go func() { released <- l.Release(context.Background()) }()
		time.Sleep(500 * time.Millisecond)
		tx, err := direct.BeginTx(ctx(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		err = l.Fence(ctx(t), tx)
		var st *dlock.StaleTokenError
		if !errors.Is(err, dlock.ErrReleased) || !errors.Is(err, dlock.ErrStaleToken) ||
			!dlock.IsStaleToken(err) || !errors.As(err, &st) || dlock.SQLState(err) != "LK001" {
			t.Fatalf("fence during the release: %v", err)
		}
		<-released
	})
}

func TestC07BoundedRelease(t *testing.T) {
	for _, ttl := range []time.Duration{3 * time.Second, 30 * time.Second} {
		ttl := ttl
		for _, driver := range drivers {
			driver := driver
			t.Run(fmt.Sprintf("ttl%v/%s", ttl, driver), func(t *testing.T) {
				p, name := newProxy(t, ""), lockName(t)
				db := open(t, driver, srv.db, p.addr())
				l := acquire(t, db, name, ttl)
				p.freeze()
				start := time.Now()
				err := l.Release(context.Background())
				took := time.Since(start)
				// min(5 s, max(1 s, time left)), and a second of slack.
				bound := 5 * time.Second
				if ttl < bound {
					bound = ttl
				}
				if took > bound+time.Second {
					t.Fatalf("the release took %v, bound %v", took, bound)
				}
				if !errors.Is(err, dlock.ErrNoAnswer) || errors.Is(err, dlock.ErrLost) {
					t.Fatalf("release: %v", err)
				}
				if !errors.Is(l.Err(), dlock.ErrReleased) {
					t.Fatalf("Err: %v", l.Err())
				}
				// A cancelled context bounds it too.
				l2 := acquire(t, open(t, driver, srv.db, ""), name+"/2", ttl)
				c, cancel := context.WithCancel(context.Background())
				cancel()
				if err := l2.Release(c); !errors.Is(err, dlock.ErrNoAnswer) ||
					!strings.Contains(err.Error(), "may have committed") {
					t.Fatalf("release with a cancelled context: %v", err)
				}
			})
		}
	}
}

func TestC08Concurrency(t *testing.T) {
	eachDriver(t, func(t *testing.T, driver string) {
		db, a, name := open(t, driver, srv.db, ""), admin(t), lockName(t)
		table := "c08_" + driver
		fencedTable(t, a, table, name)
		for round := 0; round < 5; round++ {
			l := acquire(t, db, name, 30*time.Second)
			var wg sync.WaitGroup
			errs := make(chan error, 16)
			for i := 0; i < 8; i++ {
				i := i
				wg.Add(1)
				go func() {
					defer wg.Done()
					if i%2 == 0 {
						errs <- l.Release(context.Background())
						return
					}
					tx, err := db.BeginTx(context.Background(), nil)
					if err != nil {
						errs <- err
						return
					}
					defer tx.Rollback()
					if err := l.Fence(context.Background(), tx); err != nil {
						if errors.Is(err, dlock.ErrReleased) || errors.Is(err, dlock.ErrStaleToken) {
							return // the release won the race: refused, as it must be
						}
						errs <- fmt.Errorf("fence: %w", err)
						return
					}
					_, err = tx.Exec(fmt.Sprintf("INSERT INTO %s VALUES (%d, NULL, 'x') "+
						"ON CONFLICT (id) DO UPDATE SET v = 'y'", table, i))
					if err == nil {
						err = tx.Commit()
					}
					// A release that commits between the fence and the write
					// makes the token stale: the server refuses the write.
					if err != nil && !dlock.IsStaleToken(err) {
						errs <- fmt.Errorf("fenced write: %w", err)
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Errorf("round %d: %v", round, err)
				}
			}
			if held(t, a, name, l.Token()) || !errors.Is(l.Err(), dlock.ErrReleased) {
				t.Fatalf("round %d: not released once: %v", round, l.Err())
			}
			if err := l.Release(context.Background()); err != nil {
				t.Fatalf("a later release: %v", err)
			}
		}
	})
}

// C08: the WithOnLost callback calls Release while a Release (which found
// the loss) is running: no deadlock, both return the loss.
func TestC08ReleaseFromOnLost(t *testing.T) {
	eachDriver(t, func(t *testing.T, driver string) {
		db, a, name := open(t, driver, srv.db, ""), admin(t), lockName(t)
		nested := make(chan error, 1)
		// Not the acquire helper: its cleanup would release again.
		l, err := dlock.Acquire(ctx(t), db, name, 30*time.Second, dlock.WithOnLost(func(lost *dlock.Lease) {
			nested <- lost.Release(context.Background())
		}))
		if err != nil {
			t.Fatal(err)
		}
		// Another process that knows the token releases the lease: this
		// Release is refused, and finds the loss.
		var ok bool
		if err := a.QueryRow("SELECT dlock_release($1, $2)", name, l.Token()).Scan(&ok); err != nil || !ok {
			t.Fatalf("the admin's release: %v %v", ok, err)
		}
		done := make(chan error, 1)
		go func() { done <- l.Release(context.Background()) }()
		select {
		case err := <-done:
			if !errors.Is(err, dlock.ErrLost) {
				t.Fatalf("release: %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("Release deadlocked with the on-lost callback's Release")
		}
		if err := <-nested; !errors.Is(err, dlock.ErrLost) {
			t.Fatalf("the callback's release: %v", err)
		}
	})
}

func TestC10LeaderElection(t *testing.T) {
	eachDriver(t, func(t *testing.T, driver string) {
		p, name := newProxy(t, ""), lockName(t)
		ttl := leaderTTL
		type event struct {
			who, what string
			term      *dlock.Lease
		}
		events := make(chan event, 64)
		run := func(who string, db *sql.DB) (context.CancelFunc, chan error) {
			c, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				done <- dlock.RunLeader(c, db, dlock.LeaderConfig{
					Name: name, Owner: who, TTL: ttl, RetryPeriod: 200 * time.Millisecond,
					Callbacks: dlock.LeaderCallbacks{
						OnStartedLeading: func(ctx context.Context, term *dlock.Lease) {
							events <- event{who, "started", term}
							<-ctx.Done()
						},
						OnStoppedLeading: func(term *dlock.Lease) { events <- event{who, "stopped", term} },
						OnNewLeader:      func(id string) { events <- event{who, "new:" + id, nil} },
					},
				})
			}()
			return cancel, done
		}
		// The events of the two leaders come from goroutines of their own:
		// next waits for one, keeping the others for later.
		var seen []event
		next := func(want string) event {
			t.Helper()
			end := time.After(30 * time.Second)
			for {
				for i, e := range seen {
					if strings.HasPrefix(e.who+" "+e.what, want) {
						seen = append(seen[:i], seen[i+1:]...)
						return e
					}
				}
				select {
				case e := <-events:
					seen = append(seen, e)
				case <-end:
					t.Fatalf("no event %q (seen: %v)", want, seen)
				}
			}
		}
		stopA, doneA := run("a", open(t, driver, srv.db, p.addr()))
		next("a new:a:")
		termA := next("a started").term
		stopB, doneB := run("b", open(t, driver, srv.db, ""))
		next("b new:a:") // b sees a lead
		// a stalls: its network is black-holed.
		p.freeze()
		stalled := time.Now()
		e := next("a stopped")
		if !errors.Is(e.term.Err(), dlock.ErrLost) || time.Since(stalled) > ttl+time.Second {
			t.Fatalf("a's term ended %v after the stall: %v", time.Since(stalled), e.term.Err())
		}
		next("b new:b:")
		termB := next("b started").term
		if termB.Token() <= termA.Token() {
			t.Fatal("the new leader's token is not newer")
		}
		stopB()
		next("b stopped")
		if err := <-doneB; !errors.Is(err, context.Canceled) {
			t.Fatalf("RunLeader returned %v", err)
		}
		if !errors.Is(termB.Err(), dlock.ErrReleased) {
			t.Fatalf("b's term after the stop: %v", termB.Err())
		}
		stopA()
		p.close()
		<-doneA
	})
}

func TestC12NotInstalled(t *testing.T) {
	a := admin(t)
	bare := fmt.Sprintf("dlock_go_bare_%d", time.Now().UnixNano()%1e9)
	if _, err := a.Exec("CREATE DATABASE " + bare); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Exec("DROP DATABASE IF EXISTS " + bare + " WITH (FORCE)") })
	eachDriver(t, func(t *testing.T, driver string) {
		_, err := dlock.Acquire(ctx(t), open(t, driver, bare, ""), "x", time.Second)
		if !errors.Is(err, dlock.ErrNotInstalled) || !strings.Contains(err.Error(), "CREATE EXTENSION dlock") ||
			dlock.SQLState(err) != "42883" {
			t.Fatalf("acquire without dlock: %v", err)
		}
	})
}

// TestC10LeaderElectionStoppedProcess: the leader is a process of its own,
// stopped (SIGSTOP) past its term: another replica is elected, and the
// stopped one, once continued, reports at once that it was deposed, and
// does not come back while the new leader holds.
func TestC10LeaderElectionStoppedProcess(t *testing.T) {
	name := lockName(t)
	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), "DLOCK_TEST_LEADER_CHILD="+name)
	stdin, _ := child.StdinPipe()
	stdout, _ := child.StdoutPipe()
	child.Stderr = os.Stderr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		child.Process.Signal(syscall.SIGCONT)
		stdin.Close()
		child.Process.Kill()
		child.Wait()
	})
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	line := func(limit time.Duration) (string, int64) {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("the child exited")
			}
			var what string
			var token int64
			fmt.Sscanf(l, "%s %d", &what, &token)
			return what, token
		case <-time.After(limit):
			return "", 0
		}
	}
	what, first := line(30 * time.Second)
	if what != "elected" {
		t.Fatalf("the child: %q, want elected", what)
	}
	elected := make(chan *dlock.Lease, 4)
	c, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- dlock.RunLeader(c, open(t, "postgres", srv.db, ""), dlock.LeaderConfig{
			Name: name, Owner: "parent", TTL: leaderTTL, RetryPeriod: 200 * time.Millisecond,
			Callbacks: dlock.LeaderCallbacks{OnStartedLeading: func(ctx context.Context, term *dlock.Lease) {
				elected <- term
				<-ctx.Done()
			}},
		})
	}()
	select {
	case <-elected:
		t.Fatal("two leaders at once")
	case <-time.After(2 * leaderTTL):
	}
	child.Process.Signal(syscall.SIGSTOP)
	var term *dlock.Lease
	select {
	case term = <-elected:
	case <-time.After(30 * time.Second):
		t.Fatal("nobody replaced the stopped leader")
	}
	if term.Token() <= first {
		t.Fatal("the new leader's token is not newer")
	}
	child.Process.Signal(syscall.SIGCONT)
	continued := time.Now()
	if what, token := line(10 * time.Second); what != "deposed" || token != first {
		t.Fatalf("the continued child: %q %d, want deposed %d", what, token, first)
	}
	if d := time.Since(continued); d > 2*time.Second {
		t.Fatalf("the continued child reported its loss %v after it ran again", d)
	}
	if what, _ := line(2 * time.Second); what != "" {
		t.Fatalf("the old leader came back (%q) while the new one holds", what)
	}
	stop()
	<-done
	// The new leader stepped down: the child is elected again, newer still.
	if what, token := line(30 * time.Second); what != "elected" || token <= term.Token() {
		t.Fatalf("the child: %q %d after the new leader stepped down", what, token)
	}
}

// C10: a leader told to stop (RunLeader's ctx done) keeps its term until
// OnStartedLeading has returned: a second candidate is not elected while
// the first leader's callback is still winding down.
func TestC10LeaderStopsBeforeRelease(t *testing.T) {
	eachDriver(t, func(t *testing.T, driver string) {
		name := lockName(t)
		var mu sync.Mutex
		var aReturned, bStarted time.Time
		cfg := func(who string, started func()) dlock.LeaderConfig {
			return dlock.LeaderConfig{
				Name: name, Owner: who, TTL: 3 * time.Second, RetryPeriod: 50 * time.Millisecond,
				Callbacks: dlock.LeaderCallbacks{OnStartedLeading: func(ctx context.Context, term *dlock.Lease) {
					started()
					<-ctx.Done()
					if who == "a" {
						time.Sleep(500 * time.Millisecond) // winding down
						mu.Lock()
						aReturned = time.Now()
						mu.Unlock()
					}
				}},
			}
		}
		aElected := make(chan struct{})
		ca, stopA := context.WithCancel(context.Background())
		doneA := make(chan error, 1)
		dbA, dbB := open(t, driver, srv.db, ""), open(t, driver, srv.db, "")
		go func() { doneA <- dlock.RunLeader(ca, dbA, cfg("a", func() { close(aElected) })) }()
		select {
		case <-aElected:
		case <-time.After(30 * time.Second):
			t.Fatal("a was never elected")
		}
		bElected := make(chan struct{})
		cb, stopB := context.WithCancel(context.Background())
		defer stopB()
		doneB := make(chan error, 1)
		go func() {
			doneB <- dlock.RunLeader(cb, dbB, cfg("b", func() {
				mu.Lock()
				bStarted = time.Now()
				mu.Unlock()
				close(bElected)
			}))
		}()
		time.Sleep(200 * time.Millisecond) // b campaigns
		stopA()
		select {
		case <-bElected:
		case <-time.After(30 * time.Second):
			t.Fatal("b was never elected after a stopped")
		}
		<-doneA
		mu.Lock()
		defer mu.Unlock()
		if aReturned.IsZero() || bStarted.Before(aReturned) {
			t.Fatalf("b started leading %v before a's callback returned", aReturned.Sub(bStarted))
		}
		stopB()
		<-doneB
	})
}
