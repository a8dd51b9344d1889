// Command dump writes the scheduling benchmark's input (fake.BenchNodePool's 400 instance
// types and fake.DiversePods / fake.PreferencePods) as JSON, one file per workload, together
// with our solver's node count and $/h on it, so that hack/benchvsupstream/upstream can run
// upstream Karpenter's scheduler on exactly the same input. See hack/bench-vs-upstream.sh.
// With -ec2 it also writes the EC2 cost benchmark's variants (pkg/scheduling/ec2bench): the
// file format has no NodePool requirements, so the catalog is written already narrowed by the
// getting-started NodePool (the types it admits, the offerings of the capacity types it allows).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	awsv1 "github.com/karpenter-go/karpenter/pkg/apis/aws/v1"
	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
	"github.com/karpenter-go/karpenter/pkg/scheduling/ec2bench"
	"github.com/karpenter-go/karpenter/pkg/scheduling/fake"
)

// Workload is the file format shared with hack/benchvsupstream/upstream (a copy of these
// types lives there: the two modules share no code).
type Workload struct {
	Name string `json:"name"`
	// IgnorePreferences selects PreferencePolicy=Ignore (upstream: scheduling.IgnorePreferences).
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

// Outcome is one solver's result on a workload.
type Outcome struct {
	Nodes    int     `json:"nodes"`
	Price    float64 `json:"price"`
	Unplaced int     `json:"unplaced"`
}

func main() {
	out := flag.String("out", "", "directory to write <workload>.json into")
	sizes := flag.String("sizes", "1000,2000,5000,10000,20000", "DiversePods sizes")
	prefs := flag.Int("prefs", 4000, "PreferencePods count (0: none)")
	ec2 := flag.String("ec2", "", "EC2 cost benchmark variants, comma-separated (e.g. unconstrained)")
	flag.Parse()
	if *out == "" {
		fmt.Fprintln(os.Stderr, "dump: -out is required")
		os.Exit(2)
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fail(err)
	}
	for _, f := range strings.Split(*sizes, ",") {
		if strings.TrimSpace(f) == "" {
			continue // -sizes "": preference workloads only
		}
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			fail(fmt.Errorf("-sizes: %q is not a number", f))
		}
		write(*out, fmt.Sprintf("pods=%d", n), fake.DiversePods(n), scheduling.PreferencePolicyRespect)
	}
	if *prefs > 0 {
		write(*out, "respect", fake.PreferencePods(*prefs), scheduling.PreferencePolicyRespect)
		write(*out, "ignore", fake.PreferencePods(*prefs), scheduling.PreferencePolicyIgnore)
	}
	if *ec2 != "" {
		catalog, err := ec2bench.Catalog(context.Background())
		if err != nil {
			fail(err)
		}
		for _, f := range strings.Split(*ec2, ",") {
			v := ec2bench.Variant(strings.TrimSpace(f))
			if !slices.Contains(ec2bench.Variants(), v) {
				fail(fmt.Errorf("-ec2: unknown variant %q (%v)", v, ec2bench.Variants()))
			}
			writeEC2(*out, v, catalog)
		}
	}
}

// writeEC2 writes an EC2 cost benchmark variant as ec2-<variant>.json. Ours is solved with the
// NodePool's requirements; the file carries the catalog narrowed by them and a limit no solve
// reaches (upstream's test NodePool would otherwise default to 2,000 cpu).
func writeEC2(dir string, v ec2bench.Variant, catalog []*scheduling.InstanceType) {
	pool := ec2bench.NodePool(v, catalog)
	pods := ec2bench.Pods(ec2bench.Seed, v)
	// Solved as provisioning solves (Options.Repack).
	res := scheduling.Solve(&scheduling.Input{Pods: pods, NodePools: []*scheduling.NodePool{pool}, Options: scheduling.Options{Repack: true}})
	w := Workload{
		Name: "ec2-" + string(v),
		Limits: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("10000000"),
			corev1.ResourceMemory: resource.MustParse("10000000Gi"),
		},
		Pods: pods,
		Ours: Outcome{Nodes: len(res.NewClaims), Price: res.TotalPrice(), Unplaced: len(res.PodErrors)},
	}
	for _, it := range catalog {
		if pool.Requirements.Intersects(it.Requirements) != nil {
			continue
		}
		x := InstanceType{Name: it.Name, Requirements: it.Requirements.NodeSelectorRequirements(), Capacity: it.Capacity, Overhead: it.Overhead}
		for _, o := range it.Offerings {
			if !pool.Requirements.Has(v1.CapacityTypeLabelKey, o.CapacityType) || !pool.Requirements.Has(corev1.LabelTopologyZone, o.Zone) {
				continue
			}
			// The zone id each offering carries is left out: no pod of the workload selects it.
			if o.Requirements.Without(awsv1.LabelTopologyZoneID).Len() > 0 {
				fail(fmt.Errorf("instance type %s: offerings with extra requirements are not supported", it.Name))
			}
			x.Offerings = append(x.Offerings, Offering{Zone: o.Zone, CapacityType: o.CapacityType, Price: o.Price, Available: o.Available})
		}
		if len(x.Offerings) > 0 {
			w.InstanceTypes = append(w.InstanceTypes, x)
		}
	}
	save(dir, w)
}

func write(dir, name string, pods []*corev1.Pod, policy scheduling.PreferencePolicy) {
	pool := fake.BenchNodePool()
	res := scheduling.Solve(&scheduling.Input{Pods: pods, NodePools: []*scheduling.NodePool{pool}, Options: scheduling.Options{PreferencePolicy: policy, Repack: true}})
	w := Workload{
		Name:              name,
		IgnorePreferences: policy == scheduling.PreferencePolicyIgnore,
		Limits:            pool.Remaining,
		Pods:              pods,
		Ours:              Outcome{Nodes: len(res.NewClaims), Price: res.TotalPrice(), Unplaced: len(res.PodErrors)},
	}
	for _, it := range pool.InstanceTypes {
		x := InstanceType{Name: it.Name, Requirements: it.Requirements.NodeSelectorRequirements(), Capacity: it.Capacity, Overhead: it.Overhead}
		for _, o := range it.Offerings {
			if o.Requirements.Len() > 0 {
				fail(fmt.Errorf("instance type %s: offerings with extra requirements are not supported", it.Name))
			}
			x.Offerings = append(x.Offerings, Offering{Zone: o.Zone, CapacityType: o.CapacityType, Price: o.Price, Available: o.Available})
		}
		w.InstanceTypes = append(w.InstanceTypes, x)
	}
	save(dir, w)
}

func save(dir string, w Workload) {
	b, err := json.Marshal(w)
	if err != nil {
		fail(err)
	}
	if err := os.WriteFile(filepath.Join(dir, w.Name+".json"), b, 0o644); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "dump:", err)
	os.Exit(1)
}
