package pgfence_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-sidecar/baton/clients/go/baton"
	"github.com/baton-sidecar/baton/clients/go/pgfence"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The tests share one throwaway PostgreSQL cluster (clients/testing/postgres),
// started by TestMain in a directory of its own and removed at the end; each
// test has tables of its own.
var (
	dsn        string
	skipReason string
)

func TestMain(m *testing.M) {
	os.Exit(runWithPostgres(m))
}

func runWithPostgres(m *testing.M) int {
	script, err := filepath.Abs("../../testing/postgres")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// Not t.TempDir: run as root, the server runs as nobody, which must be
	// able to reach the directory.
	dir, err := os.MkdirTemp("", "baton-pgfence-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	out, err := exec.Command(script, "start", dir).CombinedOutput()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit) && exit.ExitCode() == 77:
		skipReason = string(out)
	case err != nil:
		fmt.Fprintf(os.Stderr, "clients/testing/postgres start: %v\n%s", err, out)
		return 1
	default:
		defer exec.Command(script, "stop", dir).Run() //nolint:errcheck // best effort; the watcher stops it too
		var info struct{ DSN string }
		raw, err := os.ReadFile(filepath.Join(dir, "postgres.json"))
		if err == nil {
			err = json.Unmarshal(raw, &info)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		dsn = info.DSN
	}
	return m.Run()
}

var tableSeq atomic.Int32

// setup returns a pool and a fence with a new fence table and a new data
// table (key text primary key, value text).
func setup(t *testing.T, order pgfence.Order) (*pgxpool.Pool, pgfence.Fence, string) {
	t.Helper()
	if dsn == "" {
		t.Skip("PostgreSQL is not installed: " + skipReason)
	}
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	n := tableSeq.Add(1)
	fence := pgfence.Fence{Table: pgx.Identifier{fmt.Sprintf("fence_%d", n)}, Order: order}
	if err := fence.EnsureSchema(ctx, pool); err != nil {
		t.Fatal(err)
	}
	data := fmt.Sprintf("data_%d", n)
	if _, err := pool.Exec(ctx, "CREATE TABLE "+data+" (key text PRIMARY KEY, value text NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	return pool, fence, data
}

// newTerm is the term of revision (decimal digits) and token.
func newTerm(revision string, token int32) pgfence.Term {
	r, err := baton.ParseRevision(revision)
	if err != nil {
		panic(err)
	}
	return pgfence.Term{Revision: r, Token: token}
}

// put is a fenced write of value to key in data, under term.
func put(ctx context.Context, db pgfence.Beginner, fence pgfence.Fence, data, key, value string, term pgfence.Term) error {
	return fence.Write(ctx, db, key, term, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, "INSERT INTO "+data+" (key, value) VALUES ($1, $2) "+
			"ON CONFLICT (key) DO UPDATE SET value = excluded.value", key, value)
		return err
	})
}

