// Command upstream runs upstream Karpenter's scheduler (sigs.k8s.io/karpenter, the release
// pinned in go.mod) on workloads written by hack/benchvsupstream/dump, set up the way
// upstream's own scheduling benchmark sets it up (fake cloud provider, a fresh state.Cluster,
// 5 concurrent reconciles), and prints one line per workload: nodes, $/h, pods left
// unplaced and pods/sec of one fresh solve. This directory is its own Go module so that our
// module never depends on upstream; hack/bench-vs-upstream.sh copies it under bin/ and builds
// it there.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	fakecr "sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "sigs.k8s.io/karpenter/pkg/apis/v1"
	"sigs.k8s.io/karpenter/pkg/cloudprovider"
	"sigs.k8s.io/karpenter/pkg/cloudprovider/fake"
	"sigs.k8s.io/karpenter/pkg/controllers/provisioning/scheduling"
	"sigs.k8s.io/karpenter/pkg/controllers/state"
	"sigs.k8s.io/karpenter/pkg/events"
	"sigs.k8s.io/karpenter/pkg/operator/injection"
	"sigs.k8s.io/karpenter/pkg/operator/logging"
	"sigs.k8s.io/karpenter/pkg/operator/options"
	kscheduling "sigs.k8s.io/karpenter/pkg/scheduling"
	"sigs.k8s.io/karpenter/pkg/test"
)

// Workload mirrors hack/benchvsupstream/dump's file format.
type Workload struct {
	Name              string              `json:"name"`
	IgnorePreferences bool                `json:"ignorePreferences"`
	Limits            corev1.ResourceList `json:"limits"`
	InstanceTypes     []InstanceType      `json:"instanceTypes"`
	Pods              []*corev1.Pod       `json:"pods"`
	Ours              Outcome             `json:"ours"`
}

type InstanceType struct {
	Name         string                           `json:"name"`
	Requirements []corev1.NodeSelectorRequirement `json:"requirements"`
	Capacity     corev1.ResourceList              `json:"capacity"`
	Overhead     corev1.ResourceList              `json:"overhead"`
	Offerings    []Offering                       `json:"offerings"`
}

type Offering struct {
	Zone         string  `json:"zone"`
	CapacityType string  `json:"capacityType"`
	Price        float64 `json:"price"`
	Available    bool    `json:"available"`
}

type Outcome struct {
	Nodes    int     `json:"nodes"`
	Price    float64 `json:"price"`
	Unplaced int     `json:"unplaced"`
}

func main() {
	log.SetLogger(logging.NopLogger)
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: upstream <workload.json>...")
		os.Exit(2)
	}
	fmt.Printf("%-26s %8s %8s %10s %9s %10s | %8s %10s %9s\n", "workload", "pods", "nodes", "$/hour", "unplaced", "pods/sec", "ours:nodes", "$/hour", "unplaced")
	for _, path := range os.Args[1:] {
		b, err := os.ReadFile(path)
		if err != nil {
			fail(err)
		}
		var w Workload
		if err := json.Unmarshal(b, &w); err != nil {
			fail(fmt.Errorf("%s: %w", path, err))
		}
		got, secs := solve(&w)
		fmt.Printf("%-26s %8d %8d %10.2f %9d %10.1f | %8d %10.2f %9d\n", w.Name, len(w.Pods), got.Nodes, got.Price, got.Unplaced,
			float64(len(w.Pods))/secs, w.Ours.Nodes, w.Ours.Price, w.Ours.Unplaced)
	}
}

func instanceTypes(w *Workload) []*cloudprovider.InstanceType {
	var out []*cloudprovider.InstanceType
	for _, it := range w.InstanceTypes {
		reqs := kscheduling.NewNodeSelectorRequirements(it.Requirements...)
		// Upstream expects every well-known label defined on an instance type: its name, and
		// the zones and capacity types of its offerings (as its fake cloud provider does).
		zones, cts := map[string]bool{}, map[string]bool{}
		var offerings cloudprovider.Offerings
		for _, o := range it.Offerings {
			if o.Available {
				zones[o.Zone], cts[o.CapacityType] = true, true
			}
			offerings = append(offerings, &cloudprovider.Offering{
				Available: o.Available,
				Price:     o.Price,
				Requirements: kscheduling.NewLabelRequirements(map[string]string{
					v1.CapacityTypeLabelKey:  o.CapacityType,
					corev1.LabelTopologyZone: o.Zone,
				}),
			})
		}
		reqs.Add(kscheduling.NewRequirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, it.Name))
		reqs.Add(kscheduling.NewRequirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, keys(zones)...))
		reqs.Add(kscheduling.NewRequirement(v1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, keys(cts)...))
		out = append(out, &cloudprovider.InstanceType{
			Name:         it.Name,
			Requirements: reqs,
			Offerings:    offerings,
			Capacity:     it.Capacity,
			Overhead:     &cloudprovider.InstanceTypeOverhead{KubeReserved: it.Overhead},
		})
	}
	return out
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// solve builds a fresh scheduler the way upstream's benchmark does and times one Solve.
func solve(w *Workload) (Outcome, float64) {
	ctx := options.ToContext(injection.WithControllerName(context.Background(), "provisioner"), test.Options())
	opts := []scheduling.Options{scheduling.NumConcurrentReconciles(5)}
	if w.IgnorePreferences {
		opts = append(opts, scheduling.IgnorePreferences)
	}
	nodePool := test.NodePool(v1.NodePool{Spec: v1.NodePoolSpec{Limits: v1.Limits(w.Limits)}})
	its := instanceTypes(w)
	cp := fake.NewCloudProvider()
	cp.InstanceTypes = its
	client := fakecr.NewFakeClient()
	clk := &clock.RealClock{}
	cluster := state.NewCluster(clk, client, cp)
	byPool := map[string][]*cloudprovider.InstanceType{nodePool.Name: its}
	topology, err := scheduling.NewTopology(ctx, client, cluster, nil, []*v1.NodePool{nodePool}, byPool, w.Pods, opts...)
	if err != nil {
		fail(fmt.Errorf("%s: creating topology: %w", w.Name, err))
	}
	s := scheduling.NewScheduler(ctx, client, []*v1.NodePool{nodePool}, cluster, nil, topology, byPool, nil,
		events.NewRecorder(&record.FakeRecorder{}), clk, nil, nil, opts...)
	start := time.Now()
	res, err := s.Solve(ctx, w.Pods)
	secs := time.Since(start).Seconds()
	if err != nil {
		fail(fmt.Errorf("%s: solve: %w", w.Name, err))
	}
	out := Outcome{Nodes: len(res.NewNodeClaims), Unplaced: len(res.PodErrors)}
	for _, nc := range res.NewNodeClaims {
		// The price a launch would pay: the cheapest available offering, compatible with the
		// claim's requirements, of any instance type it still allows (as ours reports).
		best := math.Inf(1)
		for _, it := range nc.InstanceTypeOptions {
			if c := it.Offerings.Available().Compatible(nc.Requirements).Cheapest(); c != nil && c.Price < best {
				best = c.Price
			}
		}
		if !math.IsInf(best, 1) {
			out.Price += best
		}
	}
	return out, secs
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "upstream:", err)
	os.Exit(1)
}
