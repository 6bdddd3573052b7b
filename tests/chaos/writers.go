package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"baton/tests/internal/cptest"
	"baton/tests/internal/fencecheck"
)

// The writing applications. Beside every baton member runs an application
// that writes into one PostgreSQL through the fence (clients/go/pgfence,
// ordered by revision) while its sidecar says it leads, and records every
// attempt; the store keeps what it accepted. After the run fencecheck
// replays both against the terms the probes saw (see bench/README.md).
// Some applications misbehave on purpose, so that the fence, not the
// promise, is what keeps their late writes out. client-go members write
// nothing: their LeaderElector promises no validity and reports no
// fencing revision, which the store's fence compares.

// writerMode is how a member's application writes.
type writerMode int

const (
	// writesWhileValid: only inside the promise it holds: it starts a write
	// only with writeBudget of validity left and gives the write until
	// validUntil; it stops before acknowledging a step-down.
	writesWhileValid writerMode = iota
	// writesIgnoringValidity: keeps writing with the last term it was told
	// while no answer says otherwise, validFor ignored, so through a
	// SIGSTOP of its sidecar (or a sidecar that stops answering) it writes
	// with its old token and revision.
	writesIgnoringValidity
	// retriesLate: writes while valid, and sends each of its terms' last
	// write again lateBy after it, once the term is no longer its current
	// one, as a retry queue that drains late would.
	retriesLate
)

var writerModeNames = [...]string{"writes while valid", "ignores validFor", "retries late"}

func (m writerMode) String() string { return writerModeNames[m] }

// modeOf is the application of a group's baton member i: in a group of
// three one of each; in a smaller one the misbehaving ones.
func modeOf(i, batonMembers int) writerMode {
	return writerMode(min(int(retriesLate), max(0, i+3-batonMembers)))
}

const (
	writePeriod = 50 * time.Millisecond // how often an application writes
	writeBudget = 50 * time.Millisecond // the validity a well-behaved write needs at its start
)

// fenceStore is what the groups' applications share: one PostgreSQL, the
// writers' ledger of attempts, and how to write.
type fenceStore struct {
	store  *fencecheck.Store
	pg     *fencecheck.Postgres
	bypass bool // write without the fence (to show the checker fails)
	ids    atomic.Int64
	mu     sync.Mutex
	ledger []fencecheck.Attempt
}

func (fs *fenceStore) write(a fencecheck.Attempt, deadline time.Duration) fencecheck.Attempt {
	a.ID = fs.ids.Add(1)
	a.Sent = fencecheck.Instant(Now())
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	a.Verdict, _ = fs.store.Write(ctx, a, fs.bypass)
	cancel()
	a.Done = fencecheck.Instant(Now())
	fs.mu.Lock()
	fs.ledger = append(fs.ledger, a)
	fs.mu.Unlock()
	return a
}

// writer is one member's application. It belongs to the slot, so it
// outlives its sidecar's processes, as a Pod's application container
// outlives a restart of the sidecar container; each process's probe runs
// its loop.
type writer struct {
	g    *group
	name string // the application's identity
	mode writerMode
	// retriesLate: each term's last write, until sent again.
	mu   sync.Mutex
	last map[fencecheck.Term]fencecheck.Attempt
}

func newWriter(g *group, index int) *writer {
	return &writer{g: g, name: fmt.Sprintf("%s/app-%d", g.cfg.Name, index), mode: modeOf(index, g.cfg.Baton),
		last: map[fencecheck.Term]fencecheck.Attempt{}}
}

// lateBy is how late a retriesLate application sends an old write again:
// past a lease duration and a renew deadline, so another term has usually
// written by then.
func (w *writer) lateBy() time.Duration { return w.g.timing.Lease + w.g.timing.Renew }

// run writes every writePeriod for p's member until p stops.
func (w *writer) run(p *probe) {
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		tick := time.NewTicker(writePeriod)
		defer tick.Stop()
		for !p.done() {
			w.tick(p)
			select {
			case <-tick.C:
			case <-p.stop:
			case <-p.m.Done():
			}
		}
	}()
}

