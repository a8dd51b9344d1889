package plan_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	kwokv1alpha1 "github.com/karpenter-go/karpenter/pkg/apis/kwok/v1alpha1"
	"github.com/karpenter-go/karpenter/pkg/kubectl/internal/plantest"
	"github.com/karpenter-go/karpenter/pkg/kubectl/plan"
	"github.com/karpenter-go/karpenter/pkg/kubectl/snapshot"
)

// benchDump writes a `kubectl get -o json`-shaped List of a cluster with
// nodes nodes of the default pool, podsPerNode bound pods on each (busy
// enough that consolidation has to simulate), and pending pods.
func benchDump(b testing.TB, nodes, podsPerNode, pending int) string {
	b.Helper()
	var items []client.Object
	add := func(o client.Object) { items = append(items, o) }
	// The NodePool and its (Ready) KWOKNodeClass, as a live cluster shows them.
	base := plantest.Base(b, "testdata/nodepool.yaml")
	for _, nc := range snapshot.All[*kwokv1alpha1.KWOKNodeClass](base) {
		add(nc)
	}
	for _, np := range snapshot.All[*v1.NodePool](base) {
		add(np)
	}
	types := []string{"c-4x-amd64-linux", "c-8x-amd64-linux", "m-4x-amd64-linux"}
	for i := range nodes {
		name := fmt.Sprintf("node-%05d", i)
		n, nc := plantest.Node(b, name, types[i%len(types)])
		add(n)
		add(nc)
		for j := range podsPerNode {
			add(plantest.BoundPod(fmt.Sprintf("p-%05d-%02d", i, j), name, "350m"))
		}
	}
	for i := range pending {
		add(plantest.PendingPod(fmt.Sprintf("pending-%05d", i), "2"))
	}
	return writeList(b, items)
}

func writeList(b testing.TB, items []client.Object) string {
	b.Helper()
	var buf bytes.Buffer
	buf.WriteString(`{"apiVersion": "v1", "kind": "List", "items": [`)
	enc := json.NewSerializerWithOptions(json.DefaultMetaFactory, nil, nil, json.SerializerOptions{Yaml: false})
	scheme := snapshot.Scheme()
	for _, o := range items {
		gvks, _, err := scheme.ObjectKinds(o)
		if err != nil {
			b.Fatal(err)
		}
		o.GetObjectKind().SetGroupVersionKind(gvks[0])
		if buf.Bytes()[buf.Len()-1] != '[' {
			buf.WriteString(",")
		}
		if err := enc.Encode(o, &buf); err != nil {
			b.Fatal(err)
		}
	}
	buf.WriteString("]}\n")
	path := filepath.Join(b.TempDir(), "dump.json")
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		b.Fatal(err)
	}
	return path
}

// BenchmarkPlan: `plan --from-dump` on 5,000 nodes and 50,000 pods (45,000
// bound, 5,000 pending): reading the dump, then the plan (provisioning and
// the chained disruption passes). Prints the time of each and the heap.
func BenchmarkPlan(b *testing.B) {
	path := benchDump(b, 5000, 9, 5000)
	ctx := context.Background()
	var p *plan.Plan
	var read, compute time.Duration
	var ms runtime.MemStats
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		s, err := snapshot.FromDump(path, nil)
		if err != nil {
			b.Fatal(err)
		}
		read = time.Since(start)
		start = time.Now()
		p, err = plan.PlanSnapshot(ctx, s, nil, nil, nil, nil, plan.Options{Now: plantest.Now})
		if err != nil {
			b.Fatal(err)
		}
		compute = time.Since(start)
		runtime.ReadMemStats(&ms)
	}
	b.StopTimer()
	pods := 0
	for _, l := range p.Launches {
		pods += len(l.Pods)
	}
	b.ReportMetric(read.Seconds(), "read-s")
	b.ReportMetric(compute.Seconds(), "plan-s")
	b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MiB")
	b.Logf("5000 nodes, 50000 pods: dump read in %s, plan in %s (heap in use %d MiB): %d launches for %d pods, %d disruptions, %d blocked, %d pending, $%.2f/h -> $%.2f/h",
		read.Round(time.Millisecond), compute.Round(time.Millisecond), ms.HeapInuse>>20, len(p.Launches), pods, len(p.Disruptions),
		len(p.Blocked), len(p.Pending), p.CostPerHourBefore, p.CostPerHourAfter)
	if len(p.Pending) > 0 {
		b.Logf("first pending pod: %+v", p.Pending[0])
	}
}
