package baton_test

import (
	"strings"
	"testing"
	"unicode"

	"github.com/baton-sidecar/baton/clients/go/baton"
)

func TestFieldManagerIsTheIdentityWhenTheAPIServerTakesIt(t *testing.T) {
	for _, id := range []string{"web-0_3f9a1c", strings.Repeat("a", 128), "pod name with spaces"} {
		if got := (baton.Leadership{Identity: id}).FieldManager(); got != id {
			t.Errorf("FieldManager() of identity %q = %q; want the identity", id, got)
		}
	}
	if got := (baton.Leadership{}).FieldManager(); got != "" {
		t.Errorf("FieldManager() without an identity = %q; want \"\"", got)
	}
}

// The same identities and managers as the Python and C++ clients' tests.
func TestFieldManagerIsTheSameInEveryClient(t *testing.T) {
	for _, tc := range []struct{ identity, want string }{
		{strings.Repeat("x", 200) + "_1", strings.Repeat("x", 111) + "-090fac22cfc2b4ad"},
		{"tab\there", "tab_here-778309ed1f28b0f9"},
		{"ünïcode", "__n__code-b1b0d40350a25beb"},
	} {
		if got := (baton.Leadership{Identity: tc.identity}).FieldManager(); got != tc.want {
			t.Errorf("FieldManager() of %q = %q; want %q", tc.identity, got, tc.want)
		}
	}
}

func TestFieldManagerOfALongOrUnprintableIdentityIsValidAndDistinct(t *testing.T) {
	long := strings.Repeat("statefulset-replica-", 10)
	ids := []string{long + "_1", long + "_2", "tab\there", "ünïcode"}
	seen := map[string]string{}
	for _, id := range ids {
		m := (baton.Leadership{Identity: id}).FieldManager()
		if len(m) > 128 || strings.IndexFunc(m, func(r rune) bool { return r > unicode.MaxASCII || !unicode.IsPrint(r) }) >= 0 {
			t.Errorf("FieldManager() of %q = %q: not at most 128 printable ASCII characters", id, m)
		}
		if other, dup := seen[m]; dup {
			t.Errorf("identities %q and %q share the field manager %q", other, id, m)
		}
		seen[m] = id
		if again := (baton.Leadership{Identity: id}).FieldManager(); again != m {
			t.Errorf("FieldManager() of %q is not stable: %q, then %q", id, m, again)
		}
	}
}
