package fencecheck

import (
	"bytes"
	"strings"
	"testing"
)

// Two terms of one key, as a fenced store records them: a writes under
// revision 100 from t=10 to t=20 and its term ends at 25; b leads from 30
// and writes from 31 under revision 200.
var (
	termA = Term{Holder: "pod-a", Token: 1, Revision: "100"}
	termB = Term{Holder: "pod-b", Token: 2, Revision: "200"}
)

func goodHistory() History {
	h := History{
		Tenures: []Tenure{{Term: termA, First: 5, End: 25}, {Term: termB, First: 30, End: 60}},
		Fences:  []Fence{{Key: "k", Revision: "200", Token: 2}},
	}
	add := func(id int64, term Term, sent Instant, v Verdict) {
		h.Attempts = append(h.Attempts, Attempt{ID: id, Key: "k", Writer: term.Holder, Term: term,
			ToldLeader: true, ValidUntil: sent + 5, Sent: sent, Done: sent + 1, Verdict: v})
		if v == Accepted {
			h.Accepted = append(h.Accepted, Row{Seq: int64(len(h.Accepted) + 1), Key: "k", Attempt: id, Term: term})
		}
	}
	add(1, termA, 10, Accepted)
	add(2, termA, 20, Accepted)
	add(3, termB, 31, Accepted)
	add(4, termA, 35, Refused) // a paused a waking up: the fence refuses it
	add(5, termB, 40, Accepted)
	return h
}

// failed returns the rules with findings.
func failed(r Result) map[Rule]int {
	out := map[Rule]int{}
	for _, f := range r.Findings {
		out[f.Rule]++
	}
	return out
}

func wantOnly(t *testing.T, r Result, rule Rule) {
	t.Helper()
	got := failed(r)
	if got[rule] == 0 {
		t.Errorf("no %v finding; findings: %v", rule, r.Findings)
	}
	for other, n := range got {
		if other != rule {
			t.Errorf("%d unexpected %v findings: %v", n, other, r.Findings)
		}
	}
}

func TestFencedHistoryPassesEveryRule(t *testing.T) {
	r := Check(goodHistory())
	if !r.Passed() {
		t.Fatalf("findings: %v", r.Findings)
	}
	if len(r.Lines) != 4 || r.Refused["k"] != 1 || r.Accepted["k"] != 4 || r.Attempts["k"] != 5 {
		t.Errorf("lines %v, attempts %v, accepted %v, refused %v", r.Lines, r.Attempts, r.Accepted, r.Refused)
	}
	var out bytes.Buffer
	if p, f := r.Print(&out); p != 4 || f != 0 || !strings.HasSuffix(out.String(), "4 passed, 0 failed\n") {
		t.Errorf("Print: %d passed, %d failed:\n%s", p, f, out.String())
	}
}

func TestStaleWriteAcceptedFailsTermAndFenceOrder(t *testing.T) {
	h := goodHistory()
	// The store accepted a's late write (the fence bypassed): after b's.
	h.Attempts[3].Verdict = Accepted
	h.Accepted = append(h.Accepted[:3], Row{Seq: 4, Key: "k", Attempt: 4, Term: termA}, Row{Seq: 5, Key: "k", Attempt: 5, Term: termB})
	r := Check(h)
	got := failed(r)
	if got[TermOrder] != 1 || got[FenceOrder] != 1 || len(got) != 2 {
		t.Errorf("findings %v; want one term-order and one fence-order", r.Findings)
	}
	var out bytes.Buffer
	if _, f := r.Print(&out); f != 2 || !strings.HasSuffix(out.String(), "2 passed, 2 failed\n") {
		t.Errorf("Print:\n%s", out.String())
	}
}

func TestStaleWriteAcceptedInTimeFailsTermOrder(t *testing.T) {
	// A store whose sequence is not its commit order: a's write committed
	// after b's (in time) but took a lower sequence number.
	h := goodHistory()
	h.Attempts[3].Verdict = Accepted
	h.Accepted = []Row{{1, "k", 1, termA}, {2, "k", 2, termA}, {3, "k", 4, termA}, {4, "k", 3, termB}, {5, "k", 5, termB}}
	wantOnly(t, Check(h), TermOrder)
}

