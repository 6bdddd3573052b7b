package baton_test

import (
	"errors"
	"net/http"
	"sync"
	"testing"

	"github.com/baton-sidecar/baton/clients/go/baton"
)

func TestFenceAdmitsEqualAndHigherTokensAndRefusesLower(t *testing.T) {
	var f baton.Fence
	if _, ok := f.Highest(); ok {
		t.Fatal("a new Fence has a highest token")
	}
	for _, step := range []struct {
		token int32
		stale bool
	}{{3, false}, {3, false}, {5, false}, {4, true}, {0, true}, {6, false}} {
		err := f.Admit(step.token)
		var stale *baton.StaleTokenError
		if got := errors.As(err, &stale); got != step.stale {
			t.Fatalf("Admit(%d) = %v; want stale=%v", step.token, err, step.stale)
		}
		if step.stale && stale.Highest < step.token {
			t.Errorf("StaleTokenError %+v: highest below the refused token", stale)
		}
	}
	if h, ok := f.Highest(); !ok || h != 6 {
		t.Errorf("Highest() = %d, %v; want 6, true", h, ok)
	}
}

func TestFenceIsSafeForConcurrentWriters(t *testing.T) {
	var f baton.Fence
	var wg sync.WaitGroup
	for i := range int32(50) {
		wg.Add(1)
		go func() { defer wg.Done(); _ = f.Admit(i) }()
	}
	wg.Wait()
	if h, _ := f.Highest(); h != 49 {
		t.Errorf("Highest() = %d after tokens 0..49; want 49", h)
	}
}

func TestTokenHeaderRoundTripsAndRejectsGarbage(t *testing.T) {
	h := http.Header{}
	baton.SetToken(h, 42)
	if got, err := baton.TokenFromHeader(h); err != nil || got != 42 {
		t.Errorf("TokenFromHeader = %d, %v; want 42", got, err)
	}
	for _, v := range []string{"", "-1", "x", "4294967296"} {
		h.Set(baton.TokenHeader, v)
		if got, err := baton.TokenFromHeader(h); err == nil {
			t.Errorf("TokenFromHeader(%q) = %d; want an error", v, got)
		}
	}
}
