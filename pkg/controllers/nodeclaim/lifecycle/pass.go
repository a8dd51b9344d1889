package lifecycle

import (
	"context"

	corev1 "k8s.io/api/core/v1"
)

// pass is what one reconcile's steps hand on to each other.
type pass struct {
	// node is the Node as Registration left it in this pass (its own patch's
	// response). Initialization judges that copy rather than a cached read:
	// the cache has not seen the patch yet, so it would still show the
	// unregistered taint Registration just lifted, and the NodeClaim would
	// be written once more as Registered but not Initialized (reason
	// KnownEphemeralTaintsExist) before the next pass initializes it.
	node *corev1.Node
}

type passKey struct{}

func withPass(ctx context.Context) context.Context {
	return context.WithValue(ctx, passKey{}, &pass{})
}

// passOf returns the pass of ctx, or nil outside Controller.Reconcile (a
// step called on its own).
func passOf(ctx context.Context) *pass {
	p, _ := ctx.Value(passKey{}).(*pass)
	return p
}
