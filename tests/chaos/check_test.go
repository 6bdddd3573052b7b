package main

import (
	"testing"
	"time"
)

const ms = Instant(time.Millisecond)

// leads is member answering leader exactly (gRPC, with validUntilBoottime)
// every 10ms over [from, to], each promising validFor.
func leads(member string, from, to Instant, validFor time.Duration) []Answer {
	var out []Answer
	for t := from; t <= to; t += 10 * ms {
		out = append(out, Answer{Member: member, Surface: GRPC, Client: "app-" + member,
			Send: t - ms, Recv: t + ms, IsLeader: true, Token: 1, ValidFor: validFor,
			ValidUntil: t.Add(validFor)})
	}
	return out
}

// follows is member answering "not leader" every 10ms over [from, to].
func follows(member string, from, to Instant) []Answer {
	var out []Answer
	for t := from; t <= to; t += 10 * ms {
		out = append(out, Answer{Member: member, Surface: HTTP, Send: t, Recv: t + ms})
	}
	return out
}

func withToken(as []Answer, token int32, revision int64) []Answer {
	for i := range as {
		as[i].Token, as[i].Revision = token, revision
	}
	return as
}

func join(parts ...[]Answer) []Answer {
	var out []Answer
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

const everything = Instant(1 << 62)

// The harness's self-check: a synthetic pair of leaders is counted.
func TestTwoMembersLeadingAtOnceIsOneOverlap(t *testing.T) {
	answers := join(leads("a", 0, 1000*ms, 0), leads("b", 500*ms, 600*ms, 0))
	r := Check(answers, nil, 0, everything)
	if len(r.Overlaps) != 1 {
		t.Fatalf("overlaps %+v, want one", r.Overlaps)
	}
	o := r.Overlaps[0]
	if o.A != "a" || o.B != "b" || o.At != 500*ms || o.Length != 100*time.Millisecond {
		t.Errorf("overlap %+v, want a and b at 500ms for 100ms", o)
	}
}

func TestOneSharedExactInstantIsAnOverlap(t *testing.T) {
	answers := join(leads("a", 0, 100*ms, 0), leads("b", 100*ms, 100*ms, 0))
	if r := Check(answers, nil, 0, everything); len(r.Overlaps) != 1 {
		t.Errorf("overlaps %+v, want one at 100ms", r.Overlaps)
	}
}

func TestCleanHandoverHasNoFindings(t *testing.T) {
	answers := join(
		leads("a", 0, 1000*ms, 200*time.Millisecond), follows("a", 1010*ms, 2000*ms),
		follows("b", 0, 1190*ms), withToken(leads("b", 1200*ms, 2000*ms, 0), 2, 0))
	r := Check(answers, nil, 0, everything)
	if len(r.Overlaps)+len(r.Broken) != 0 {
		t.Errorf("overlaps %+v broken %d, want none", r.Overlaps, len(r.Broken))
	}
	if len(r.Transitions) != 1 || !r.Transitions[0].OK() {
		t.Errorf("transitions %+v, want one good one", r.Transitions)
	}
}

func TestNextLeaderInsideAPromiseBreaksIt(t *testing.T) {
	// a's last answers promise 1.5s; b leads 20ms after a stopped answering.
	answers := join(
		leads("a", 0, 1000*ms, 1500*time.Millisecond), follows("a", 1010*ms, 3000*ms),
		withToken(leads("b", 1020*ms, 3000*ms, 0), 2, 0))
	r := Check(answers, nil, 0, everything)
	if len(r.Overlaps) != 0 {
		t.Errorf("overlaps %+v, want none (a had stopped answering leader)", r.Overlaps)
	}
	// Every answer of a from 0 on promised past 1020ms.
	if len(r.Broken) != 101 {
		t.Fatalf("%d broken promises, want 101", len(r.Broken))
	}
	last := r.Broken[len(r.Broken)-1]
	if last.By != "b" || last.At != 1020*ms || last.Excess != 1480*time.Millisecond {
		t.Errorf("last broken %+v, want by b at 1020ms, 1480ms early", last)
	}
}

func TestAcknowledgedPromisesEndAtTheAcknowledgement(t *testing.T) {
	answers := join(
		leads("a", 0, 1000*ms, 1500*time.Millisecond), follows("a", 1010*ms, 3000*ms),
		withToken(leads("b", 1020*ms, 3000*ms, 0), 2, 0))
	ack := Ack{Member: "a", Client: "app-a", Token: 1, At: 1015 * ms, Done: 1016 * ms, Acknowledged: true}
	if r := Check(answers, []Ack{ack}, 0, everything); len(r.Broken) != 0 {
		t.Errorf("%d broken promises after the acknowledgement, want 0", len(r.Broken))
	}
	for name, bad := range map[string]Ack{
		"refused":     {Member: "a", Client: "app-a", Token: 1, At: 1015 * ms, Done: 1016 * ms},
		"other token": {Member: "a", Client: "app-a", Token: 7, At: 1015 * ms, Done: 1016 * ms, Acknowledged: true},
		"other client": {Member: "a", Client: "someone", Token: 1, At: 1015 * ms, Done: 1016 * ms,
			Acknowledged: true},
		"too late": {Member: "a", Client: "app-a", Token: 1, At: 1030 * ms, Done: 1031 * ms, Acknowledged: true},
		// Processed before the last answers were produced: they are new promises.
		"too early": {Member: "a", Client: "app-a", Token: 1, At: 990 * ms, Done: 995 * ms, Acknowledged: true},
	} {
		want := 101
		if name == "too early" {
			want = 1 // the answer at 1000ms, produced after the acknowledgement
		}
		if r := Check(answers, []Ack{bad}, 0, everything); len(r.Broken) != want {
			t.Errorf("%s acknowledgement: %d broken, want %d", name, len(r.Broken), want)
		}
	}
}

// An HTTP answer's validFor counts from the end of the sidecar's response
// cache: validUntilBoottime − validFor may lie after the answer arrived.
// An acknowledgement sent after it arrived covers it.
func TestCachedHTTPAnswerIsCoveredByALaterAcknowledgement(t *testing.T) {
	cached := Answer{Member: "a", Surface: HTTP, Client: "app-a", Send: 1000 * ms, Recv: 1001 * ms,
		IsLeader: true, Token: 1, ValidFor: 1300 * time.Millisecond, ValidUntil: 2302 * ms}
	if lo, hi := cached.Window(); lo != 1000*ms || hi != 1001*ms {
		t.Errorf("window [%v, %v], want [1000ms, 1001ms]", lo, hi)
	}
	answers := join([]Answer{cached}, withToken(leads("b", 1010*ms, 1100*ms, 0), 2, 0))
	ack := Ack{Member: "a", Client: "app-a", Token: 1, At: 1002 * ms, Done: 1003 * ms, Acknowledged: true}
	if r := Check(answers, []Ack{ack}, 0, everything); len(r.Broken) != 0 {
		t.Errorf("%d broken, want 0", len(r.Broken))
	}
	if r := Check(answers, nil, 0, everything); len(r.Broken) != 1 {
		t.Errorf("without the acknowledgement: %d broken, want 1", len(r.Broken))
	}
}

func TestAnonymousPromisesAreNotAcknowledged(t *testing.T) {
	anon := Answer{Member: "a", Surface: AnonHTTP, Send: 999 * ms, Recv: 1001 * ms, IsLeader: true,
		Token: 1, ValidFor: time.Second, ValidUntil: 2000 * ms}
	answers := join([]Answer{anon}, withToken(leads("b", 1500*ms, 1600*ms, 0), 2, 0))
	ack := Ack{Member: "a", Client: "", Token: 1, At: 1100 * ms, Done: 1101 * ms, Acknowledged: true}
	if r := Check(answers, []Ack{ack}, 0, everything); len(r.Broken) != 1 {
		t.Errorf("%d broken, want the anonymous promise broken", len(r.Broken))
	}
}

// Another process that shares the application's client_id did not stop
// when the application acknowledged: its promises stand.
func TestAnAcknowledgementDoesNotVoidWhatAProcessSharingTheIdWasPromised(t *testing.T) {
	shared := Answer{Member: "a", Surface: SharedHTTP, Client: "app-a", Send: 999 * ms, Recv: 1001 * ms,
		IsLeader: true, Token: 1, ValidFor: time.Second, ValidUntil: 2000 * ms}
	answers := join([]Answer{shared}, withToken(leads("b", 1500*ms, 1600*ms, 0), 2, 0))
	ack := Ack{Member: "a", Client: "app-a", Token: 1, At: 1100 * ms, Done: 1101 * ms, Acknowledged: true}
	if r := Check(answers, []Ack{ack}, 0, everything); len(r.Broken) != 1 {
		t.Errorf("%d broken, want the shared process's promise broken", len(r.Broken))
	}
}

func TestWithoutValidUntilOnlyTheCertainPartIsPromised(t *testing.T) {
	// Asked at 1000ms, answered at 1100ms, validFor 1s: certainly promised
	// [1100ms, 2000ms).
	p := Answer{Member: "a", Surface: GRPC, Client: "c", Send: 1000 * ms, Recv: 1100 * ms,
		IsLeader: true, Token: 1, ValidFor: time.Second}
	if from, until, _ := p.Promise(); from != 1100*ms || until != 2000*ms {
		t.Errorf("promise [%v, %v), want [1100ms, 2000ms)", from, until)
	}
	inside := Check(join([]Answer{p}, withToken(leads("b", 1990*ms, 1990*ms, 0), 2, 0)), nil, 0, everything)
	after := Check(join([]Answer{p}, withToken(leads("b", 2000*ms, 2000*ms, 0), 2, 0)), nil, 0, everything)
	if len(inside.Broken) != 1 || len(after.Broken) != 0 {
		t.Errorf("broken: %d with b at 1990ms (want 1), %d at 2000ms (want 0)", len(inside.Broken), len(after.Broken))
	}
}

func TestAnswersWithoutExactTimeCountOnlyWhenCertainlyInside(t *testing.T) {
	health := func(send, recv Instant) Answer {
		return Answer{Member: "b", Surface: Health, Send: send, Recv: recv, IsLeader: true}
	}
	a := leads("a", 0, 1000*ms, 0)
	for _, c := range []struct {
		send, recv Instant
		want       int
	}{
		{500 * ms, 520 * ms, 1},  // asked and answered while a led
		{990 * ms, 1020 * ms, 0}, // may have been answered after a's last answer
		{1020 * ms, 1030 * ms, 0},
	} {
		r := Check(join(a, []Answer{health(c.send, c.recv)}), nil, 0, everything)
		if len(r.Overlaps) != c.want {
			t.Errorf("health SERVING over [%v, %v]: %d overlaps, want %d", c.send, c.recv, len(r.Overlaps), c.want)
		}
	}
}

func TestSilenceOrANotLeaderAnswerEndsASegment(t *testing.T) {
	// a answered leader at 0 and at 100ms, silent in between: b at 50ms may
	// not overlap.
	gap := join(leads("a", 0, 0, 0), leads("a", 100*ms, 100*ms, 0), leads("b", 50*ms, 50*ms, 0))
	if r := Check(gap, nil, 0, everything); len(r.Overlaps) != 0 {
		t.Errorf("overlaps across a silence: %+v", r.Overlaps)
	}
	// a answered "not leader" at 45ms between leader answers 10ms apart.
	split := join(leads("a", 40*ms, 50*ms, 0), follows("a", 45*ms, 45*ms), leads("b", 47*ms, 47*ms, 0))
	if r := Check(split, nil, 0, everything); len(r.Overlaps) != 0 {
		t.Errorf("overlaps across a not-leader answer: %+v", r.Overlaps)
	}
}

func TestTokensMustGrowAcrossTerms(t *testing.T) {
	answers := join(
		withToken(leads("a", 0, 100*ms, 0), 3, 100),
		withToken(leads("b", 200*ms, 300*ms, 0), 4, 90), // revision went down
		withToken(leads("c", 400*ms, 500*ms, 0), 4, 0),  // token did not grow
		withToken(leads("a", 600*ms, 700*ms, 0), 5, 0),
	)
	r := Check(answers, nil, 0, everything)
	var got []bool
	for _, tr := range r.Transitions {
		got = append(got, tr.TokenOK, tr.RevisionOK)
	}
	want := []bool{true, false, false, true, true, true}
	if len(got) != len(want) {
		t.Fatalf("transitions %+v", r.Transitions)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("transitions %+v: token/revision ok %v, want %v", r.Transitions, got, want)
			break
		}
	}
}

