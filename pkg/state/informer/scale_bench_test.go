package informer_test

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/state"
	"github.com/karpenter-go/karpenter/pkg/state/informer"
)

// BenchmarkStateMemory: the controller's memory for a cluster of 20,000, 50,000 and 100,000
// nodes (each with its NodeClaim and ten pods), fed through the informer path the controller
// runs: client-go shared index informers (what controller-runtime's cache is made of) with the
// cache's transform and indexes (namespace, and spec.nodeName for pods as the termination
// controller adds), streaming the recorded objects as the reflector's watch-list asks (pages
// of 500 when it lists instead), and the state feed's event handlers. The recorded objects
// (testdata/) are an EKS node, its NodeClaim and a Deployment's pod as the API server returns them, managedFields included;
// every copy is decoded afresh (protobuf for Nodes and Pods, JSON for NodeClaims), so no two
// objects share memory, as with a real watch. The figure is the live heap after GC with the
// informers running: cache, indexes and cluster state.
//
//   - shipped: informer.Transform in the cache, state sharing the cache's objects
//     (Controller.Handler);
//   - unslimmed (20,000 nodes only): no transform and a copy of each object in state, the
//     feed before this change (a reconciler's Get copies from the cache, state copies again).
//
// Why not envtest or the fake client: a real API server holding a million pods needs more
// memory and time than this machine has, and the fake client has no informer, transform or
// index path. Feeding the informers from a ListerWatcher exercises exactly the code that
// keeps objects in memory.
func BenchmarkStateMemory(b *testing.B) {
	sizes := []int{20000, 50000, 100000}
	if v := os.Getenv("STATE_NODES"); v != "" { // one other size, e.g. a quick 1000 while developing
		n, err := strconv.Atoi(v)
		if err != nil {
			b.Fatalf("STATE_NODES=%q: %v", v, err)
		}
		sizes = []int{n}
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("nodes=%d/shipped", n), func(b *testing.B) { benchMemory(b, n, true) })
		if n == 20000 {
			b.Run(fmt.Sprintf("nodes=%d/unslimmed", n), func(b *testing.B) { benchMemory(b, n, false) })
		}
	}
}

const podsPerNode = 10

type recorded struct {
	pod, node []byte // protobuf
	claim     []byte // JSON
}

func loadRecorded(b *testing.B) *recorded {
	read := func(name string, into interface{}) {
		raw, err := os.ReadFile("testdata/" + name)
		if err != nil {
			b.Fatal(err)
		}
		if err := json.Unmarshal(raw, into); err != nil {
			b.Fatalf("%s: %v", name, err)
		}
	}
	var pod corev1.Pod
	var node corev1.Node
	read("pod.json", &pod)
	read("node.json", &node)
	claim, err := os.ReadFile("testdata/nodeclaim.json")
	if err != nil {
		b.Fatal(err)
	}
	r := &recorded{claim: claim}
	if r.pod, err = pod.Marshal(); err != nil {
		b.Fatal(err)
	}
	if r.node, err = node.Marshal(); err != nil {
		b.Fatal(err)
	}
	return r
}

func nodeName(i int) string { return fmt.Sprintf("node-%06d", i) }

// recordedLW lists n recorded objects of one kind in pages and never sends watch events.
type recordedLW struct {
	n     int
	list  func(from, to int) (k8sruntime.Object, error)
	empty func() k8sruntime.Object
}

func (lw *recordedLW) List(opts metav1.ListOptions) (k8sruntime.Object, error) {
	from := 0
	if opts.Continue != "" {
		from, _ = strconv.Atoi(opts.Continue)
	}
	to := lw.n
	if opts.Limit > 0 && from+int(opts.Limit) < to {
		to = from + int(opts.Limit)
	}
	obj, err := lw.list(from, to)
	if err != nil {
		return nil, err
	}
	lm, err := meta.ListAccessor(obj)
	if err != nil {
		return nil, err
	}
	lm.SetResourceVersion("1")
	if to < lw.n {
		lm.SetContinue(strconv.Itoa(to))
	}
	return obj, nil
}

