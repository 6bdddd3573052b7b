// Package fencecheck checks fenced writes end to end: it replays what every
// writer attempted (and what the store answered it) against what the store
// kept, and against the harness's own record of who led when, and says
// whether the fence did its work.
//
// A History has four parts, each recorded by a different party:
//
//   - Attempts, by the writers: every write attempt with its key, its term
//     (holder, fencing token, fencing revision), the writer's own view when it
//     began (was it told it leads, until when: validUntil on CLOCK_BOOTTIME,
//     the clock the harness and the sidecars share) and the store's verdict.
//   - Accepted, by the store: a table of the writes it committed, in the order
//     it committed them per key (a sequence taken inside the fenced
//     transaction, while it holds the fence row's lock).
//   - Fences, by the store: the fence table, the newest term per key.
//   - Tenures, by the harness: every term it saw lead, from its first leader
//     answer until it certainly no longer led (released or lapsed). One
//     election's terms: a History is one election and the keys its leaders
//     write (check several with Check each and Result.Add).
//
// Check verifies four rules over it (see Rule). Stale writes, the ones the
// fence exists for, are the attempts of a term older than one whose write
// the store had already accepted for the key: Refused is what the fence
// stopped; a stale write accepted is a TermOrder failure.
//
// Check is pure: no clock, no store. Safe for concurrent use on distinct
// Histories.
package fencecheck

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// Instant is a reading of CLOCK_BOOTTIME in nanoseconds, the clock of
// baton's validUntilBoottime: every process on one machine shares it.
type Instant int64

// Add is i + d.
func (i Instant) Add(d time.Duration) Instant { return i + Instant(d) }

// Sub is i - j.
func (i Instant) Sub(j Instant) time.Duration { return time.Duration(i - j) }

// Term is what a leader tags its writes with, and whose: the holder's
// identity with the fencing token and revision of its leader answers.
type Term struct {
	Holder   string
	Token    int32
	Revision string // decimal digits, up to 128 bits (baton.Revision's String)
}

func (t Term) String() string {
	return fmt.Sprintf("%s (token %d, revision %s)", t.Holder, t.Token, t.Revision)
}

// Verdict is the store's answer to one attempt.
type Verdict int

const (
	Accepted Verdict = iota // committed
	Refused                 // refused by the fence: a newer term was accepted
	Failed                  // any other outcome (an error, a deadline): the store may or may not have it
)

func (v Verdict) String() string {
	switch v {
	case Accepted:
		return "accepted"
	case Refused:
		return "refused"
	}
	return "failed"
}

// Attempt is one write a writer tried, as the writer recorded it.
type Attempt struct {
	ID     int64 // unique in the History; the store's row names it
	Key    string
	Writer string // the application that wrote (its member)
	Term   Term
	// The writer's own view when it began: whether its sidecar's latest
	// answer it acted on said leader, and that answer's validUntil (0: none).
	ToldLeader bool
	ValidUntil Instant
	Late       bool // a retry, on purpose, of an earlier write
	Sent, Done Instant
	Verdict    Verdict
}

// Row is one write the store accepted, from its table of accepted writes.
type Row struct {
	Seq     int64 // the store's commit order for the key
	Key     string
	Attempt int64
	Term    Term
}

// Fence is the fence table's row for a key: the newest term it admitted.
type Fence struct {
	Key      string
	Revision string
	Token    int32
}

// Tenure is one term as the harness saw it lead.
type Tenure struct {
	Term  Term
	First Instant // the earliest instant it answered leader
	// End: from then on the holder certainly neither led nor had a promise
	// outstanding (its last promise lapsed, or was acknowledged and the Lease
	// released). Never later than the truth: the harness counts only what an
	// answer certainly promised.
	End Instant
}

// History is everything Check replays.
type History struct {
	Attempts []Attempt
	Accepted []Row
	Fences   []Fence
	Tenures  []Tenure
}

// Rule is one property Check verifies.
type Rule int

