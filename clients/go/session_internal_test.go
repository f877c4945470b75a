// Copyright (c) 2026, the dlock developers

package dlock

import (
	"database/sql"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v4/stdlib"
	_ "github.com/lib/pq"
)

// pgx's stdlib driver prepares statements on the server unless it is told
// otherwise: without dlockpgx's registration, FromDB refuses it and says
// what to import. lib/pq needs nothing.
func TestPreparingDriverRefusedUnlessRegistered(t *testing.T) {
	const path = "github.com/jackc/pgx/v4/stdlib"
	driversMu.Lock()
	saved, had := drivers[path]
	delete(drivers, path)
	driversMu.Unlock()
	defer func() {
		if had {
			RegisterDriver(path, saved...)
		}
	}()
	db, err := sql.Open("pgx", "host=/nonexistent")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := FromDB(db); err == nil || !strings.Contains(err.Error(), "clients/go/dlockpgx") {
		t.Fatalf("FromDB(pgx) without dlockpgx: %v", err)
	}
	pq, _ := sql.Open("postgres", "host=/nonexistent")
	defer pq.Close()
	if p, err := FromDB(pq); err != nil || len(p.(*dbPool).args) != 0 {
		t.Fatalf("FromDB(lib/pq): %v", err)
	}
}

func TestLiterals(t *testing.T) {
	for in, want := range map[string]string{
		"plain":     "E'plain'",
		`it's`:      `E'it''s'`,
		`back\'\`:   `E'back\\''\\'`,
		"\u00e9$$x": "E'\u00e9$$x'",
	} {
		if got, err := quote(in); err != nil || got != want {
			t.Errorf("quote(%q) = %s, %v; want %s", in, got, err, want)
		}
	}
	if _, err := quote("a\x00b"); err == nil {
		t.Error("a NUL byte was accepted")
	}
	if _, err := quote("\xff"); err == nil {
		t.Error("invalid UTF-8 was accepted")
	}
	for d, want := range map[time.Duration]string{
		1500 * time.Millisecond: "'1500000 microseconds'::pg_catalog.interval",
		time.Nanosecond:         "'1 microseconds'::pg_catalog.interval",
		0:                       "'0 microseconds'::pg_catalog.interval",
	} {
		if got := interval(d); got != want {
			t.Errorf("interval(%v) = %s, want %s", d, got, want)
		}
	}
}