func value(t *testing.T, db pgfence.Querier, data, key string) string {
	t.Helper()
	var v string
	if err := db.QueryRow(context.Background(), "SELECT value FROM "+data+" WHERE key = $1", key).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

func wantStale(t *testing.T, err error, term, highest pgfence.Term) *pgfence.StaleError {
	t.Helper()
	var stale *pgfence.StaleError
	if !errors.As(err, &stale) {
		t.Fatalf("write of term %v: err = %v; want a *pgfence.StaleError", term, err)
	}
	if stale.Term != term || stale.Highest != highest {
		t.Errorf("StaleError term %v, highest %v; want %v, %v", stale.Term, stale.Highest, term, highest)
	}
	return stale
}

func TestNewerRevisionIsAdmittedAndItsWriteLands(t *testing.T) {
	pool, fence, data := setup(t, pgfence.ByRevision)
	ctx := context.Background()
	if err := put(ctx, pool, fence, data, "k", "first", newTerm("100", 3)); err != nil {
		t.Fatal(err)
	}
	if err := put(ctx, pool, fence, data, "k", "second", newTerm("250", 4)); err != nil {
		t.Fatal(err)
	}
	if got := value(t, pool, data, "k"); got != "second" {
		t.Errorf("value = %q; want the newer term's write", got)
	}
	if h, ok, err := fence.Highest(ctx, pool, "k"); err != nil || !ok || h != newTerm("250", 4) {
		t.Errorf("Highest = %v, %v, %v; want revision 250, token 4", h, ok, err)
	}
}

func TestOlderRevisionIsRefusedAndItsWriteDoesNotLand(t *testing.T) {
	pool, fence, data := setup(t, pgfence.ByRevision)
	ctx := context.Background()
	newer := newTerm("250", 4)
	if err := put(ctx, pool, fence, data, "k", "newer", newer); err != nil {
		t.Fatal(err)
	}
	older := newTerm("100", 3)
	called := false
	err := fence.Write(ctx, pool, "k", older, func(pgx.Tx) error { called = true; return nil })
	wantStale(t, err, older, newer)
	if called {
		t.Error("the refused term's write function was called")
	}
	err = put(ctx, pool, fence, data, "k", "older", older)
	wantStale(t, err, older, newer)
	var rev *baton.StaleRevisionError
	if !errors.As(err, &rev) || rev.Revision != older.Revision || rev.Highest != newer.Revision {
		t.Errorf("errors.As(*baton.StaleRevisionError) = %+v; want revision 100, highest 250", rev)
	}
	if got := value(t, pool, data, "k"); got != "newer" {
		t.Errorf("value = %q after a refused write; want it unchanged", got)
	}
	if h, _, _ := fence.Highest(ctx, pool, "k"); h != newer {
		t.Errorf("fence holds %v after a refused write; want %v", h, newer)
	}
}

func TestEqualRevisionIsAdmitted(t *testing.T) {
	pool, fence, data := setup(t, pgfence.ByRevision)
	ctx := context.Background()
	term := newTerm("42", 1)
	for i := range 3 {
		if err := put(ctx, pool, fence, data, "k", "write "+strconv.Itoa(i), term); err != nil {
			t.Fatalf("write %d of the same term: %v", i, err)
		}
	}
	if got := value(t, pool, data, "k"); got != "write 2" {
		t.Errorf("value = %q; want the term's last write", got)
	}
}

func TestKeysAreFencedApart(t *testing.T) {
	pool, fence, data := setup(t, pgfence.ByRevision)
	ctx := context.Background()
	if err := put(ctx, pool, fence, data, "a", "a", newTerm("500", 2)); err != nil {
		t.Fatal(err)
	}
	if err := put(ctx, pool, fence, data, "b", "b", newTerm("10", 1)); err != nil {
		t.Errorf("a term older than another key's fence was refused: %v", err)
	}
}

func TestRevisionsBeyond64BitsCompareAsIntegers(t *testing.T) {
	pool, fence, data := setup(t, pgfence.ByRevision)
	ctx := context.Background()
	max128 := "340282366920938463463374607431768211455" // 2^128 - 1: 39 digits
	steps := []struct {
		revision string
		stale    bool
	}{
		{"9", false},
		{"10", false},                   // longer, so larger, though "10" < "9" as text
		{"9223372036854775808", false},  // 2^63: beyond int64
		{"18446744073709551616", false}, // 2^64
		{"9223372036854775809", true},   // shorter than the one held
		{"18446744073709551615", true},  // same length, lower
		{"18446744073709551616", false}, // equal
		{max128, false},
		{"340282366920938463463374607431768211454", true},
	}
	var last pgfence.Term
	for i, s := range steps {
		term := newTerm(s.revision, int32(i))
		err := put(ctx, pool, fence, data, "k", s.revision, term)
		if s.stale {
			st := wantStale(t, err, term, last)
			var rev *baton.StaleRevisionError
			if !errors.As(st, &rev) || rev.Revision != term.Revision || rev.Highest != last.Revision {
				t.Errorf("errors.As(*baton.StaleRevisionError) = %+v; want revision %v, highest %v", rev,
					term.Revision, last.Revision)
			}
			continue
		}
		if err != nil {
			t.Fatalf("revision %s after %v: %v; want it admitted", s.revision, last.Revision, err)
		}
		last = term
	}
	if got := value(t, pool, data, "k"); got != max128 {
		t.Errorf("value = %q; want the highest revision's write", got)
	}
}

// A member with no history recreates a deleted Lease: leaseTransitions (the
// token) starts again at 0, the revision keeps growing. The default fence
// admits the new leader; a fence by token would refuse it.
func TestRecreatedLeaseNewLeaderIsAdmittedByTheDefaultFence(t *testing.T) {
	before := newTerm("8000", 5)
	after := newTerm("9100", 0)
	ctx := context.Background()

	pool, fence, data := setup(t, 0) // the zero Order: the default
	if err := put(ctx, pool, fence, data, "k", "before", before); err != nil {
		t.Fatal(err)
	}
	if err := put(ctx, pool, fence, data, "k", "after", after); err != nil {
		t.Fatalf("the recreated Lease's first leader (token 0, higher revision) was refused: %v", err)
	}
	if got := value(t, pool, data, "k"); got != "after" {
		t.Errorf("value = %q; want the new leader's write", got)
	}
	// And the deposed leader of the old Lease, writing late, is refused.
	wantStale(t, put(ctx, pool, fence, data, "k", "late", before), before, after)

	pool, byToken, data := setup(t, pgfence.ByToken)
	if err := put(ctx, pool, byToken, data, "k", "before", before); err != nil {
		t.Fatal(err)
	}
	err := put(ctx, pool, byToken, data, "k", "after", after)
	wantStale(t, err, after, before)
	var tok *baton.StaleTokenError
	if !errors.As(err, &tok) || tok.Token != 0 || tok.Highest != 5 {
		t.Errorf("errors.As(*baton.StaleTokenError) = %+v; want token 0, highest 5", tok)
	}
}

func TestByTokenComparesTokens(t *testing.T) {
	pool, fence, data := setup(t, pgfence.ByToken)
	ctx := context.Background()
	// Without KEP-5504 the revisions are not comparable: they play no part.
	for _, s := range []struct {
		term  pgfence.Term
		stale bool
	}{
		{newTerm("900", 3), false},
		{newTerm("100", 4), false},
		{pgfence.Term{Token: 4}, false}, // no revision at all
		{newTerm("5000", 2), true},
	} {
		err := put(ctx, pool, fence, data, "k", strconv.Itoa(int(s.term.Token)), s.term)
		if got := errors.As(err, new(*pgfence.StaleError)); got != s.stale || (err != nil && !got) {
			t.Errorf("term %v: err = %v; want stale=%v", s.term, err, s.stale)
		}
	}
	if got := value(t, pool, data, "k"); got != "4" {
		t.Errorf("value = %q; want token 4's write", got)
	}
}

func TestTermsWithoutARevisionAreRefused(t *testing.T) {
	pool, fence, data := setup(t, pgfence.ByRevision)
	ctx := context.Background()
	if err := put(ctx, pool, fence, data, "k", "x", newTerm("0", 7)); !errors.Is(err, pgfence.ErrNoRevision) {
		t.Errorf("revision 0: err = %v; want ErrNoRevision", err)
	}
	if _, ok, err := fence.Highest(ctx, pool, "k"); ok || err != nil {
		t.Errorf("the fence holds a term (%v) after a term without a revision", err)
	}
}

func TestAFailedWriteLeavesTheFenceAsItWas(t *testing.T) {
	pool, fence, data := setup(t, pgfence.ByRevision)
	ctx := context.Background()
	if err := put(ctx, pool, fence, data, "k", "v", newTerm("10", 1)); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	if err := fence.Write(ctx, pool, "k", newTerm("20", 2), func(pgx.Tx) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("err = %v; want the write's own error", err)
	}
	if h, _, _ := fence.Highest(ctx, pool, "k"); h.Revision.String() != "10" {
		t.Errorf("fence holds revision %v after a rolled-back write; want 10", h.Revision)
	}
	if err := put(ctx, pool, fence, data, "k", "v", newTerm("15", 2)); err != nil {
		t.Errorf("a term between the held one and the rolled-back one was refused: %v", err)
	}
}

func TestEnsureSchemaFromManyReplicasAtOnce(t *testing.T) {
	pool, _, _ := setup(t, pgfence.ByRevision)
	ctx := context.Background()
	fence := pgfence.Fence{Table: pgx.Identifier{fmt.Sprintf("fence_race_%d", tableSeq.Add(1))}}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() { defer wg.Done(); errs <- fence.EnsureSchema(ctx, pool) }()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

// blockedOnLock waits until the backend pid waits for a lock.
func blockedOnLock(t *testing.T, db pgfence.Querier, pid uint32) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		var wait *string
		if err := db.QueryRow(context.Background(), "SELECT wait_event_type FROM pg_stat_activity WHERE pid = $1", int(pid)).Scan(&wait); err != nil {
			t.Fatal(err)
		}
		if wait != nil && *wait == "Lock" {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("backend %d never waited for the fence row's lock", pid)
}

// Two leaders' transactions overlap: the newer term admits first and holds
// its transaction open; the older term's writer must wait for it and then be
// refused, although the fence still held an older term when it started.
// (A check-then-write, SELECT then UPDATE, would admit it here.)
func TestOverlappingOlderWriterWaitsAndIsRefused(t *testing.T) {
	pool, fence, data := setup(t, pgfence.ByRevision)
	ctx := context.Background()
	if err := put(ctx, pool, fence, data, "k", "first", newTerm("100", 1)); err != nil {
		t.Fatal(err)
	}
	newer, older := newTerm("300", 3), newTerm("200", 2)

	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // after Commit: a no-op
	if err := fence.Admit(ctx, tx, "k", newer); err != nil {
		t.Fatal(err)
	}
	oldConn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer oldConn.Close(ctx)
	done := make(chan error, 1)
	go func() { done <- put(ctx, oldConn, fence, data, "k", "older", older) }()
	blockedOnLock(t, pool, oldConn.PgConn().PID())
	if _, err := tx.Exec(ctx, "UPDATE "+data+" SET value = 'newer' WHERE key = 'k'"); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		wantStale(t, err, older, newer)
	case <-time.After(10 * time.Second):
		t.Fatal("the older writer never finished")
	}
	if got := value(t, pool, data, "k"); got != "newer" {
		t.Errorf("value = %q; want the newer term's write", got)
	}
}

// The other way round: the older term admits first; the newer one waits,
// then is admitted, so both commit, in term order.
func TestOverlappingNewerWriterWaitsAndLandsAfter(t *testing.T) {
	pool, fence, data := setup(t, pgfence.ByRevision)
	ctx := context.Background()
	newer, older := newTerm("300", 3), newTerm("200", 2)
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // after Commit: a no-op
	if err := fence.Admit(ctx, tx, "k", older); err != nil {
		t.Fatal(err)
	}
	newConn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer newConn.Close(ctx)
	done := make(chan error, 1)
	go func() { done <- put(ctx, newConn, fence, data, "k", "newer", newer) }()
	blockedOnLock(t, pool, newConn.PgConn().PID())
	if _, err := tx.Exec(ctx, "INSERT INTO "+data+" VALUES ('k', 'older')"); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the newer writer: %v; want it admitted after the older one committed", err)
	}
	if got := value(t, pool, data, "k"); got != "newer" {
		t.Errorf("value = %q; want the newer term's write, landed last", got)
	}
}

