package main

import (
	"path/filepath"
	"testing"
	"time"
)

func TestAKeptRoundReadsBackAsItWasRecorded(t *testing.T) {
	answers := join(leads("a", 0, 30*ms, 1500*time.Millisecond), follows("b", 0, 30*ms))
	answers[0].Revision, answers[0].SteppingDown = 42, true
	acks := []Ack{{Member: "a", Client: "app-a", Token: 1, At: 35 * ms, Done: 36 * ms,
		Acknowledged: true}}
	path := filepath.Join(t.TempDir(), "round.tsv")
	const fault = 10 * ms
	if err := dumpRound(path, answers, acks, fault); err != nil {
		t.Fatal(err)
	}
	gotAnswers, gotAcks, err := readRound(path)
	if err != nil {
		t.Fatal(err)
	}
	shift := func(t Instant) Instant {
		if t == 0 {
			return 0
		}
		return t - fault
	}
	for i := range answers {
		want := answers[i]
		want.Send, want.Recv, want.ValidUntil = shift(want.Send), shift(want.Recv), shift(want.ValidUntil)
		if gotAnswers[i] != want {
			t.Errorf("answer %d: got %+v, want %+v", i, gotAnswers[i], want)
		}
	}
	want := acks[0]
	want.At, want.Done = shift(want.At), shift(want.Done)
	if len(gotAcks) != 1 || gotAcks[0] != want {
		t.Errorf("acks: got %+v, want [%+v]", gotAcks, want)
	}
}
