package main

import (
	"fmt"
	"sort"
	"time"
)

// The checker: the safety properties of docs/design.md evaluated exactly over
// recorded answers.
//
// What a sample proves. An answer tells that its member answered "leader" at
// one instant of its Window. Between two leader answers of one member less
// than maxGap apart, with no "not leader" answer of that member produced in
// between, the member is taken to have led throughout: with every surface
// sampled at >= 100 Hz, a member that stopped leading in such a gap would
// have said so. Such a run of answers is a segment; the instants it
// certainly covers are [earliest Recv-side bound, latest Send-side bound] of
// its answers, a single instant for a lone exact answer.
//
//   - P1 (one leader): no two segments of different members certainly share an
//     instant: their certain intervals intersect with positive length, or one
//     member's answer was certainly produced inside the other's interval.
//   - P2 (validity): for every promise (Answer.Promise), no other member
//     certainly led inside it. A promise ends early, at the acknowledgement's
//     sending, when the sidecar confirmed an acknowledgement of that client
//     and token that it may have processed after producing the answer (the
//     answer's earliest production is before the acknowledgement came back).
//   - P3 (tokens): terms — (member, fencingToken, fencingRevision) of leader
//     answers — ordered by their first answer have strictly increasing tokens,
//     and strictly increasing revisions where both are known (non-zero).
//
// Each finding has an instant; Check reports those inside the window it is
// given, so successive windows over one growing record count each once.

// maxGap is the longest silence inside a segment.
const maxGap = 50 * time.Millisecond

// Overlap is a P1 violation: members A and B both led at instant At, and
// certainly for Length after it (0 when only an instant is certain).
type Overlap struct {
	A, B   string
	At     Instant
	Length time.Duration
}

// Broken is a P2 violation: Promise was given until Until (after any
// acknowledgement) and By certainly led at At, Excess before Until.
type Broken struct {
	Promise Answer
	Until   Instant
	By      string
	At      Instant
	Excess  time.Duration
}

// Term is one member's leadership under one fencing token and revision.
type Term struct {
	Member   string
	Token    int32
	Revision int64
	First    Instant // At of its first leader answer
}

func (t Term) String() string {
	return fmt.Sprintf("%s token %d revision %d", t.Member, t.Token, t.Revision)
}

// Transition is a change of term; P3 wants TokenOK and RevisionOK.
type Transition struct {
	Prev, Next Term
	TokenOK    bool
	RevisionOK bool
}

// OK says whether the transition keeps P3.
func (t Transition) OK() bool { return t.TokenOK && t.RevisionOK }

// Result is what Check found in one window.
type Result struct {
	Overlaps    []Overlap
	Broken      []Broken
	Transitions []Transition
}

// segment is a run of one member's leader answers (see above).
type segment struct {
	member     string
	start, end Instant   // the certain interval; start > end when empty
	answers    []*Answer // sorted by Window lo
}

func (s *segment) certain() bool { return s.start <= s.end }

// segments splits each member's leader answers into segments, each list
// in time order.
func segments(answers []Answer) map[string][]*segment {
	byMember := map[string][]*Answer{}
	for i := range answers {
		a := &answers[i]
		byMember[a.Member] = append(byMember[a.Member], a)
	}
	out := map[string][]*segment{}
	for member, as := range byMember {
		sort.SliceStable(as, func(i, j int) bool {
			li, _ := as[i].Window()
			lj, _ := as[j].Window()
			if li != lj {
				return li < lj
			}
			return !as[i].IsLeader && as[j].IsLeader // a "not leader" splits a tie
		})
		var cur *segment
		var lastHi Instant
		for _, a := range as {
			lo, hi := a.Window()
			if !a.IsLeader {
				cur = nil
				continue
			}
			if cur == nil || lo.Sub(lastHi) > maxGap {
				cur = &segment{member: member, start: hi, end: lo}
				out[member] = append(out[member], cur)
				lastHi = hi
			}
			cur.start = min(cur.start, hi)
			cur.end = max(cur.end, lo)
			lastHi = max(lastHi, hi)
			cur.answers = append(cur.answers, a)
		}
	}
	return out
}

// firstInside is the earliest instant in [from, until) at which s certainly
// led, if any: where its certain interval meets the range with positive
// length, or an answer of s produced inside the range.
func (s *segment) firstInside(from, until Instant) (Instant, bool) {
	best, found := Instant(0), false
	consider := func(t Instant) {
		if !found || t < best {
			best, found = t, true
		}
	}
	if s.certain() && max(s.start, from) < min(s.end, until) {
		consider(max(s.start, from))
	}
	i := sort.Search(len(s.answers), func(i int) bool {
		lo, _ := s.answers[i].Window()
		return lo >= from
	})
	for ; i < len(s.answers); i++ {
		lo, hi := s.answers[i].Window()
		if lo >= until || (found && lo >= best) {
			break
		}
		if hi < until {
			consider(lo)
			break
		}
	}
	return best, found
}

