package fencecheck

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func now() Instant {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		panic(err)
	}
	return Instant(ts.Nano())
}

// startStore starts a throwaway PostgreSQL for the test (skipped where it
// is not installed) and opens a Store in a database of its own.
func startStore(t *testing.T) *Store {
	t.Helper()
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	// Not t.TempDir: run as root, the server runs as nobody, which must
	// reach the directory.
	dir, err := os.MkdirTemp("", "baton-fencecheck-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	pg, err := StartPostgres(root, dir)
	if errors.Is(err, ErrNoPostgres) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pg.Stop() })
	s, err := OpenStore(context.Background(), pg.DSN, 4)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// runHandover plays, against the real store, a failover with a paused old
// leader: pod-a writes while it leads; its term ends; pod-b leads and
// writes; then pod-a wakes up and writes again with its old term, and
// retries one of its first writes late. It returns the History.
func runHandover(t *testing.T, s *Store, bypass bool) History {
	t.Helper()
	ctx := context.Background()
	var h History
	id := int64(0)
	write := func(term Term, validUntil Instant, late bool) {
		id++
		a := Attempt{ID: id, Key: "orders", Writer: term.Holder, Term: term, ToldLeader: true,
			ValidUntil: validUntil, Late: late, Sent: now()}
		a.Verdict, _ = s.Write(ctx, a, bypass)
		a.Done = now()
		h.Attempts = append(h.Attempts, a)
	}
	aFirst := now()
	aUntil := aFirst.Add(time.Hour) // placeholder until the term ends below
	for range 3 {
		write(termA, aUntil, false)
	}
	aEnd := now() // a is paused: its last promise lapses now
	time.Sleep(time.Millisecond)
	bFirst := now()
	for range 3 {
		write(termB, bFirst.Add(time.Second), false)
	}
	write(termA, aEnd, false) // a wakes up, ignoring that its validity ran out
	write(termA, aEnd, true)  // and retries an old write late
	write(termB, bFirst.Add(time.Second), false)
	h.Tenures = []Tenure{{Term: termA, First: aFirst, End: aEnd}, {Term: termB, First: bFirst, End: now()}}
	var err error
	if h.Accepted, h.Fences, err = s.Read(ctx); err != nil {
		t.Fatal(err)
	}
	return h
}

func TestRealStoreThroughTheFencePasses(t *testing.T) {
	s := startStore(t)
	r := Check(runHandover(t, s, false))
	if !r.Passed() {
		t.Fatalf("findings through the fence: %v", r.Findings)
	}
	if r.Refused["orders"] != 2 || r.Accepted["orders"] != 7 {
		t.Errorf("accepted %d, refused %d; want 7 and the woken leader's 2", r.Accepted["orders"], r.Refused["orders"])
	}
}

func TestRealStoreBypassingTheFenceFails(t *testing.T) {
	s := startStore(t)
	h := runHandover(t, s, true)
	r := Check(h)
	got := failed(r)
	if got[TermOrder] != 2 {
		t.Errorf("term-order findings %d; want the 2 stale writes accepted: %v", got[TermOrder], r.Findings)
	}
	if got[FenceOrder] == 0 {
		t.Errorf("no fence-order finding: %v", r.Findings)
	}
	if r.Refused["orders"] != 0 {
		t.Errorf("refused %d without a fence", r.Refused["orders"])
	}
	fmt.Fprintln(os.Stderr, "the checker's table over writes that bypassed the fence:")
	r.Print(os.Stderr)
}
