package kubefence

// WithAfterRead returns f with hook run between each read of the ConfigMap
// and the write that follows it: a test's way into the window the
// resourceVersion precondition closes.
func WithAfterRead(f Fence, hook func()) Fence {
	f.afterRead = hook
	return f
}
