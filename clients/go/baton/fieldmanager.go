package baton

import (
	"fmt"
	"hash/fnv"
	"strings"
)

// maxFieldManager is the API server's limit on a field manager's length.
const maxFieldManager = 128

// FieldManager is the server-side-apply field manager for Kubernetes writes
// made under this answer's leadership: the sidecar's holder identity, or ""
// for a Leadership without one. Every sidecar process has an identity of its
// own, so every term has a manager of its own. Leader work that writes
// Kubernetes objects takes its fields over once at the start of the term
// (Force: true) and applies every later write without force:
//
//	cm := applycorev1.ConfigMap("state", ns).WithData(map[string]string{"leader": l.Identity})
//	_, err := clientset.CoreV1().ConfigMaps(ns).Apply(ctx, cm,
//		metav1.ApplyOptions{FieldManager: l.FieldManager()})
//
// Then if two pods believe they lead at once, the one whose fields were
// taken over gets 409 Conflict naming the other's manager instead of
// silently overwriting its writes. The API server takes at most 128
// printable characters: an identity that is longer, or has anything but
// printable ASCII, is turned into its first 111 bytes (others replaced by
// '_'), "-" and 16 hex digits of its 64-bit FNV-1a hash, so identities that
// differ only near the end still get different managers.
func (l Leadership) FieldManager() string {
	id := l.Identity
	if id == "" {
		return ""
	}
	if len(id) <= maxFieldManager && strings.IndexFunc(id, notPrintableASCII) < 0 {
		return id
	}
	h := fnv.New64a()
	h.Write([]byte(id))
	prefix := []byte(id[:min(len(id), maxFieldManager-17)])
	for i, b := range prefix {
		if b < 0x20 || b > 0x7e {
			prefix[i] = '_'
		}
	}
	return fmt.Sprintf("%s-%016x", prefix, h.Sum64())
}

func notPrintableASCII(r rune) bool { return r < 0x20 || r > 0x7e }
