// Copyright (c) 2026, the dlock developers

package dlock_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestC13HTTPExample runs example_http_test.go's endpoint: a request while
// the job runs gets 409, the running one 200 with its token; the job's
// fenced write is in the table; the next request runs it again; the
// database out of reach answers 503.
func TestC13HTTPExample(t *testing.T) {
	eachDriver(t, func(t *testing.T, driver string) {
		db, a, name := open(t, driver, srv.db, ""), admin(t), lockName(t)
		table := "c13_" + driver
		fencedTable(t, a, table, name)
		started, finish := make(chan struct{}, 1), make(chan struct{})
		hs := httptest.NewServer(JobHandler(db, name, 2*time.Second,
			func(ctx context.Context, tx *sql.Tx, token int64) error {
				started <- struct{}{}
				<-finish
				_, err := tx.ExecContext(ctx, fmt.Sprintf("INSERT INTO %s VALUES (%d, NULL, 'ran') "+
					"ON CONFLICT (id) DO UPDATE SET v = 'again'", table, 1))
				return err
			}))
		defer hs.Close()
		post := func() (int, map[string]any) {
			r, err := http.Post(hs.URL, "application/json", nil)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Body.Close()
			var body map[string]any
			d := json.NewDecoder(r.Body)
			d.UseNumber()
			d.Decode(&body)
			return r.StatusCode, body
		}
		first := make(chan int, 1)
		var firstBody map[string]any
		go func() { code, body := post(); firstBody = body; first <- code }()
		<-started
		if code, body := post(); code != http.StatusConflict {
			t.Fatalf("a request while the job runs: %d %v, want 409", code, body)
		}
		close(finish)
		if code := <-first; code != http.StatusOK || firstBody["token"] == nil {
			t.Fatalf("the running request: %d %v, want 200 with a token", code, firstBody)
		}
		var token int64
		a.QueryRow("SELECT token FROM " + table + " WHERE id = 1").Scan(&token)
		if fmt.Sprint(token) != fmt.Sprint(firstBody["token"]) {
			t.Fatalf("the fenced row has token %d, the answer %v", token, firstBody["token"])
		}
		// The lease was released: the next request runs the job again.
		if code, body := post(); code != http.StatusOK || tokenOf(body) <= token {
			t.Fatalf("the next request: %d %v, want 200 with a newer token", code, body)
		}
		<-started
		// The database out of reach: 503 with Retry-After.
		gone := httptest.NewServer(JobHandler(open(t, driver, srv.db, "127.0.0.1:1"), name, time.Second,
			func(context.Context, *sql.Tx, int64) error { return nil }))
		defer gone.Close()
		r, err := http.Post(gone.URL, "application/json", nil)
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		if r.StatusCode != http.StatusServiceUnavailable || r.Header.Get("Retry-After") == "" {
			t.Fatalf("the database out of reach: %d, want 503 with Retry-After", r.StatusCode)
		}
	})
}

func tokenOf(body map[string]any) int64 {
	n, _ := body["token"].(json.Number)
	v, _ := n.Int64()
	return v
}