// Writers of many terms race on one key. Every admitted write appends its
// revision to a log in the same transaction; the log, in commit order, must
// never go back to an older term, and every refusal must name a newer term
// than the refused one.
func TestRacingWritersCommitInTermOrder(t *testing.T) {
	pool, fence, _ := setup(t, pgfence.ByRevision)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, "CREATE TABLE race_log (seq bigserial PRIMARY KEY, revision numeric NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	const writers, writes = 8, 40
	var admitted, refused atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for i := range writes {
				// Terms rise as time goes on, with writers behind and ahead.
				rev := 1 + 2*i + rng.IntN(12)
				term := newTerm(strconv.Itoa(rev), int32(rev))
				err := fence.Write(ctx, pool, "k", term, func(tx pgx.Tx) error {
					// Widen the window between the check and the commit.
					if _, err := tx.Exec(ctx, "SELECT pg_sleep(0.001)"); err != nil {
						return err
					}
					_, err := tx.Exec(ctx, "INSERT INTO race_log (revision) VALUES ($1::numeric)", term.Revision.String())
					return err
				})
				var stale *pgfence.StaleError
				switch {
				case err == nil:
					admitted.Add(1)
				case errors.As(err, &stale):
					h, _ := strconv.Atoi(stale.Highest.Revision.String())
					if h <= rev {
						errs <- fmt.Errorf("revision %d refused in favour of %d", rev, h)
						return
					}
					refused.Add(1)
				default:
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	rows, err := pool.Query(ctx, "SELECT revision::int FROM race_log ORDER BY seq")
	if err != nil {
		t.Fatal(err)
	}
	revs, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		t.Fatal(err)
	}
	if len(revs) != int(admitted.Load()) {
		t.Errorf("%d writes in the log; %d admitted", len(revs), admitted.Load())
	}
	for i := 1; i < len(revs); i++ {
		if revs[i] < revs[i-1] {
			t.Fatalf("write %d of revision %d committed after one of revision %d", i, revs[i], revs[i-1])
		}
	}
	if refused.Load() == 0 || admitted.Load() < 2 {
		t.Errorf("%d admitted, %d refused: the race exercised nothing", admitted.Load(), refused.Load())
	}
	t.Logf("%d writes admitted, %d refused", admitted.Load(), refused.Load())
}