func TestHealthAnswersMakeNoTerms(t *testing.T) {
	answers := join(withToken(leads("a", 0, 100*ms, 0), 3, 0),
		[]Answer{{Member: "a", Surface: Health, Send: 50 * ms, Recv: 51 * ms, IsLeader: true}})
	if terms := Terms(answers); len(terms) != 1 || terms[0].Token != 3 {
		t.Errorf("terms %+v, want a's token 3 only", terms)
	}
	if _, ok := Handover(answers, 40*ms); ok {
		t.Errorf("a health answer counted as a handover")
	}
}

func TestFindingsAreReportedInTheWindowOfTheirInstant(t *testing.T) {
	answers := join(leads("a", 0, 1000*ms, 0), leads("b", 500*ms, 600*ms, 0))
	if r := Check(answers, nil, 0, 500*ms); len(r.Overlaps) != 0 {
		t.Errorf("overlap at 500ms reported in [0, 500ms)")
	}
	if r := Check(answers, nil, 500*ms, 501*ms); len(r.Overlaps) != 1 {
		t.Errorf("overlap at 500ms not reported in [500ms, 501ms)")
	}
}

func TestHandoverIsTimedToTheNextTermsFirstAnswer(t *testing.T) {
	answers := join(leads("a", 0, 1000*ms, 0), withToken(leads("b", 1300*ms, 2000*ms, 0), 2, 0))
	if d, ok := Handover(answers, 990*ms); !ok || d != 310*time.Millisecond {
		t.Errorf("handover %v %v, want 310ms", d, ok)
	}
	if _, ok := Handover(leads("a", 0, 1000*ms, 0), 500*ms); ok {
		t.Errorf("handover found where the leader never changed")
	}
}

