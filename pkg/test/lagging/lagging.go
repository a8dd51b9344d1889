// Package lagging is a client for controller tests about writes: it talks to
// the test's API server, can hold a NodeClaim's and Nodes' reads behind the
// writes (as an informer cache is: it delivers an object's events in order,
// but some time after the writes, so a pass can read a copy older than the
// writes it or another pass just made), and counts the writes a controller
// makes to NodeClaims and Nodes.
package lagging

import (
	"context"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
)

// Client is a direct client of the API server with held reads and counted
// writes. Its zero value is not usable; see New.
type Client struct {
	client.Client
	mu sync.Mutex
	// claim, when set, is what Get and List return for that NodeClaim.
	claim *v1.NodeClaim
	// nodes, when set, is what Node reads return.
	nodes         []corev1.Node
	statusWrites  int
	metaPatches   int
	lastMetaPatch []byte
	nodePatches   int
}

// New returns a Client of the API server at cfg.
func New(t testing.TB, cfg *rest.Config, scheme *runtime.Scheme) *Client {
	t.Helper()
	direct, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	l := &Client{}
	l.Client = interceptor.NewClient(direct, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			l.mu.Lock()
			defer l.mu.Unlock()
			switch o := obj.(type) {
			case *v1.NodeClaim:
				if l.claim != nil && l.claim.Name == key.Name {
					l.claim.DeepCopyInto(o)
					return nil
				}
			case *corev1.Node:
				for i := range l.nodes {
					if l.nodes[i].Name == key.Name {
						l.nodes[i].DeepCopyInto(o)
						return nil
					}
				}
			}
			return c.Get(ctx, key, obj, opts...)
		},
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			l.mu.Lock()
			defer l.mu.Unlock()
			if nodes, ok := list.(*corev1.NodeList); ok && l.nodes != nil {
				nodes.Items = nil
				for i := range l.nodes {
					nodes.Items = append(nodes.Items, *l.nodes[i].DeepCopy())
				}
				return nil
			}
			if err := c.List(ctx, list, opts...); err != nil {
				return err
			}
			if claims, ok := list.(*v1.NodeClaimList); ok && l.claim != nil {
				for i := range claims.Items {
					if claims.Items[i].Name == l.claim.Name {
						l.claim.DeepCopyInto(&claims.Items[i])
					}
				}
			}
			return nil
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			switch obj.(type) {
			case *corev1.Node:
				l.mu.Lock()
				l.nodePatches++
				l.mu.Unlock()
			case *v1.NodeClaim:
				body, err := patch.Data(obj)
				if err != nil {
					return err
				}
				l.mu.Lock()
				l.metaPatches++
				l.lastMetaPatch = body
				l.mu.Unlock()
			}
			return c.Patch(ctx, obj, patch, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			if _, ok := obj.(*v1.NodeClaim); ok && sub == "status" {
				l.mu.Lock()
				l.statusWrites++
				l.mu.Unlock()
			}
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
	})
	return l
}

// HoldClaim makes reads (Get and List) of nc's NodeClaim return nc as it is now, whatever
// is written after; nil lets them through again.
func (l *Client) HoldClaim(nc *v1.NodeClaim) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if nc != nil {
		nc = nc.DeepCopy()
	}
	l.claim = nc
}

// HoldNodes makes Node reads (Get and List) return these Nodes only, as they
// are now; none lets them through again.
func (l *Client) HoldNodes(nodes ...corev1.Node) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.nodes = nil
	for i := range nodes {
		l.nodes = append(l.nodes, *nodes[i].DeepCopy())
	}
}

// StatusWrites counts NodeClaim status writes (patches and applies).
func (l *Client) StatusWrites() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.statusWrites
}

// MetaPatches counts NodeClaim patches (not of the status) and returns the
// last one's body.
func (l *Client) MetaPatches() (int, []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.metaPatches, l.lastMetaPatch
}

// NodePatches counts Node patches.
func (l *Client) NodePatches() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.nodePatches
}
