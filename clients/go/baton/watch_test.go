package baton_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/baton-sidecar/baton/clients/go/baton"
	"github.com/baton-sidecar/baton/clients/go/batonv1"
)

// silentLeader is a sidecar that says "leader, valid for validFor" once and
// then never speaks again, as a paused sidecar would look.
type silentLeader struct {
	batonv1.UnimplementedLeaderElectionServer
	validFor time.Duration
}

func (s *silentLeader) WatchLeadership(_ *batonv1.WatchLeadershipRequest, stream grpc.ServerStreamingServer[batonv1.WatchLeadershipResponse]) error {
	err := stream.Send(&batonv1.WatchLeadershipResponse{
		Event: batonv1.WatchLeadershipResponse_EVENT_INITIAL,
		Leadership: &batonv1.Leadership{IsLeader: true, Identity: "me", HolderIdentity: "me",
			FencingToken: 7, Observed: true, ValidFor: durationpb.New(s.validFor)},
	})
	if err != nil {
		return err
	}
	<-stream.Context().Done()
	return nil
}

func serve(t *testing.T, impl batonv1.LeaderElectionServer) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	batonv1.RegisterLeaderElectionServer(srv, impl)
	go srv.Serve(l)
	t.Cleanup(srv.Stop)
	return l.Addr().String()
}

func TestWatchEndsLeadershipWhenTheGuaranteeRunsOutWithoutNews(t *testing.T) {
	addr := serve(t, &silentLeader{validFor: 200 * time.Millisecond})
	c, err := baton.New(baton.WithAddr(addr), baton.WithHeartbeatInterval(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	var got []string
	for l, err := range c.Watch(ctx) {
		switch {
		case err != nil:
			if !errors.Is(err, baton.ErrSidecarUnavailable) {
				t.Errorf("stall error %v; want ErrSidecarUnavailable", err)
			}
			got = append(got, "error")
		case l.IsLeader:
			got = append(got, "leader")
		default:
			got = append(got, "expired")
			if took := time.Since(start); took < 200*time.Millisecond || took > 600*time.Millisecond {
				t.Errorf("leadership ended after %v; want at its 200ms guarantee", took)
			}
			if l.FencingToken != 7 || l.Identity != "me" {
				t.Errorf("expired state %+v lost the rest of the state", l)
			}
		}
		if len(got) == 3 {
			break
		}
	}
	// A stream silent for 2×heartbeat + 1s is taken as stuck.
	if want := []string{"leader", "expired", "error"}; len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("Watch yielded %v; want %v", got, want)
	}
}
