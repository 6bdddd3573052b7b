package baton_test

// The client conformance suite (clients/conformance): every vector file,
// checked through the client's pure seams (export_test.go), and the report
// of the scenarios that passed. The live scenarios are in
// conformance_live_test.go.

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/baton-sidecar/baton/clients/go/baton"
	"github.com/baton-sidecar/baton/clients/go/batonv1"
)

// passed appends scenario id to $BATON_CONFORMANCE_REPORT if t has not
// failed. Call it after the scenario's last check.
func passed(t *testing.T, id string) {
	t.Helper()
	path := os.Getenv("BATON_CONFORMANCE_REPORT")
	if path == "" || t.Failed() {
		return
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(id + "\n"); err != nil {
		t.Fatal(err)
	}
}

// vectors decodes clients/conformance/vectors/name into v.
func vectors(t *testing.T, name string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "conformance", "vectors", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

func ms(ms int64) time.Duration { return time.Duration(ms) * time.Millisecond }

// text is a vector's value as text: a token is a JSON number, a revision a
// JSON string.
func text(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

// asExpected is l in the vectors' form of an expected Leadership.
func asExpected(l baton.Leadership) map[string]any {
	unixMs := func(t time.Time) any {
		if t.IsZero() {
			return nil
		}
		return float64(t.UnixMilli())
	}
	return map[string]any{
		"isLeader": l.IsLeader, "observed": l.Observed, "steppingDown": l.SteppingDown,
		"identity": l.Identity, "holderIdentity": l.HolderIdentity, "leaseName": l.LeaseName,
		"leaseNamespace": l.LeaseNamespace, "leaseUid": l.LeaseUID,
		"fencingToken":      float64(l.FencingToken),
		"fencingRevision":   l.FencingRevision.String(),
		"acquireTimeUnixMs": unixMs(l.AcquireTime), "renewTimeUnixMs": unixMs(l.RenewTime),
		"validForMs":           float64(l.ValidFor / time.Millisecond),
		"validUntilBoottimeMs": float64(l.ValidUntilBoottime / time.Millisecond),
		"leaseDurationMs":      float64(l.LeaseDuration / time.Millisecond),
	}
}

// checkLeadership compares a conversion's outcome with a case's expect.
func checkLeadership(t *testing.T, l baton.Leadership, err error, expect map[string]any) {
	t.Helper()
	if expect["error"] == true {
		if err == nil {
			t.Errorf("converted to %+v; want an error", l)
		}
		return
	}
	if err != nil {
		t.Fatalf("error %v; want %v", err, expect)
	}
	got := asExpected(l)
	for k, want := range expect {
		if !reflect.DeepEqual(got[k], want) {
			t.Errorf("%s = %v; want %v", k, got[k], want)
		}
	}
	if len(got) != len(expect) {
		t.Errorf("the vector has %d fields, the client %d", len(expect), len(got))
	}
}

type leadershipCase struct {
	Name, Text, Base64 string
	SinceMs            int64
	Expect             map[string]any
}

func TestConformanceLeadershipJSON(t *testing.T) {
	var file struct{ Cases []leadershipCase }
	vectors(t, "leadership_json.json", &file)
	for _, c := range file.Cases {
		t.Run(c.Name, func(t *testing.T) {
			l, err := baton.ParseLeadershipSince([]byte(c.Text), ms(c.SinceMs))
			checkLeadership(t, l, err, c.Expect)
		})
	}
	passed(t, "leadership-json")
}

func TestConformanceLeadershipProto(t *testing.T) {
	var file struct{ Cases []leadershipCase }
	vectors(t, "leadership_proto.json", &file)
	for _, c := range file.Cases {
		t.Run(c.Name, func(t *testing.T) {
			wire, err := base64.StdEncoding.DecodeString(c.Base64)
			if err != nil {
				t.Fatal(err)
			}
			var m batonv1.Leadership
			var l baton.Leadership
			if err = proto.Unmarshal(wire, &m); err == nil {
				l, err = baton.FromProtoSince(&m, ms(c.SinceMs))
			}
			checkLeadership(t, l, err, c.Expect)
		})
	}
	passed(t, "leadership-proto")
}

func TestConformanceValidity(t *testing.T) {
	var file struct {
		Cases []struct {
			Name, Text string
			SinceMs    int64
			Checks     []struct{ NowMs, RemainingMs int64 }
		}
	}
	vectors(t, "validity.json", &file)
	for _, c := range file.Cases {
		t.Run(c.Name, func(t *testing.T) {
			l, err := baton.ParseLeadershipSince([]byte(c.Text), ms(c.SinceMs))
			if err != nil {
				t.Fatal(err)
			}
			for _, check := range c.Checks {
				if got := baton.RemainingAt(l, ms(check.NowMs)) / time.Millisecond; int64(got) != check.RemainingMs {
					t.Errorf("remaining at %dms = %dms; want %dms", check.NowMs, got, check.RemainingMs)
				}
			}
		})
	}
	passed(t, "validity")
}

func TestConformanceRequireLeader(t *testing.T) {
	var file struct {
		Cases []struct {
			Name, Text                                          string
			SinceMs, NowMs, MinValidityMs, RequestMaxValidForMs int64
			Expect                                              struct {
				Token     *int32
				Revision  string
				NotLeader bool
			}
		}
	}
	vectors(t, "require_leader.json", &file)
	for _, c := range file.Cases {
		t.Run(c.Name, func(t *testing.T) {
			l, err := baton.ParseLeadershipSince([]byte(c.Text), ms(c.SinceMs))
			if err != nil {
				t.Fatal(err)
			}
			if got, want := baton.RequireLeaderBound(ms(c.MinValidityMs)), ms(c.RequestMaxValidForMs); got != want {
				t.Errorf("RequireLeader asks for max_valid_for %v; want %v", got, want)
			}
			got, err := baton.RequireLeaderAt(l, ms(c.MinValidityMs), ms(c.NowMs))
			switch {
			case c.Expect.NotLeader:
				if !errors.Is(err, baton.ErrNotLeader) {
					t.Errorf("RequireLeader = %+v, %v; want ErrNotLeader", got, err)
				}
			case err != nil || c.Expect.Token == nil || got.FencingToken != *c.Expect.Token ||
				got.FencingRevision.String() != c.Expect.Revision:
				t.Errorf("RequireLeader = token %d, revision %v, %v; want %+v", got.FencingToken,
					got.FencingRevision, err, c.Expect)
			}
		})
	}
	passed(t, "require-leader")
}

func TestConformanceFence(t *testing.T) {
	var file struct {
		Cases []struct {
			Name, Kind string
			Steps      []struct {
				Admit, Highest json.RawMessage
				OK             bool
			}
		}
	}
	vectors(t, "fence.json", &file)
	for _, c := range file.Cases {
		t.Run(c.Name, func(t *testing.T) {
			var tokens baton.Fence
			var revisions baton.RevisionFence
			for i, step := range c.Steps {
				// Token steps are JSON numbers, revision steps JSON strings:
				// each is compared as the fence's own type prints it.
				var err error
				var admitted, highest string
				if c.Kind == "token" {
					var v int32
					if err := json.Unmarshal(step.Admit, &v); err != nil {
						t.Fatal(err)
					}
					err = tokens.Admit(v)
					h, _ := tokens.Highest()
					admitted, highest = strconv.Itoa(int(v)), strconv.Itoa(int(h))
					var stale *baton.StaleTokenError
					if err != nil && !errors.As(err, &stale) {
						t.Errorf("step %d: Admit(%d) = %v; want nil or a *StaleTokenError", i, v, err)
					}
				} else {
					var v baton.Revision
					if err := json.Unmarshal(step.Admit, &v); err != nil {
						t.Fatal(err)
					}
					err = revisions.Admit(v)
					h, _ := revisions.Highest()
					admitted, highest = v.String(), h.String()
					var stale *baton.StaleRevisionError
					if err != nil && !errors.As(err, &stale) {
						t.Errorf("step %d: Admit(%v) = %v; want nil or a *StaleRevisionError", i, v, err)
					}
				}
				if (err == nil) != step.OK || highest != text(step.Highest) {
					t.Errorf("step %d: Admit(%s) = %v, highest %s; want ok %v, highest %s", i, admitted, err, highest,
						step.OK, step.Highest)
				}
			}
		})
	}
	passed(t, "fence")
}

func TestConformanceFenceHeaders(t *testing.T) {
	var file struct {
		TokenHeader, RevisionHeader string
		Cases                       []struct {
			Name, Kind     string
			Header, Format json.RawMessage // null: a missing header; absent: not this kind of case
			Expect         json.RawMessage
		}
	}
	vectors(t, "fence_headers.json", &file)
	if file.TokenHeader != baton.TokenHeader || file.RevisionHeader != baton.RevisionHeader {
		t.Errorf("headers %q, %q; want %q, %q", baton.TokenHeader, baton.RevisionHeader, file.TokenHeader,
			file.RevisionHeader)
	}
	for _, c := range file.Cases {
		t.Run(c.Name, func(t *testing.T) {
			h := http.Header{}
			if len(c.Format) > 0 {
				if c.Kind == "token" {
					var v int32
					if err := json.Unmarshal(c.Format, &v); err != nil {
						t.Fatal(err)
					}
					baton.SetToken(h, v)
				} else {
					var v baton.Revision
					if err := json.Unmarshal(c.Format, &v); err != nil {
						t.Fatal(err)
					}
					baton.SetRevision(h, v)
				}
				if got := h.Get(map[string]string{"token": baton.TokenHeader, "revision": baton.RevisionHeader}[c.Kind]); got != text(c.Expect) {
					t.Errorf("header %q; want %s", got, c.Expect)
				}
				return
			}
			var header *string
			if err := json.Unmarshal(c.Header, &header); err != nil {
				t.Fatal(err)
			}
			var got string
			var err error
			if c.Kind == "token" {
				if header != nil {
					h[baton.TokenHeader] = []string{*header}
				}
				var token int32
				token, err = baton.TokenFromHeader(h)
				got = strconv.Itoa(int(token))
			} else {
				if header != nil {
					h[baton.RevisionHeader] = []string{*header}
				}
				var revision baton.Revision
				revision, err = baton.RevisionFromHeader(h)
				got = revision.String()
			}
			if want := text(c.Expect); want == "error" {
				if err == nil {
					t.Errorf("parsed %s; want an error", got)
				}
			} else if err != nil || got != want {
				t.Errorf("parsed %s, %v; want %s", got, err, want)
			}
		})
	}
	passed(t, "fence-headers")
}

// The Go client speaks gRPC only, so errors.json's "http" rows (outcomes of
// GET /leader) have nothing to map here; ParseLeadership takes a body the
// application already fetched.
func TestConformanceErrors(t *testing.T) {
	var file struct {
		GRPC []struct{ Code, Error string }
	}
	vectors(t, "errors.json", &file)
	for _, row := range file.GRPC {
		t.Run(row.Code, func(t *testing.T) {
			var code codes.Code
			if err := code.UnmarshalJSON([]byte(strconv.Quote(row.Code))); err != nil {
				t.Fatal(err)
			}
			err := baton.Translate("127.0.0.1:4041", status.Error(code, "from the vector"))
			unavailable := errors.Is(err, baton.ErrSidecarUnavailable)
			if unavailable != (row.Error == "unavailable") || status.Code(err) != code {
				t.Errorf("%v maps to %v (unavailable: %v); want %s carrying the status", code, err, unavailable,
					row.Error)
			}
		})
	}
	passed(t, "errors")
}