// Watch streams the recorded objects when asked for the initial events (the streaming list
// client-go's reflectors use by default since 1.35, WatchListClient: each object is transformed
// as it arrives, so the untransformed list is never held whole), then a bookmark ending them;
// after that it sends nothing.
func (lw *recordedLW) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	w := &streamWatch{ch: make(chan watch.Event, 100), stop: make(chan struct{})}
	if opts.SendInitialEvents == nil || !*opts.SendInitialEvents {
		return w, nil
	}
	go func() {
		for from := 0; from < lw.n; from += 500 {
			page, err := lw.list(from, min(from+500, lw.n))
			if err != nil {
				w.send(watch.Event{Type: watch.Error, Object: &metav1.Status{Message: err.Error()}})
				return
			}
			// One allocation per object, as a watch decodes them (the page is dropped).
			items, err := meta.ExtractListWithAlloc(page)
			if err != nil {
				w.send(watch.Event{Type: watch.Error, Object: &metav1.Status{Message: err.Error()}})
				return
			}
			for _, o := range items {
				if !w.send(watch.Event{Type: watch.Added, Object: o}) {
					return
				}
			}
		}
		end := lw.empty()
		m, _ := meta.Accessor(end)
		m.SetResourceVersion("1")
		m.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
		w.send(watch.Event{Type: watch.Bookmark, Object: end})
	}()
	return w, nil
}

type streamWatch struct {
	ch       chan watch.Event
	stop     chan struct{}
	stopOnce sync.Once
}

func (w *streamWatch) send(e watch.Event) bool {
	select {
	case w.ch <- e:
		return true
	case <-w.stop:
		return false
	}
}

func (w *streamWatch) Stop()                          { w.stopOnce.Do(func() { close(w.stop) }) }
func (w *streamWatch) ResultChan() <-chan watch.Event { return w.ch }

func (r *recorded) pods(n int) *recordedLW {
	return &recordedLW{n: n * podsPerNode, empty: func() k8sruntime.Object { return &corev1.Pod{} }, list: func(from, to int) (k8sruntime.Object, error) {
		l := &corev1.PodList{Items: make([]corev1.Pod, to-from)}
		for i := range l.Items {
			p := &l.Items[i]
			if err := p.Unmarshal(r.pod); err != nil {
				return nil, err
			}
			k := from + i
			p.Name = fmt.Sprintf("checkout-api-7c9d8f6b5d-%07d", k)
			p.UID = types.UID(fmt.Sprintf("0d6a2c1e-8f4b-4b7a-9c3d-%012d", k))
			p.Spec.NodeName = nodeName(k / podsPerNode)
			p.Labels["app"] = fmt.Sprintf("app-%03d", k%400)
		}
		return l, nil
	}}
}

func (r *recorded) nodes(n int) *recordedLW {
	return &recordedLW{n: n, empty: func() k8sruntime.Object { return &corev1.Node{} }, list: func(from, to int) (k8sruntime.Object, error) {
		l := &corev1.NodeList{Items: make([]corev1.Node, to-from)}
		for i := range l.Items {
			nd := &l.Items[i]
			if err := nd.Unmarshal(r.node); err != nil {
				return nil, err
			}
			k := from + i
			nd.Name = nodeName(k)
			nd.UID = types.UID(fmt.Sprintf("c2d3e4f5-a6b7-4c8d-9e0f-%012d", k))
			nd.Labels[corev1.LabelHostname] = nd.Name
			nd.Spec.ProviderID = fmt.Sprintf("aws:///us-west-2a/i-%017x", k)
		}
		return l, nil
	}}
}

func (r *recorded) claims(n int) *recordedLW {
	return &recordedLW{n: n, empty: func() k8sruntime.Object { return &v1.NodeClaim{} }, list: func(from, to int) (k8sruntime.Object, error) {
		l := &v1.NodeClaimList{Items: make([]v1.NodeClaim, to-from)}
		for i := range l.Items {
			nc := &l.Items[i]
			if err := json.Unmarshal(r.claim, nc); err != nil {
				return nil, err
			}
			k := from + i
			nc.Name = fmt.Sprintf("default-%06d", k)
			nc.UID = types.UID(fmt.Sprintf("7e0c1b2a-3d4e-4f5a-8b6c-%012d", k))
			nc.Status.NodeName = nodeName(k)
			nc.Status.ProviderID = fmt.Sprintf("aws:///us-west-2a/i-%017x", k)
		}
		return l, nil
	}}
}

