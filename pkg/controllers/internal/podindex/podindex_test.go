package podindex_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/karpenter-go/karpenter/pkg/controllers/internal/podindex"
	"github.com/karpenter-go/karpenter/pkg/test/env"
	. "github.com/karpenter-go/karpenter/pkg/test/expectations"
)

var e *env.Environment

func TestMain(m *testing.M) { env.Main(m, &e) }

func names(pods []*corev1.Pod) []string {
	out := make([]string, 0, len(pods))
	for _, p := range pods {
		out = append(out, p.Name)
	}
	slices.Sort(out)
	return out
}

// TestUnboundAndByNodeThroughTheCache: the manager's cache answers "" with the
// unbound pods only and a node name with that node's pods, the index registered
// once however many controllers ask; a reader without the index (the direct
// client here, which sends a field selector) gives the same answers.
func TestUnboundAndByNodeThroughTheCache(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mgr := env.NewManager(t, e.Config, e.Scheme)
	for range 2 { // termination and provisioning both register it
		if err := podindex.Register(ctx, mgr.GetFieldIndexer()); err != nil {
			t.Fatal(err)
		}
	}
	env.RunManager(ctx, t, mgr)
	pod := func(name, node string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "i"}}},
		}
	}
	ExpectApplied(ctx, t, e.Client, pod("pending-a", ""), pod("pending-b", ""), pod("bound-1", "node-1"), pod("bound-2", "node-2"))
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		t.Fatal("cache did not sync")
	}
	for _, reader := range []struct {
		name string
		read func(string) ([]*corev1.Pod, error)
	}{
		{"cache", func(n string) ([]*corev1.Pod, error) { return podindex.OnNode(ctx, mgr.GetCache(), n) }},
		{"direct client", func(n string) ([]*corev1.Pod, error) { return podindex.OnNode(ctx, e.Client, n) }},
	} {
		for node, want := range map[string][]string{"": {"pending-a", "pending-b"}, "node-1": {"bound-1"}, "node-3": {}} {
			Eventually(t, 10*time.Second, func() error {
				got, err := reader.read(node)
				if err != nil {
					return err
				}
				if !slices.Equal(names(got), want) {
					return fmt.Errorf("%s: pods on node %q: %v, want %v", reader.name, node, names(got), want)
				}
				return nil
			})
		}
	}
}
