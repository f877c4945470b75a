// Copyright (c) 2026, the dlock developers

package dlock_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	dlock "github.com/dlock-project/dlock/clients/go"
	"github.com/dlock-project/dlock/clients/go/dlockpgx"
)

// pgbouncer starts Debian's PgBouncer in transaction mode, with two server
// connections, in front of the server; it returns its address.
func pgbouncer(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("PGBOUNCER")
	if bin == "" {
		bin = "/usr/sbin/pgbouncer"
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	dir := t.TempDir()
	ini := filepath.Join(dir, "pgbouncer.ini")
	users := filepath.Join(dir, "userlist.txt")
	os.WriteFile(users, []byte(fmt.Sprintf("%q \"\"\n", srv.user)), 0o600)
	os.WriteFile(ini, []byte(fmt.Sprintf(`[databases]
%s = host=%s port=%d dbname=%s

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = trust
auth_file = %s
pool_mode = transaction
default_pool_size = 2
max_db_connections = 2
max_client_conn = 100
server_reset_query =
ignore_startup_parameters = extra_float_digits
logfile = %s
pidfile = %s
`, srv.db, srv.host, srv.port, srv.db, port, users, filepath.Join(dir, "pgbouncer.log"),
		filepath.Join(dir, "pgbouncer.pid"))), 0o600)
	cmd := exec.Command(bin, ini)
	out, _ := os.Create(filepath.Join(dir, "pgbouncer.out"))
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v (Debian package pgbouncer)", bin, err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
		if t.Failed() {
			log, _ := os.ReadFile(filepath.Join(dir, "pgbouncer.log"))
			t.Logf("pgbouncer.log:\n%s", log)
		}
	})
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	waitFor(t, "PgBouncer to listen on "+addr, 10*time.Second, func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return addr
}

// TestC09PgBouncer: leases renewed about fifteen times each, with a fenced
// write, through PgBouncer in transaction mode, by lib/pq, by pgx's stdlib
// driver with its default statement cache (which prepares every statement
// with parameters), and by a pgxpool; a proxy between the clients and
// PgBouncer sees every message they send: never a Parse.
func TestC09PgBouncer(t *testing.T) {
	bouncer := pgbouncer(t)
	p := newProxy(t, bouncer)
	p.sniff = true
	a := admin(t)
	table := "c09"
	name := lockName(t)
	fencedTable(t, a, table, name+"/fence")
	var mu sync.Mutex
	var failures []string
	fail := func(format string, args ...any) {
		mu.Lock()
		failures = append(failures, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	var wg sync.WaitGroup
	hold := func(client string, acq func(name string) (*dlock.Lease, error), i int) {
		defer wg.Done()
		l, err := acq(fmt.Sprintf("%s/%s/%d", name, client, i))
		if err != nil {
			fail("%s %d: acquire: %v", client, i, err)
			return
		}
		time.Sleep(3 * time.Second)
		if err := l.Err(); err != nil {
			fail("%s %d: %v", client, i, err)
		}
		if err := l.Release(context.Background()); err != nil {
			fail("%s %d: release: %v", client, i, err)
		}
	}
	ttl := 600 * time.Millisecond
	for _, driver := range drivers {
		db := open(t, driver, srv.db, p.addr())
		for i := 0; i < 2; i++ {
			wg.Add(1)
			go hold(driver, func(n string) (*dlock.Lease, error) { return dlock.Acquire(context.Background(), db, n, ttl) }, i)
		}
	}
	pool := openPool(t, srv.db, p.addr())
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go hold("pgxpool", func(n string) (*dlock.Lease, error) { return dlockpgx.Acquire(context.Background(), pool, n, ttl) }, i)
	}
	// Fenced writes through the pooler, by every client.
	for _, driver := range drivers {
		db := open(t, driver, srv.db, p.addr())
		l, err := dlock.Acquire(ctx(t), db, name+"/fence", 30*time.Second, dlock.WithWait(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		tx, err := db.BeginTx(ctx(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Fence(ctx(t), tx); err != nil {
			t.Fatalf("%s: fence: %v", driver, err)
		}
		if _, err := tx.Exec(fmt.Sprintf("INSERT INTO %s VALUES (%d, NULL, '%s')", table, len(driver), driver)); err != nil {
			t.Fatalf("%s: fenced write: %v", driver, err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		if err := l.Release(ctx(t)); err != nil {
			t.Fatal(err)
		}
	}
	{
		l, err := dlockpgx.Acquire(ctx(t), pool, name+"/fence", 30*time.Second, dlock.WithWait(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		tx, err := pool.Begin(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		if err := dlockpgx.Fence(ctx(t), l, tx); err != nil {
			t.Fatalf("pgxpool: fence: %v", err)
		}
		if _, err := tx.Exec(ctx(t), fmt.Sprintf("INSERT INTO %s VALUES (100, NULL, 'pgxpool')", table)); err != nil {
			t.Fatalf("pgxpool: fenced write: %v", err)
		}
		if err := tx.Commit(ctx(t)); err != nil {
			t.Fatal(err)
		}
		if err := l.Release(ctx(t)); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	for _, f := range failures {
		t.Error(f)
	}
	var rows int
	a.QueryRow("SELECT count(*) FROM " + table).Scan(&rows)
	if rows != 3 {
		t.Errorf("%d fenced rows, want 3", rows)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.types['Q'] < 20 {
		t.Errorf("the proxy saw %d simple queries: it does not see the traffic", p.types['Q'])
	}
	if p.types['P'] != 0 {
		t.Errorf("the clients sent %d Parse messages (statements %q): not the simple protocol", p.types['P'],
			strings.Join(p.parsed, ", "))
	}
}