// tick makes at most one write of the current term, and one late retry.
// The probe's application acknowledges a step-down only once no write is
// in flight (probe.writeMu), and starts none after.
func (w *writer) tick(p *probe) {
	fs := w.g.h.fences
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	v := p.view()
	current := fencecheck.Term{Holder: p.m.Name, Token: v.token, Revision: strconv.FormatInt(v.revision, 10)}
	now := Now()
	if v.working && v.revision != 0 {
		deadline := v.until.Sub(now)
		if w.mode == writesIgnoringValidity {
			deadline = askTimeout
		}
		if deadline >= writeBudget {
			a := fs.write(fencecheck.Attempt{Key: w.g.key(), Writer: w.name, Term: current, ToldLeader: true,
				ValidUntil: fencecheck.Instant(v.until)}, deadline)
			if w.mode == retriesLate {
				w.mu.Lock()
				w.last[current] = a
				w.mu.Unlock()
			}
		}
	}
	if w.mode != retriesLate {
		return
	}
	w.mu.Lock()
	var due *fencecheck.Attempt
	for term, a := range w.last {
		if (term != current || !v.working) && time.Duration(fencecheck.Instant(now)-a.Done) >= w.lateBy() {
			delete(w.last, term)
			due = &a
			break
		}
	}
	w.mu.Unlock()
	if due != nil {
		fs.write(fencecheck.Attempt{Key: due.Key, Writer: w.name, Term: due.Term, ValidUntil: due.ValidUntil,
			Late: true}, askTimeout)
	}
}

// tenures keeps, per group, every term the probes saw lead: from its first
// leader answer until it certainly neither led nor had a promise
// outstanding. Rounds add what they saw (their snapshots overlap); the ends
// are computed in list, once every acknowledgement is known: one that comes
// in a later round still ends a promise an earlier round saw.
type tenures struct {
	mu    sync.Mutex
	terms map[termKey]*tenure
	acks  map[ackKey][]Ack // acknowledged ones, each once
}

// tenure is what is known of one term.
type tenure struct {
	first Instant // At of its first leader answer
	led   Instant // the latest instant it certainly led
	// Per client, the promises no other dominates (one produced no earlier
	// and lasting no shorter): an acknowledgement that ends a promise ends
	// every promise it dominates. Usually one per client.
	promises map[string][]promise
}

type promise struct{ produced, until Instant }

// add records the terms of answers and the acknowledgements in acks.
func (ts *tenures) add(answers []Answer, acks []Ack) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.terms == nil {
		ts.terms, ts.acks = map[termKey]*tenure{}, map[ackKey][]Ack{}
	}
	for _, a := range acks {
		k := ackKey{a.Member, a.Client, a.Token}
		if a.Acknowledged && !slices.ContainsFunc(ts.acks[k], func(b Ack) bool { return b.At == a.At }) {
			ts.acks[k] = append(ts.acks[k], a)
		}
	}
	for i := range answers {
		a := &answers[i]
		if !a.IsLeader || !a.Surface.hasToken() {
			continue
		}
		k := keyOf(a)
		t := ts.terms[k]
		if t == nil {
			t = &tenure{first: a.At(), promises: map[string][]promise{}}
			ts.terms[k] = t
		}
		lo, _ := a.Window()
		t.first, t.led = min(t.first, a.At()), max(t.led, lo)
		if _, until, ok := a.Promise(); ok {
			t.promises[a.Client] = addPromise(t.promises[a.Client], promise{lo, until})
		}
	}
}

// addPromise adds p to the frontier ps unless one there dominates it.
func addPromise(ps []promise, p promise) []promise {
	for _, q := range ps {
		if q.produced >= p.produced && q.until >= p.until {
			return ps
		}
	}
	keep := ps[:0]
	for _, q := range ps {
		if !(p.produced >= q.produced && p.until >= q.until) {
			keep = append(keep, q)
		}
	}
	return append(keep, p)
}

// list returns the terms, ordered by first answer. A term ends at the
// latest of: the last instant it certainly led, and the end of each of its
// promises, which an acknowledgement of its client and token that the
// sidecar may have processed after producing it ends early, when sent (as
// Check counts it); anonymous promises only lapse.
func (ts *tenures) list() []fencecheck.Tenure {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	out := make([]fencecheck.Tenure, 0, len(ts.terms))
	for k, t := range ts.terms {
		end := t.led
		for client, ps := range t.promises {
			for _, p := range ps {
				until := p.until
				if client != "" {
					for _, ack := range ts.acks[ackKey{k.member, client, k.token}] {
						if p.produced <= ack.Done && ack.At < until {
							until = ack.At
						}
					}
				}
				end = max(end, until)
			}
		}
		out = append(out, fencecheck.Tenure{
			Term:  fencecheck.Term{Holder: k.member, Token: k.token, Revision: strconv.FormatInt(k.revision, 10)},
			First: fencecheck.Instant(t.first), End: fencecheck.Instant(end)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].First < out[j].First })
	return out
}

