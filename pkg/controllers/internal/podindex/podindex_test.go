package podindex_test

import (
	"context"
	"fmt"
	"reflect"
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
		{"cache, read-only", func(n string) ([]*corev1.Pod, error) { return podindex.OnNodeReadOnly(ctx, mgr.GetCache(), n) }},
		{"direct client", func(n string) ([]*corev1.Pod, error) { return podindex.OnNode(ctx, e.Client, n) }},
		{"direct client, read-only", func(n string) ([]*corev1.Pod, error) { return podindex.OnNodeReadOnly(ctx, e.Client, n) }},
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

// TestReadOnlyListSharesTheCachesObjects: OnNodeReadOnly hands out the cache's own
// maps (two reads see the same labels map), where OnNode gives each caller a copy
// of its own: the one costs no allocation per pod, the other may be changed.
func TestReadOnlyListSharesTheCachesObjects(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mgr := env.NewManager(t, e.Config, e.Scheme)
	if err := podindex.Register(ctx, mgr.GetFieldIndexer()); err != nil {
		t.Fatal(err)
	}
	env.RunManager(ctx, t, mgr)
	ExpectApplied(ctx, t, e.Client, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "shared", Namespace: "default", Labels: map[string]string{"app": "shared"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}},
	})
	find := func(read func() ([]*corev1.Pod, error)) *corev1.Pod {
		t.Helper()
		var found *corev1.Pod
		Eventually(t, 10*time.Second, func() error {
			pods, err := read()
			if err != nil {
				return err
			}
			for _, p := range pods {
				if p.Name == "shared" {
					found = p
					return nil
				}
			}
			return fmt.Errorf("pod shared not among the unbound pods yet")
		})
		return found
	}
	readOnly := func() ([]*corev1.Pod, error) { return podindex.OnNodeReadOnly(ctx, mgr.GetCache(), "") }
	copied := func() ([]*corev1.Pod, error) { return podindex.OnNode(ctx, mgr.GetCache(), "") }
	sameMap := func(a, b *corev1.Pod) bool {
		return reflect.ValueOf(a.Labels).UnsafePointer() == reflect.ValueOf(b.Labels).UnsafePointer()
	}
	if a, b := find(readOnly), find(readOnly); !sameMap(a, b) {
		t.Error("two read-only lists gave two copies of the pod's labels: the cache's objects were copied")
	}
	if a, b := find(copied), find(copied); sameMap(a, b) {
		t.Error("two lists gave the same labels map: OnNode must hand out copies")
	}
}