func TestRevisionGoingBackwardsWithinTheHarnessOrderFailsFenceOrder(t *testing.T) {
	// The harness saw b lead after a, but b's revision is lower: the
	// fence's order and the election's disagree.
	h := goodHistory()
	low := Term{Holder: "pod-b", Token: 2, Revision: "50"}
	h.Tenures[1].Term = low
	for i := range h.Attempts {
		if h.Attempts[i].Term == termB {
			h.Attempts[i].Term = low
		}
	}
	for i := range h.Accepted {
		if h.Accepted[i].Term == termB {
			h.Accepted[i].Term = low
		}
	}
	h.Fences[0].Revision = "50"
	wantOnly(t, Check(h), FenceOrder)
}

func TestFenceTableBehindTheLastWriteFailsFenceOrder(t *testing.T) {
	h := goodHistory()
	h.Fences[0].Revision = "100"
	wantOnly(t, Check(h), FenceOrder)
}

func TestWritesWithoutAFenceRowFailFenceOrder(t *testing.T) {
	h := goodHistory()
	h.Fences = nil
	wantOnly(t, Check(h), FenceOrder)
}

func TestNewTermWritingBeforeThePreviousEndedFailsHandover(t *testing.T) {
	h := goodHistory()
	h.Tenures[0].End = 32 // a's promise ran until after b's first write began
	wantOnly(t, Check(h), Handover)
}

func TestTermTheHarnessNeverSawFailsHandover(t *testing.T) {
	h := goodHistory()
	h.Tenures = h.Tenures[:1]
	wantOnly(t, Check(h), Handover)
}

func TestLedgerDisagreementsFailLedger(t *testing.T) {
	for name, change := range map[string]func(*History){
		"accepted without a row": func(h *History) { h.Accepted = h.Accepted[:len(h.Accepted)-1] },
		"row of no attempt": func(h *History) {
			h.Accepted = append(h.Accepted, Row{Seq: 9, Key: "k", Attempt: 99, Term: termB})
		},
		"row of a refused attempt": func(h *History) {
			h.Accepted = append(h.Accepted, Row{Seq: 9, Key: "k", Attempt: 4, Term: termA})
			h.Accepted[len(h.Accepted)-1].Term = termB // keep the orders intact: only the ledger disagrees
			h.Attempts[3].Term = termB
		},
		"row under another term": func(h *History) { h.Accepted[1].Term.Token = 7 },
	} {
		t.Run(name, func(t *testing.T) {
			h := goodHistory()
			change(&h)
			if got := failed(Check(h)); got[Ledger] == 0 {
				t.Errorf("no ledger finding: %v", got)
			}
		})
	}
}

func TestRevisionsCompareAsIntegers(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"9", "10", -1}, {"10", "9", 1}, {"0042", "42", 0}, {"", "0", 0},
		{"340282366920938463463374607431768211455", "18446744073709551616", 1},
	} {
		if got := CompareRevisions(c.a, c.b); got != c.want {
			t.Errorf("CompareRevisions(%q, %q) = %d; want %d", c.a, c.b, got, c.want)
		}
	}
}

func TestResultsOfTwoElectionsAddUp(t *testing.T) {
	r := Check(goodHistory())
	bad := goodHistory()
	bad.Fences = nil
	for i := range bad.Attempts {
		bad.Attempts[i].Key = "other"
	}
	for i := range bad.Accepted {
		bad.Accepted[i].Key = "other"
	}
	r.Add(Check(bad))
	if len(r.Lines) != 8 || r.Passed() || r.Refused["k"] != 1 || r.Refused["other"] != 1 {
		t.Errorf("lines %d, passed %v, refused %v", len(r.Lines), r.Passed(), r.Refused)
	}
	var out bytes.Buffer
	if p, f := r.Print(&out); p != 7 || f != 1 {
		t.Errorf("Print: %d passed, %d failed; want 7, 1:\n%s", p, f, out.String())
	}
}