// overlap is where segments a and b of two members certainly share time.
func overlap(a, b *segment) (Overlap, bool) {
	o := Overlap{A: a.member, B: b.member}
	found := false
	if a.certain() && b.certain() && max(a.start, b.start) < min(a.end, b.end) {
		o.At, o.Length, found = max(a.start, b.start), min(a.end, b.end).Sub(max(a.start, b.start)), true
	}
	for _, p := range [][2]*segment{{a, b}, {b, a}} {
		outer, inner := p[0], p[1]
		if !outer.certain() {
			continue
		}
		// An answer of inner produced inside outer's certain interval
		// (closed: a shared exact instant is an overlap too).
		if t, ok := inner.firstInside(outer.start, outer.end+1); ok && (!found || t < o.At) {
			o.At, found = t, true
		}
	}
	return o, found
}

type ackKey struct {
	member, client string
	token          int32
}

// Check evaluates P1–P3 over answers and acks and returns what it found at
// instants in [from, to).
func Check(answers []Answer, acks []Ack, from, to Instant) Result {
	var r Result
	inWindow := func(t Instant) bool { return from <= t && t < to }
	segs := segments(answers)
	members := make([]string, 0, len(segs))
	for m := range segs {
		members = append(members, m)
	}
	sort.Strings(members)

	// P1.
	for i, x := range members {
		for _, y := range members[i+1:] {
			for _, sx := range segs[x] {
				for _, sy := range segs[y] {
					if o, ok := overlap(sx, sy); ok && inWindow(o.At) {
						r.Overlaps = append(r.Overlaps, o)
					}
				}
			}
		}
	}

	// P2.
	acked := map[ackKey][]Ack{}
	for _, a := range acks {
		if a.Acknowledged {
			k := ackKey{a.Member, a.Client, a.Token}
			acked[k] = append(acked[k], a)
		}
	}
	for i := range answers {
		p := &answers[i]
		start, until, ok := p.Promise()
		if !ok {
			continue
		}
		// An acknowledgement says the application stopped: it voids what the
		// application was promised, never what another process that shares
		// its client_id was.
		if p.Surface.application() {
			produced, _ := p.Window()
			for _, a := range acked[ackKey{p.Member, p.Client, p.Token}] {
				if produced <= a.Done && a.At < until {
					until = a.At
				}
			}
			if until <= start {
				continue
			}
		}
		var b *Broken
		for _, y := range members {
			if y == p.Member {
				continue
			}
			for _, s := range segs[y] {
				if t, ok := s.firstInside(start, until); ok && (b == nil || t < b.At) {
					b = &Broken{Promise: *p, Until: until, By: y, At: t, Excess: until.Sub(t)}
				}
			}
		}
		if b != nil && inWindow(b.At) {
			r.Broken = append(r.Broken, *b)
		}
	}

	// P3.
	terms := Terms(answers)
	for i := 1; i < len(terms); i++ {
		prev, next := terms[i-1], terms[i]
		if !inWindow(next.First) {
			continue
		}
		r.Transitions = append(r.Transitions, Transition{
			Prev: prev, Next: next, TokenOK: next.Token > prev.Token,
			RevisionOK: prev.Revision == 0 || next.Revision == 0 || next.Revision > prev.Revision,
		})
	}
	return r
}

type termKey struct {
	member   string
	token    int32
	revision int64
}

func keyOf(a *Answer) termKey { return termKey{a.Member, a.Token, a.Revision} }

// Terms lists the terms of the leader answers that carry a token (all but
// gRPC health), ordered by first answer.
func Terms(answers []Answer) []Term {
	first := map[termKey]Instant{}
	for i := range answers {
		a := &answers[i]
		if !a.IsLeader || !a.Surface.hasToken() {
			continue
		}
		k := keyOf(a)
		if t, ok := first[k]; !ok || a.At() < t {
			first[k] = a.At()
		}
	}
	terms := make([]Term, 0, len(first))
	for k, t := range first {
		terms = append(terms, Term{Member: k.member, Token: k.token, Revision: k.revision, First: t})
	}
	sort.Slice(terms, func(i, j int) bool { return terms[i].First < terms[j].First })
	return terms
}

// Handover is how long after fault the first leader answer of a term other
// than the one that led last before fault came (by Answer.At, among answers
// that carry a token); false when no other term led after fault.
func Handover(answers []Answer, fault Instant) (time.Duration, bool) {
	var old termKey
	var oldAt Instant
	haveOld := false
	for i := range answers {
		a := &answers[i]
		if a.IsLeader && a.Surface.hasToken() && a.At() < fault && (!haveOld || a.At() > oldAt) {
			old, oldAt, haveOld = keyOf(a), a.At(), true
		}
	}
	var next Instant
	found := false
	for i := range answers {
		a := &answers[i]
		if a.IsLeader && a.Surface.hasToken() && a.At() >= fault && (!haveOld || keyOf(a) != old) &&
			(!found || a.At() < next) {
			next, found = a.At(), true
		}
	}
	return next.Sub(fault), found
}
