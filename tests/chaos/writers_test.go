package main

import (
	"testing"
	"time"

	"baton/tests/internal/fencecheck"
)

// leaderAnswer is a gRPC leader answer of member m's term token to client,
// produced at t and valid for v.
func leaderAnswer(m, client string, token int32, t Instant, v time.Duration) Answer {
	return Answer{Member: m, Surface: GRPC, Client: client, Send: t - 1, Recv: t + 1, IsLeader: true,
		Token: token, Revision: int64(100 + token), ValidFor: v, ValidUntil: t.Add(v)}
}

func TestTenureEndsAtTheLastPromise(t *testing.T) {
	var ts tenures
	ts.add([]Answer{
		leaderAnswer("a", "app-a", 1, 1000, time.Second),
		leaderAnswer("a", "app-a", 1, 2000, time.Second),
		leaderAnswer("a", "", 1, 1500, 3*time.Second), // anonymous: only lapses
	}, nil)
	got := ts.list()
	if len(got) != 1 || got[0].First != 1000 || got[0].End != fencecheck.Instant(1500+Instant(3*time.Second)) {
		t.Errorf("tenures %+v; want first 1000, end at the anonymous promise's lapse", got)
	}
}

func TestAcknowledgementInALaterRoundEndsAnEarlierRoundsPromise(t *testing.T) {
	var ts tenures
	// Round 1 saw the promise; the acknowledgement came in round 2, whose
	// snapshot still holds the answer.
	promise := leaderAnswer("a", "app-a", 1, 1000, time.Second)
	ts.add([]Answer{promise}, nil)
	ack := Ack{Member: "a", Client: "app-a", Token: 1, At: 1500, Done: 1600, Acknowledged: true}
	ts.add([]Answer{promise, leaderAnswer("b", "app-b", 2, 2000, time.Second)}, []Ack{ack})
	got := ts.list()
	if len(got) != 2 || got[0].End != 1500 {
		t.Errorf("tenures %+v; want a's to end when its acknowledgement was sent (1500)", got)
	}
}

func TestPromiseProducedAfterTheAcknowledgementIsNotEnded(t *testing.T) {
	var ts tenures
	ack := Ack{Member: "a", Client: "app-a", Token: 1, At: 1500, Done: 1600, Acknowledged: true}
	late := leaderAnswer("a", "app-a", 1, 1700, time.Second)
	ts.add([]Answer{leaderAnswer("a", "app-a", 1, 1000, time.Second), late}, []Ack{ack})
	if got := ts.list(); got[0].End != fencecheck.Instant(late.ValidUntil) {
		t.Errorf("end %v; want the late promise's %v", got[0].End, late.ValidUntil)
	}
}