const (
	// FenceOrder: per key, the revisions of the accepted writes, in the
	// store's commit order, never go backwards, and the fence table holds
	// the last of them.
	FenceOrder Rule = iota
	// TermOrder: per key, no write of an older term is accepted after the
	// first accepted write of a newer one, neither in the store's order nor
	// in time (begun after that write was committed). Terms are ordered by
	// the harness's record (Tenure.First), by revision where it has none.
	// A failure here is a stale write accepted.
	TermOrder
	// Handover: per key, each term's first accepted write began after every
	// earlier term (the harness's record) had ended: released, or lapsed.
	Handover
	// Ledger: the writers' verdicts and the store's table agree: every
	// accepted attempt has a row, every row an attempt that was not refused.
	Ledger
)

var ruleNames = [...]string{"fence-order", "term-order", "handover", "ledger"}

func (r Rule) String() string { return ruleNames[r] }

// Finding is one violation.
type Finding struct {
	Rule    Rule
	Key     string
	Attempt int64 // the attempt at fault (0 when none is)
	What    string
}

func (f Finding) String() string { return fmt.Sprintf("%s [%s]: %s", f.Rule, f.Key, f.What) }

// Line is one line of the table: one rule over one key.
type Line struct {
	Key     string
	Rule    Rule
	Checked int // what the rule looked at (rows, accepted attempts, terms)
	Failed  int
}

// Result is what Check found.
type Result struct {
	Lines    []Line
	Findings []Finding
	// Per key: the attempts, those accepted, and those the fence refused
	// (stale writes it stopped).
	Attempts, Accepted, Refused map[string]int
}

// Add appends o (the Result of another History: another election and its
// keys) to r, so that one table shows both.
func (r *Result) Add(o Result) {
	r.Lines = append(r.Lines, o.Lines...)
	r.Findings = append(r.Findings, o.Findings...)
	for _, m := range [][2]map[string]int{{r.Attempts, o.Attempts}, {r.Accepted, o.Accepted}, {r.Refused, o.Refused}} {
		for k, n := range m[1] {
			m[0][k] += n
		}
	}
}

// Passed says whether every rule held.
func (r Result) Passed() bool { return len(r.Findings) == 0 }

// Check replays h and verifies every rule over every key.
func Check(h History) Result {
	r := Result{Attempts: map[string]int{}, Accepted: map[string]int{}, Refused: map[string]int{}}
	keys := map[string]bool{}
	byID := map[int64]*Attempt{}
	for i := range h.Attempts {
		a := &h.Attempts[i]
		byID[a.ID] = a
		keys[a.Key] = true
		r.Attempts[a.Key]++
		switch a.Verdict {
		case Accepted:
			r.Accepted[a.Key]++
		case Refused:
			r.Refused[a.Key]++
		}
	}
	rows := map[string][]Row{}
	for _, w := range h.Accepted {
		rows[w.Key] = append(rows[w.Key], w)
		keys[w.Key] = true
	}
	fences := map[string]Fence{}
	for _, f := range h.Fences {
		fences[f.Key] = f
	}
	ord := newTermOrder(h.Tenures)
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	for _, key := range sorted {
		kr := rows[key]
		sort.Slice(kr, func(i, j int) bool { return kr[i].Seq < kr[j].Seq })
		var attempts []*Attempt
		for i := range h.Attempts {
			if h.Attempts[i].Key == key {
				attempts = append(attempts, &h.Attempts[i])
			}
		}
		fence, hasFence := fences[key]
		r.add(key, FenceOrder, len(kr), checkFenceOrder(key, kr, fence, hasFence))
		n, found := checkTermOrder(key, kr, attempts, ord)
		r.add(key, TermOrder, n, found)
		n, found = checkHandover(key, kr, byID, h.Tenures, ord)
		r.add(key, Handover, n, found)
		r.add(key, Ledger, len(kr)+len(attempts), checkLedger(key, kr, attempts, byID))
	}
	return r
}

