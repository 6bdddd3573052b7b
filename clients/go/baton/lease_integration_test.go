package baton_test

// Integration tests of the Lease a client expects and of the field manager
// for Kubernetes writes, against the fixture's sidecars and its real API
// server.

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/baton-sidecar/baton/clients/go/baton"
)

func TestAClientExpectingAnotherLeaseRefusesTheAnswers(t *testing.T) {
	f, li := settled(t)
	ctx := context.Background()
	s := f.Sidecars[li]
	wrong := newClient(t, s, baton.WithLease("not-this-lease", f.Namespace))
	_, err := wrong.Leadership(ctx)
	var wl *baton.WrongLeaseError
	if !errors.As(err, &wl) || !errors.Is(err, baton.ErrWrongLease) ||
		wl.Expected != (baton.LeaseRef{Name: "not-this-lease", Namespace: f.Namespace}) ||
		wl.Served != (baton.LeaseRef{Name: f.LeaseName, Namespace: f.Namespace}) ||
		!strings.Contains(err.Error(), "not-this-lease") || !strings.Contains(err.Error(), f.Namespace+"/"+f.LeaseName) {
		t.Fatalf("Leadership() expecting not-this-lease = %v; want a *WrongLeaseError naming both Leases", err)
	}
	if lead, err := wrong.IsLeader(ctx); lead || !errors.Is(err, baton.ErrWrongLease) {
		t.Errorf("IsLeader() expecting not-this-lease = %v, %v; want false, ErrWrongLease", lead, err)
	}
	if _, err := wrong.RequireLeader(ctx, 0); !errors.Is(err, baton.ErrWrongLease) {
		t.Errorf("RequireLeader() expecting not-this-lease = %v; want ErrWrongLease", err)
	}
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for l, err := range wrong.Watch(wctx) {
		if l.IsLeader || !errors.Is(err, baton.ErrWrongLease) {
			t.Errorf("Watch() expecting not-this-lease yielded %+v, %v; want ErrWrongLease", l, err)
		}
		break
	}

	right := newClient(t, s, baton.WithLease(f.LeaseName, f.Namespace))
	if l, err := right.Leadership(ctx); err != nil || !l.IsLeader {
		t.Errorf("Leadership() expecting the served Lease = %+v, %v; want the leader's answer", l, err)
	}
	t.Setenv(baton.EnvLeaseName, f.LeaseName)
	t.Setenv(baton.EnvLeaseNamespace, f.Namespace)
	if l, err := newClient(t, s).Leadership(ctx); err != nil || !l.IsLeader {
		t.Errorf("Leadership() expecting $%s = %+v, %v; want the leader's answer", baton.EnvLeaseName, l, err)
	}
	t.Setenv(baton.EnvLeaseName, "not-this-lease")
	if _, err := newClient(t, s).Leadership(ctx); !errors.Is(err, baton.ErrWrongLease) {
		t.Errorf("Leadership() expecting $%s=not-this-lease = %v; want ErrWrongLease", baton.EnvLeaseName, err)
	}
	passed(t, "lease-identity")
}

// Two sidecars' field managers applying the same ConfigMap field without
// force: the second gets 409 Conflict naming the first, instead of
// overwriting it. Once the second took the field over with force (the
// start of its term), the first one's next write is refused by name.
func TestServerSideApplyWithTwoLeadersFieldManagersConflictsByName(t *testing.T) {
	f, li := settled(t)
	ctx := context.Background()
	kube := adminAPI(t, f.Kubeconfig)
	leader, err := newClient(t, f.Sidecars[li]).Leadership(ctx)
	if err != nil {
		t.Fatal(err)
	}
	other, err := newClient(t, f.Sidecars[(li+1)%len(f.Sidecars)]).Leadership(ctx)
	if err != nil {
		t.Fatal(err)
	}
	first, second := leader.FieldManager(), other.FieldManager()
	if first == "" || first == second {
		t.Fatalf("field managers %q and %q; want two distinct ones", first, second)
	}
	name := fmt.Sprintf("go-ssa-%d", time.Now().UnixNano())
	if code, body := kube.apply(t, f.Namespace, name, first, map[string]string{"owner": first}); code/100 != 2 {
		t.Fatalf("apply as %q: HTTP %d: %s", first, code, body)
	}
	expectConflict := func(manager, owner string) {
		t.Helper()
		code, body := kube.apply(t, f.Namespace, name, manager, map[string]string{"owner": manager})
		var status struct{ Reason, Message string }
		_ = json.Unmarshal(body, &status)
		if code != http.StatusConflict || status.Reason != "Conflict" ||
			!strings.Contains(status.Message, fmt.Sprintf("conflict with %q", owner)) {
			t.Fatalf("apply of the field %q owns as %q: HTTP %d %s; want 409 Conflict naming %q",
				owner, manager, code, body, owner)
		}
	}
	expectConflict(second, first)
	if code, body := kube.applyForce(t, f.Namespace, name, second, map[string]string{"owner": second}); code/100 != 2 {
		t.Fatalf("forced apply as %q: HTTP %d: %s", second, code, body)
	}
	expectConflict(first, second)

	// A field manager made from an identity the API server would refuse as
	// one is accepted.
	odd := (baton.Leadership{Identity: strings.Repeat("replica-", 30) + "\t1"}).FieldManager()
	if code, body := kube.apply(t, f.Namespace, name, odd, map[string]string{"note": "x"}); code/100 != 2 {
		t.Errorf("apply as %q: HTTP %d: %s", odd, code, body)
	}
}

// kubeAPI is the fixture's API server as its admin.
type kubeAPI struct {
	server string
	http   *http.Client
}

// adminAPI reads the control plane's admin kubeconfig: the server, the CA
// and the client certificate, all inline (as scripts/controlplane writes it).
func adminAPI(t *testing.T, kubeconfig string) kubeAPI {
	t.Helper()
	b, err := os.ReadFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	fields := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "- ")), ": "); ok {
			fields[k] = v
		}
	}
	data := func(key string) []byte {
		d, err := base64.StdEncoding.DecodeString(fields[key])
		if err != nil || len(d) == 0 {
			t.Fatalf("%s: no %s", kubeconfig, key)
		}
		return d
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(data("certificate-authority-data"))
	cert, err := tls.X509KeyPair(data("client-certificate-data"), data("client-key-data"))
	if err != nil {
		t.Fatal(err)
	}
	return kubeAPI{server: fields["server"], http: &http.Client{Timeout: 10 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}}}}}
}

// apply server-side-applies a ConfigMap with data as manager, without
// force; it returns the HTTP status and body.
func (k kubeAPI) apply(t *testing.T, namespace, name, manager string, data map[string]string) (int, []byte) {
	t.Helper()
	return k.serverSideApply(t, namespace, name, manager, data, false)
}

// applyForce is apply with force: manager takes the fields over.
func (k kubeAPI) applyForce(t *testing.T, namespace, name, manager string, data map[string]string) (int, []byte) {
	t.Helper()
	return k.serverSideApply(t, namespace, name, manager, data, true)
}

func (k kubeAPI) serverSideApply(t *testing.T, namespace, name, manager string, data map[string]string,
	force bool) (int, []byte) {
	t.Helper()
	obj, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]string{"name": name}, "data": data})
	target := fmt.Sprintf("%s/api/v1/namespaces/%s/configmaps/%s?fieldManager=%s&force=%t", k.server,
		namespace, name, url.QueryEscape(manager), force)
	req, err := http.NewRequest(http.MethodPatch, target, bytes.NewReader(obj))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/apply-patch+yaml")
	resp, err := k.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, body
}
