package baton_test

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/baton-sidecar/baton/clients/go/baton"
	"github.com/baton-sidecar/baton/clients/go/batonv1"
)

// max128 is 2^128-1, the highest revision.
const max128 = "340282366920938463463374607431768211455"

// ascending are revisions in integer order, across the 64-bit boundaries.
var ascending = []string{"0", "1", "9", "10", "4711", "9223372036854775807", "9223372036854775808",
	"10000000000000000000", "18446744073709551615", "18446744073709551616", "99999999999999999999",
	"100000000000000000000", "100000000000000000000000000000000000000", max128}

func mustRevision(t *testing.T, s string) baton.Revision {
	t.Helper()
	r, err := baton.ParseRevision(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRevisionReadsAndWritesEveryValueUpTo128Bits(t *testing.T) {
	for _, s := range append(ascending, "340282366920938463463374607431768211454") {
		if got := mustRevision(t, s).String(); got != s {
			t.Errorf("ParseRevision(%q).String() = %q", s, got)
		}
	}
	for _, s := range []string{"", "-1", "+1", " 1", "1 ", "04711", "00", "0x10", "1e3", "4_711", "١",
		"340282366920938463463374607431768211456", "999999999999999999999999999999999999999",
		"1000000000000000000000000000000000000000"} {
		if r, err := baton.ParseRevision(s); err == nil {
			t.Errorf("ParseRevision(%q) = %v; want an error", s, r)
		}
	}
	var zero baton.Revision
	if zero.String() != "0" || zero != mustRevision(t, "0") {
		t.Errorf("the zero Revision is %v; want 0", zero)
	}
}

func TestRevisionsCompareAsIntegers(t *testing.T) {
	for i, a := range ascending {
		for j, b := range ascending {
			ra, rb := mustRevision(t, a), mustRevision(t, b)
			if got := ra.Compare(rb); got != cmp.Compare(i, j) || (ra == rb) != (i == j) {
				t.Errorf("%s.Compare(%s) = %d, == %v; want %d", a, b, got, ra == rb, cmp.Compare(i, j))
			}
		}
	}
}

func TestRevisionIsAStringOfDigitsInJSON(t *testing.T) {
	b, err := json.Marshal(baton.Leadership{FencingRevision: mustRevision(t, max128)})
	if err != nil || !strings.Contains(string(b), `"FencingRevision":"`+max128+`"`) {
		t.Fatalf("json.Marshal = %s, %v; want the revision as a string of digits", b, err)
	}
	var l baton.Leadership
	if err := json.Unmarshal(b, &l); err != nil || l.FencingRevision.String() != max128 {
		t.Errorf("json.Unmarshal = %v, %v; want %s", l.FencingRevision, err, max128)
	}
	if err := json.Unmarshal([]byte(`{"FencingRevision":"04711"}`), &l); err == nil {
		t.Error("a revision with a leading zero was read from JSON")
	}
}

// fixedAnswer is a sidecar that gives the same answer to every question
// and every watch.
type fixedAnswer struct {
	batonv1.UnimplementedLeaderElectionServer
	l *batonv1.Leadership
}

func (s *fixedAnswer) GetLeadership(context.Context, *batonv1.GetLeadershipRequest) (*batonv1.Leadership, error) {
	return s.l, nil
}

func (s *fixedAnswer) WatchLeadership(_ *batonv1.WatchLeadershipRequest, stream grpc.ServerStreamingServer[batonv1.WatchLeadershipResponse]) error {
	if err := stream.Send(&batonv1.WatchLeadershipResponse{Leadership: s.l}); err != nil {
		return err
	}
	<-stream.Context().Done()
	return nil
}

func TestClientReadsRevisionsOf128BitsAndRefusesMalformedOnes(t *testing.T) {
	for _, decimal := range []string{max128, "04711"} {
		t.Run(decimal, func(t *testing.T) {
			addr := serve(t, &fixedAnswer{l: &batonv1.Leadership{IsLeader: true, Identity: "me",
				HolderIdentity: "me", FencingToken: 7, Observed: true, ValidFor: durationpb.New(time.Minute),
				FencingRevision: 4711, FencingRevisionDecimal: decimal}})
			c, err := baton.New(baton.WithAddr(addr))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			// check wants the revision from a well-formed answer, and the
			// malformed-answer error (not "unavailable") otherwise.
			check := func(call string, l baton.Leadership, err error) {
				t.Helper()
				if decimal == max128 {
					if err != nil || l.FencingRevision.String() != max128 {
						t.Errorf("%s = revision %v, %v; want %s", call, l.FencingRevision, err, max128)
					}
				} else if err == nil || l.IsLeader || errors.Is(err, baton.ErrSidecarUnavailable) ||
					!strings.HasPrefix(err.Error(), "baton: not a Leadership: ") {
					t.Errorf("%s = %+v, %v; want the malformed answer refused", call, l, err)
				}
			}
			l, err := c.Leadership(ctx)
			check("Leadership", l, err)
			for l, err := range c.Watch(ctx) {
				check("Watch", l, err)
				break
			}
		})
	}
}
