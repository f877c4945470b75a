// Copyright (c) 2026, the dlock developers

package dlock_test

// The tests run against a real server, never a mock: PGHOST (a socket
// directory), PGPORT and PGUSER name the cluster, DLOCK_TEST_DB a scratch
// database where dlock is installed (test/run's go suite creates one).
// Each scenario of docs/clients.md is a test whose name carries its ID.

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	dlock "github.com/dlock-project/dlock/clients/go"
	"github.com/dlock-project/dlock/clients/go/dlockpgx"
	"github.com/jackc/pgx/v4/pgxpool"
	_ "github.com/jackc/pgx/v4/stdlib"
	_ "github.com/lib/pq"
)

type server struct {
	host string // a socket directory
	port int
	user string
	db   string
}

var srv server

func TestMain(m *testing.M) {
	port, _ := strconv.Atoi(os.Getenv("PGPORT"))
	srv = server{os.Getenv("PGHOST"), port, os.Getenv("PGUSER"), os.Getenv("DLOCK_TEST_DB")}
	if !strings.HasPrefix(srv.host, "/") || port == 0 || srv.user == "" || srv.db == "" {
		fmt.Fprintln(os.Stderr, "the tests need PGHOST (a socket directory), PGPORT, PGUSER and "+
			"DLOCK_TEST_DB (a scratch database with dlock installed)")
		os.Exit(2)
	}
	if name := os.Getenv("DLOCK_TEST_LEADER_CHILD"); name != "" {
		leaderChild(name)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// leaderChild is a replica of TestC10's stopped-process case, in a process
// of its own (the test binary run again): it runs RunLeader and prints
// "elected TOKEN" and "deposed TOKEN" lines until its stdin is closed.
func leaderChild(name string) {
	db, err := sql.Open("postgres", dsn(srv.db, ""))
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	var mu sync.Mutex
	say := func(what string, token int64) {
		mu.Lock()
		fmt.Printf("%s %d\n", what, token)
		mu.Unlock()
	}
	_ = dlock.RunLeader(ctx, db, dlock.LeaderConfig{
		Name: name, Owner: "child", TTL: leaderTTL, RetryPeriod: 200 * time.Millisecond,
		Callbacks: dlock.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context, term *dlock.Lease) {
				say("elected", term.Token())
				<-ctx.Done()
			},
			OnStoppedLeading: func(term *dlock.Lease) { say("deposed", term.Token()) },
		},
	})
}

const leaderTTL = 1500 * time.Millisecond

// dsn is a connection string for the server, or for a proxy at addr.
func dsn(db, addr string) string {
	if addr == "" {
		return fmt.Sprintf("host=%s port=%d user=%s dbname=%s sslmode=disable", srv.host, srv.port, srv.user, db)
	}
	host, port, _ := net.SplitHostPort(addr)
	return fmt.Sprintf("host=%s port=%s user=%s dbname=%s sslmode=disable connect_timeout=5", host, port, srv.user, db)
}

// The database/sql drivers every scenario runs with: lib/pq, and pgx v4's
// stdlib driver with its default statement cache (it would prepare every
// statement with parameters, were the client to send any).
var drivers = []string{"postgres", "pgx"}