// roundSpan is when one round of a group ran: the attempts begun in it
// belong to its row.
type roundSpan struct {
	row  *row
	from Instant
}

// checkFences replays every group's writes against the store and the
// groups' terms, prints fencecheck's table, and counts each row's stale
// writes accepted (and every other finding, which fails the row) and
// refused. It returns false when the store could not be read.
func checkFences(h *harness) bool {
	fs, groups := h.fences, h.groups
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	accepted, fences, err := fs.store.Read(ctx)
	if err != nil {
		logf("reading the fenced store: %v", err)
		return false
	}
	// One History per group: its election's terms, and its key.
	res := fencecheck.Result{Attempts: map[string]int{}, Accepted: map[string]int{}, Refused: map[string]int{}}
	byKey := map[string]*group{}
	for _, g := range groups {
		byKey[g.key()] = g
		hist := fencecheck.History{Tenures: g.tenures.list()}
		for _, a := range fs.ledger {
			if a.Key == g.key() {
				hist.Attempts = append(hist.Attempts, a)
			}
		}
		for _, w := range accepted {
			if w.Key == g.key() {
				hist.Accepted = append(hist.Accepted, w)
			}
		}
		for _, f := range fences {
			if f.Key == g.key() {
				hist.Fences = append(hist.Fences, f)
			}
		}
		res.Add(fencecheck.Check(hist))
	}
	if !res.Passed() {
		h.failed.Add(1) // keep the logs
	}
	fmt.Println("\nfenced writes into PostgreSQL (tests/internal/fencecheck):")
	res.Print(os.Stdout)
	attempts := map[int64]*fencecheck.Attempt{}
	for i := range fs.ledger {
		a := &fs.ledger[i]
		attempts[a.ID] = a
		if g := byKey[a.Key]; g != nil && a.Verdict == fencecheck.Refused {
			g.rowAt(Instant(a.Sent)).staleRefused++
		}
		if g := byKey[a.Key]; g != nil && a.Verdict == fencecheck.Accepted {
			g.rowAt(Instant(a.Sent)).writes++
		}
	}
	stale := map[int64]bool{} // attempts counted as stale writes accepted
	for i, f := range res.Findings {
		g := byKey[f.Key]
		if g == nil || len(g.spans) == 0 {
			continue
		}
		r := g.spans[len(g.spans)-1].row
		if a := attempts[f.Attempt]; a != nil {
			r = g.rowAt(Instant(a.Sent))
		}
		switch {
		case f.Rule != fencecheck.TermOrder && f.Rule != fencecheck.FenceOrder:
			r.fenceOther++
		case f.Attempt == 0 || !stale[f.Attempt]:
			stale[f.Attempt] = f.Attempt != 0
			r.staleAccepted++
		}
		if i < maxFenceFindingsLogged {
			logf("%s: %v", r.name(), f)
		}
	}
	return true
}

// maxFenceFindingsLogged bounds the fence findings a run logs (the table
// above counts them all).
const maxFenceFindingsLogged = 20

// rowAt is the row of g's round in progress at t (the first round for
// what came before it).
func (g *group) rowAt(t Instant) *row {
	i := sort.Search(len(g.spans), func(i int) bool { return g.spans[i].from > t })
	return g.spans[max(i-1, 0)].row
}

// key is the fenced key g's applications write.
func (g *group) key() string { return "chaos-" + g.cfg.Name }

// startFenceStore starts the run's PostgreSQL in dir/postgres and opens the
// store; bypass makes the applications write without the fence.
func startFenceStore(dir string, bypass bool) (*fenceStore, error) {
	// Run as root, the server runs as nobody, which must reach its directory.
	if err := os.Chmod(dir, 0o711); err != nil {
		return nil, err
	}
	pg, err := fencecheck.StartPostgres(cptest.Root(), filepath.Join(dir, "postgres"))
	if err != nil {
		return nil, fmt.Errorf("the applications' PostgreSQL (install postgresql-15, as scripts/lib.sh does, or run with --writers=false): %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	store, err := fencecheck.OpenStore(ctx, pg.DSN, 16)
	if err != nil {
		pg.Stop()
		return nil, err
	}
	return &fenceStore{store: store, pg: pg, bypass: bypass}, nil
}

// Close closes the store and stops its server.
func (fs *fenceStore) Close() {
	fs.store.Close()
	if err := fs.pg.Stop(); err != nil {
		logf("stopping the applications' PostgreSQL: %v", err)
	}
}
