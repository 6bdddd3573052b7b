package baton_test

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/baton-sidecar/baton/clients/go/baton"
)

func TestResolveAddrReadsTheEnvironment(t *testing.T) {
	for _, tc := range []struct{ env, want string }{
		{"", baton.DefaultGRPCAddr},
		{":5041", "127.0.0.1:5041"},
		{"10.0.0.1:7", "10.0.0.1:7"},
		{"[::1]:4041", "[::1]:4041"},
		{"unix:/run/baton.sock", "unix:/run/baton.sock"},
	} {
		t.Setenv(baton.EnvGRPCAddr, tc.env)
		if got, err := baton.ResolveAddr(); err != nil || got != tc.want {
			t.Errorf("%s=%q: ResolveAddr() = %q, %v; want %q", baton.EnvGRPCAddr, tc.env, got, err, tc.want)
		}
	}
	for _, bad := range []string{"4041", "localhost", "127.0.0.1:"} {
		t.Setenv(baton.EnvGRPCAddr, bad)
		if _, err := baton.New(); err == nil {
			t.Errorf("%s=%q: New() succeeded; want an error naming the variable", baton.EnvGRPCAddr, bad)
		}
	}
}

// closedAddr is a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func TestAbsentSidecarFailsFastWithAClearError(t *testing.T) {
	c, err := baton.New(baton.WithAddr(closedAddr(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	start := time.Now()
	_, err = c.Leadership(ctx)
	if !errors.Is(err, baton.ErrSidecarUnavailable) {
		t.Fatalf("Leadership() error = %v; want ErrSidecarUnavailable", err)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("Leadership() took %v to fail; want fast", took)
	}
	t.Logf("error: %v", err)
	if _, err := c.RequireLeader(ctx, 0); !errors.Is(err, baton.ErrSidecarUnavailable) || errors.Is(err, baton.ErrNotLeader) {
		t.Errorf("RequireLeader() error = %v; want ErrSidecarUnavailable only", err)
	}
	if ok, err := c.IsLeader(ctx); ok || !errors.Is(err, baton.ErrSidecarUnavailable) {
		t.Errorf("IsLeader() = %v, %v; want false and ErrSidecarUnavailable", ok, err)
	}
	passed(t, "absent-sidecar")
}

func TestWatchReportsAbsentSidecarAndKeepsRetrying(t *testing.T) {
	c, err := baton.New(baton.WithAddr(closedAddr(t)), baton.WithReconnectBackoff(10*time.Millisecond, 20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	errs := 0
	for l, err := range c.Watch(ctx) {
		if err == nil || l.IsLeader || !errors.Is(err, baton.ErrSidecarUnavailable) {
			t.Fatalf("Watch yielded %+v, %v; want a zero state and ErrSidecarUnavailable", l, err)
		}
		if errs++; errs == 3 {
			break
		}
	}
	if errs != 3 {
		t.Errorf("Watch yielded %d errors before ctx ended; want it to keep retrying", errs)
	}
	wctx, wcancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer wcancel()
	if _, err := c.WaitUntilLeader(wctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("WaitUntilLeader() = %v; want DeadlineExceeded", err)
	}
}

// The committed stubs (../batonv1) must be what ../generate.sh makes from
// the proto.
func TestGeneratedCodeIsUpToDate(t *testing.T) {
	if _, err := exec.LookPath("protoc"); err != nil {
		t.Skip("protoc not installed")
	}
	out := t.TempDir()
	if b, err := exec.Command("../generate.sh", out).CombinedOutput(); err != nil {
		t.Fatalf("generate.sh: %v\n%s", err, b)
	}
	for _, f := range []string{"leader_election.pb.go", "leader_election_grpc.pb.go"} {
		want, err := os.ReadFile(filepath.Join(out, "batonv1", f))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join("..", "batonv1", f))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("batonv1/%s is stale: run clients/go/generate.sh", f)
		}
	}
}