func (r *Result) add(key string, rule Rule, checked int, found []Finding) {
	r.Lines = append(r.Lines, Line{Key: key, Rule: rule, Checked: checked, Failed: len(found)})
	r.Findings = append(r.Findings, found...)
}

// CompareRevisions orders two decimal revisions as integers: -1, 0 or 1.
// An empty revision is 0.
func CompareRevisions(a, b string) int {
	a, b = strings.TrimLeft(a, "0"), strings.TrimLeft(b, "0")
	switch {
	case len(a) != len(b):
		if len(a) < len(b) {
			return -1
		}
		return 1
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func checkFenceOrder(key string, rows []Row, fence Fence, hasFence bool) []Finding {
	var out []Finding
	for i := 1; i < len(rows); i++ {
		if CompareRevisions(rows[i].Term.Revision, rows[i-1].Term.Revision) < 0 {
			out = append(out, Finding{FenceOrder, key, rows[i].Attempt, fmt.Sprintf(
				"accepted write %d of revision %s committed after write %d of revision %s",
				rows[i].Attempt, rows[i].Term.Revision, rows[i-1].Attempt, rows[i-1].Term.Revision)})
		}
	}
	if len(rows) == 0 {
		return out
	}
	last := rows[len(rows)-1]
	switch {
	case !hasFence:
		out = append(out, Finding{FenceOrder, key, 0, fmt.Sprintf(
			"%d accepted writes but no fence row: the writes bypassed the fence", len(rows))})
	case CompareRevisions(fence.Revision, last.Term.Revision) != 0:
		out = append(out, Finding{FenceOrder, key, 0, fmt.Sprintf(
			"the fence holds revision %s; the last accepted write is of revision %s", fence.Revision, last.Term.Revision)})
	}
	return out
}

// termOrder orders terms by the harness's record, by revision where it has
// none of one.
type termOrder struct{ first map[Term]Instant }

func newTermOrder(tenures []Tenure) termOrder {
	o := termOrder{first: map[Term]Instant{}}
	for _, t := range tenures {
		if f, ok := o.first[t.Term]; !ok || t.First < f {
			o.first[t.Term] = t.First
		}
	}
	return o
}

// older says whether term a is older than term b.
func (o termOrder) older(a, b Term) bool {
	if a == b {
		return false
	}
	fa, okA := o.first[a]
	fb, okB := o.first[b]
	if okA && okB && fa != fb {
		return fa < fb
	}
	return CompareRevisions(a.Revision, b.Revision) < 0
}

func checkTermOrder(key string, rows []Row, attempts []*Attempt, o termOrder) (int, []Finding) {
	var out []Finding
	// In the store's order.
	var newest *Row
	for i := range rows {
		w := &rows[i]
		if newest != nil && o.older(w.Term, newest.Term) {
			out = append(out, Finding{TermOrder, key, w.Attempt, fmt.Sprintf(
				"stale write accepted: write %d of %v committed after write %d of the newer %v",
				w.Attempt, w.Term, newest.Attempt, newest.Term)})
			continue
		}
		if newest == nil || o.older(newest.Term, w.Term) {
			newest = w
		}
	}
	// In time: the first commit each term's writer saw, then every accepted
	// attempt begun after a newer term's.
	firstDone := map[Term]*Attempt{}
	var accepted []*Attempt
	for _, a := range attempts {
		if a.Verdict != Accepted {
			continue
		}
		accepted = append(accepted, a)
		if f := firstDone[a.Term]; f == nil || a.Done < f.Done {
			firstDone[a.Term] = a
		}
	}
	flagged := map[int64]bool{}
	for _, f := range out {
		flagged[f.Attempt] = true
	}
	for _, a := range accepted {
		if flagged[a.ID] {
			continue
		}
		for term, f := range firstDone {
			if o.older(a.Term, term) && f.Done < a.Sent {
				out = append(out, Finding{TermOrder, key, a.ID, fmt.Sprintf(
					"stale write accepted: write %d of %v begun %v after write %d of the newer %v had committed",
					a.ID, a.Term, a.Sent.Sub(f.Done).Round(time.Microsecond), f.ID, term)})
				break
			}
		}
	}
	return len(rows) + len(accepted), out
}

func checkHandover(key string, rows []Row, byID map[int64]*Attempt, tenures []Tenure, o termOrder) (int, []Finding) {
	var out []Finding
	firsts := map[Term]Row{}
	var terms []Term
	for _, w := range rows {
		if _, ok := firsts[w.Term]; !ok {
			firsts[w.Term] = w
			terms = append(terms, w.Term)
		}
	}
	for _, term := range terms {
		w := firsts[term]
		a := byID[w.Attempt]
		if a == nil {
			continue // Ledger reports it
		}
		if _, known := o.first[term]; !known {
			out = append(out, Finding{Handover, key, a.ID, fmt.Sprintf(
				"%v wrote (write %d), but the harness never saw that term lead", term, a.ID)})
			continue
		}
		for _, prev := range tenures {
			if prev.Term == term || !o.older(prev.Term, term) || a.Sent >= prev.End {
				continue
			}
			out = append(out, Finding{Handover, key, a.ID, fmt.Sprintf(
				"the first accepted write of %v (write %d) began %v before the earlier %v had ended",
				term, a.ID, prev.End.Sub(a.Sent).Round(time.Microsecond), prev.Term)})
			break
		}
	}
	return len(terms), out
}

func checkLedger(key string, rows []Row, attempts []*Attempt, byID map[int64]*Attempt) []Finding {
	var out []Finding
	inStore := map[int64]bool{}
	for _, w := range rows {
		if inStore[w.Attempt] {
			out = append(out, Finding{Ledger, key, w.Attempt, fmt.Sprintf("write %d is in the store twice", w.Attempt)})
		}
		inStore[w.Attempt] = true
		a := byID[w.Attempt]
		switch {
		case a == nil:
			out = append(out, Finding{Ledger, key, w.Attempt, fmt.Sprintf("the store holds write %d, which no writer attempted", w.Attempt)})
		case a.Key != w.Key || a.Term != w.Term:
			out = append(out, Finding{Ledger, key, w.Attempt, fmt.Sprintf(
				"the store holds write %d as %q by %v; the writer attempted %q by %v", w.Attempt, w.Key, w.Term, a.Key, a.Term)})
		case a.Verdict == Refused:
			out = append(out, Finding{Ledger, key, w.Attempt, fmt.Sprintf("write %d was refused, yet the store holds it", w.Attempt)})
		}
	}
	for _, a := range attempts {
		if a.Verdict == Accepted && !inStore[a.ID] {
			out = append(out, Finding{Ledger, key, a.ID, fmt.Sprintf("write %d was accepted, yet the store does not hold it", a.ID)})
		}
	}
	return out
}

// Print writes the table (one line per key and rule) and the findings, and
// ends with "N passed, N failed" (lines); it returns the counts.
func (r Result) Print(w io.Writer) (passed, failed int) {
	fmt.Fprintf(w, "%-24s %-12s %8s %9s %8s %8s  %s\n", "key", "rule", "checked", "violated", "writes", "refused", "")
	for _, l := range r.Lines {
		verdict := "ok"
		if l.Failed > 0 {
			verdict = "FAIL"
			failed++
		} else {
			passed++
		}
		fmt.Fprintf(w, "%-24s %-12s %8d %9d %8d %8d  %s\n", l.Key, l.Rule, l.Checked, l.Failed,
			r.Attempts[l.Key], r.Refused[l.Key], verdict)
	}
	for i, f := range r.Findings {
		if i == 20 {
			fmt.Fprintf(w, "… %d findings in all\n", len(r.Findings))
			break
		}
		fmt.Fprintf(w, "  %v\n", f)
	}
	fmt.Fprintf(w, "%d passed, %d failed\n", passed, failed)
	return passed, failed
}