func open(t testing.TB, driver, db, addr string) *sql.DB {
	t.Helper()
	h, err := sql.Open(driver, dsn(db, addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

func openPool(t testing.TB, db, addr string) *pgxpool.Pool {
	t.Helper()
	p, err := pgxpool.Connect(context.Background(), dsn(db, addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// eachDriver runs f once per database/sql driver, as subtests.
func eachDriver(t *testing.T, f func(t *testing.T, driver string)) { eachDriverAs(t, "", f) }

// eachDriverAs names the subtests prefix/driver.
func eachDriverAs(t *testing.T, prefix string, f func(t *testing.T, driver string)) {
	for _, d := range drivers {
		d := d
		name := d
		if prefix != "" {
			name = prefix + "/" + d
		}
		t.Run(name, func(t *testing.T) { f(t, d) })
	}
}

// admin is a separate connection that looks at (and competes for) leases.
func admin(t testing.TB) *sql.DB { return open(t, "postgres", srv.db, "") }

func lockName(t testing.TB) string { return "go:" + t.Name() }

func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return c
}

// held says whether token holds name now.
func held(t testing.TB, a *sql.DB, name string, token int64) bool {
	t.Helper()
	var ok bool
	if err := a.QueryRow("SELECT coalesce((SELECT held AND token = $2 FROM dlock_leases WHERE name = $1), false)",
		name, token).Scan(&ok); err != nil {
		t.Fatal(err)
	}
	return ok
}

// grab is another holder's acquire: its token, or 0 when busy.
func grab(t testing.TB, a *sql.DB, name, wait string) int64 {
	t.Helper()
	var tok sql.NullInt64
	if err := a.QueryRow("SELECT dlock_acquire($1, '30 s', $2::interval)", name, wait).Scan(&tok); err != nil {
		t.Fatal(err)
	}
	return tok.Int64
}

func waitFor(t testing.TB, what string, limit time.Duration, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(limit); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("timed out after %v waiting for %s", limit, what)
		}
	}
}

func acquire(t testing.TB, db *sql.DB, name string, ttl time.Duration, opts ...dlock.Option) *dlock.Lease {
	t.Helper()
	l, err := dlock.Acquire(ctx(t), db, name, ttl, opts...)
	if err != nil {
		t.Fatalf("acquire %q: %v", name, err)
	}
	t.Cleanup(func() { _ = l.Release(context.Background()) })
	return l
}

var _ = dlockpgx.Pool // the pgxpool adapter; importing it registers pgx's stdlib driver

// proxy is a TCP proxy in front of the server's Unix socket that a test
// can cut (every connection made so far breaks, as a killed backend or a
// reset network does), make refuse new connections, or freeze (the
// connections stay open but nothing is forwarded: a black hole). With
// sniff, it records the type of every message clients send after the
// startup packet, and the names of the statements they Parse.
type proxy struct {
	ln       net.Listener
	target   string
	mu       sync.Mutex
	conns    []net.Conn
	accepted int
	refuse   bool
	frozen   bool
	thaw     *sync.Cond
	sniff    bool
	types    map[byte]int
	parsed   []string
}

func newProxy(t testing.TB, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if target == "" {
		target = filepath.Join(srv.host, fmt.Sprintf(".s.PGSQL.%d", srv.port))
	}
	p := &proxy{ln: ln, target: target, types: map[byte]int{}}
	p.thaw = sync.NewCond(&p.mu)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		p.accepted++
		refuse := p.refuse
		p.mu.Unlock()
		if refuse {
			c.Close()
			continue
		}
		network := "unix"
		if !strings.HasPrefix(p.target, "/") {
			network = "tcp"
		}
		up, err := net.Dial(network, p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, up)
		p.mu.Unlock()
		var sniffer *messages
		if p.sniff {
			sniffer = &messages{p: p}
		}
		go p.pump(c, up, sniffer)
		go p.pump(up, c, nil)
	}
}

func (p *proxy) pump(from, to net.Conn, sniffer *messages) {
	defer from.Close()
	defer to.Close()
	buf := make([]byte, 32*1024)
	for {
		n, err := from.Read(buf)
		if n > 0 {
			p.mu.Lock()
			for p.frozen {
				p.thaw.Wait()
			}
			p.mu.Unlock()
			if sniffer != nil {
				sniffer.feed(buf[:n])
			}
			if _, werr := to.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func (p *proxy) setRefuse(on bool) { p.mu.Lock(); p.refuse = on; p.mu.Unlock() }

func (p *proxy) freeze() { p.mu.Lock(); p.frozen = true; p.mu.Unlock() }

func (p *proxy) count() int { p.mu.Lock(); defer p.mu.Unlock(); return p.accepted }

func (p *proxy) close() {
	p.ln.Close()
	p.mu.Lock()
	p.frozen = false
	p.thaw.Broadcast()
	p.mu.Unlock()
	p.cut()
}

// messages splits a client's stream into protocol messages: the startup
// packet (no type byte), then type, int32 length, body.
type messages struct {
	p       *proxy
	buf     []byte
	started bool
}

func (m *messages) feed(b []byte) {
	m.buf = append(m.buf, b...)
	for {
		if !m.started {
			if len(m.buf) < 4 {
				return
			}
			n := int(be32(m.buf))
			if len(m.buf) < n {
				return
			}
			m.buf, m.started = m.buf[n:], true
			continue
		}
		if len(m.buf) < 5 {
			return
		}
		n := int(be32(m.buf[1:])) + 1
		if len(m.buf) < n {
			return
		}
		typ, body := m.buf[0], m.buf[5:n]
		m.p.mu.Lock()
		m.p.types[typ]++
		if typ == 'P' {
			m.p.parsed = append(m.p.parsed, string(body[:indexNUL(body)]))
		}
		m.p.mu.Unlock()
		m.buf = m.buf[n:]
	}
}

func be32(b []byte) uint32 {
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

func indexNUL(b []byte) int {
	for i, c := range b {
		if c == 0 {
			return i
		}
	}
	return len(b)
}