// feed runs an informer over lw until every object reached the handler; the informer keeps
// running (its cache is part of what is measured) until stop closes.
func feed(b *testing.B, lw *recordedLW, obj k8sruntime.Object, h toolscache.ResourceEventHandlerFuncs, transform bool, stop chan struct{}) {
	indexers := toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc}
	if _, ok := obj.(*corev1.Pod); ok {
		// controller-runtime's field index, as the termination controller registers it.
		indexers["field:spec.nodeName"] = func(o interface{}) ([]string, error) {
			p := o.(*corev1.Pod)
			if p.Spec.NodeName == "" {
				return nil, nil
			}
			return []string{"__all_namespaces/" + p.Spec.NodeName, p.Namespace + "/" + p.Spec.NodeName}, nil
		}
	}
	inf := toolscache.NewSharedIndexInformer(lw, obj, 0, indexers)
	if transform {
		if err := inf.SetTransform(informer.Transform); err != nil {
			b.Fatal(err)
		}
	}
	var seen atomic.Int64
	done := make(chan struct{})
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: func(o interface{}) {
		h.AddFunc(o)
		if seen.Add(1) == int64(lw.n) {
			close(done)
		}
	}}); err != nil {
		b.Fatal(err)
	}
	go inf.Run(stop)
	<-done
}

// writeHeapProfile writes the live heap (go tool pprof -sample_index=inuse_space) as it is
// measured, with the informers still running: STATE_MEMPROFILE=file names the file.
func writeHeapProfile(b *testing.B, name string) {
	f, err := os.Create(name)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := pprof.WriteHeapProfile(f); err != nil {
		b.Fatal(err)
	}
}

func heap() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

func benchMemory(b *testing.B, n int, shipped bool) {
	r := loadRecorded(b)
	for i := 0; i < b.N; i++ {
		stop := make(chan struct{})
		cluster := state.NewCluster(clocktesting.NewFakeClock(metav1.Now().Time), nil)
		handler := func(c *informer.Controller) toolscache.ResourceEventHandlerFuncs {
			if shipped {
				return c.Handler().(toolscache.ResourceEventHandlerFuncs)
			}
			// Before: the reconciler read a copy from the cache, and state copied it again.
			return toolscache.ResourceEventHandlerFuncs{AddFunc: func(o interface{}) {
				c.Update(o.(client.Object).DeepCopyObject().(client.Object))
			}}
		}
		base := heap()
		feed(b, r.nodes(n), &corev1.Node{}, handler(informer.NewNodeController(nil, cluster)), shipped, stop)
		feed(b, r.claims(n), &v1.NodeClaim{}, handler(informer.NewNodeClaimController(nil, cluster)), shipped, stop)
		afterNodes := heap()
		feed(b, r.pods(n), &corev1.Pod{}, handler(informer.NewPodController(nil, cluster)), shipped, stop)
		total := heap()
		if f := os.Getenv("STATE_MEMPROFILE"); f != "" {
			writeHeapProfile(b, f)
		}
		// The state holds the whole cluster: every node joined to its claim, with its pods.
		sns := cluster.Nodes()
		if len(sns) != n {
			b.Fatalf("state has %d nodes, want %d", len(sns), n)
		}
		for _, sn := range []*state.StateNode{sns[0], sns[n/2], sns[n-1]} {
			if sn.NodeClaim == nil || len(sn.Pods) != podsPerNode {
				b.Fatalf("node %s: claim %v, %d pods, want its claim and %d pods", sn.Name(), sn.NodeClaim != nil, len(sn.Pods), podsPerNode)
			}
		}
		sns = nil
		close(stop)
		perNode := float64(afterNodes-base) / float64(n)
		perPod := float64(total-afterNodes) / float64(n*podsPerNode)
		b.ReportMetric(float64(total-base)/(1<<20), "MiB_heap")
		b.ReportMetric(perNode, "B/node+claim")
		b.ReportMetric(perPod, "B/pod")
		b.ReportMetric(float64(n*podsPerNode), "pods")
	}
}