// An HTTP body the sidecar cached is evaluated at the end of the window it is
// served in, so validUntilBoottime − validFor can lie after its receipt; the
// application's acknowledgement right after receiving it still covers it.
func TestACachedAnswerEvaluatedAfterItsReceiptIsCoveredByTheNextAcknowledgement(t *testing.T) {
	cached := Answer{Member: "a", Surface: HTTP, Client: "app-a", Send: 999 * ms, Recv: 1000 * ms,
		IsLeader: true, Token: 1, ValidFor: 1500 * time.Millisecond,
		ValidUntil: (1002 * ms).Add(1500 * time.Millisecond)}
	answers := join(leads("a", 0, 990*ms, 1500*time.Millisecond), []Answer{cached},
		follows("a", 1010*ms, 3000*ms), withToken(leads("b", 1020*ms, 3000*ms, 0), 2, 0))
	ack := Ack{Member: "a", Client: "app-a", Token: 1, At: 1001 * ms, Done: 1002 * ms, Acknowledged: true}
	if r := Check(answers, []Ack{ack}, 0, everything); len(r.Broken) != 0 {
		t.Errorf("%d broken promises, want 0: the answer was received before the acknowledgement",
			len(r.Broken))
	}
}

// A leader answer still in flight when the application acknowledged its term
// (sent before, received after the acknowledgement was sent) was produced
// before the sidecar processed the acknowledgement: it is void too.
func TestAnAnswerInFlightDuringTheAcknowledgementIsVoid(t *testing.T) {
	inFlight := Answer{Member: "a", Surface: HTTP, Client: "app-a", Send: 999 * ms, Recv: 1003 * ms,
		IsLeader: true, Token: 1, ValidFor: 1500 * time.Millisecond,
		ValidUntil: (1001 * ms).Add(1500 * time.Millisecond)}
	answers := join(leads("a", 0, 990*ms, 1500*time.Millisecond), []Answer{inFlight},
		follows("a", 1010*ms, 3000*ms), withToken(leads("b", 1020*ms, 3000*ms, 0), 2, 0))
	ack := Ack{Member: "a", Client: "app-a", Token: 1, At: 1000 * ms, Done: 1002 * ms,
		Acknowledged: true}
	if r := Check(answers, []Ack{ack}, 0, everything); len(r.Broken) != 0 {
		t.Errorf("%d broken promises, want 0", len(r.Broken))
	}
	// Produced after the sidecar replied to the acknowledgement: a new
	// promise, which the acknowledgement does not void.
	late := inFlight
	late.Send, late.Recv, late.ValidUntil = 1004*ms, 1006*ms, (1005 * ms).Add(1500*time.Millisecond)
	answers = join(leads("a", 0, 990*ms, 1500*time.Millisecond), []Answer{late},
		follows("a", 1010*ms, 3000*ms), withToken(leads("b", 1020*ms, 3000*ms, 0), 2, 0))
	if r := Check(answers, []Ack{ack}, 0, everything); len(r.Broken) != 1 {
		t.Errorf("%d broken promises, want 1: the later answer was a new promise", len(r.Broken))
	}
}
