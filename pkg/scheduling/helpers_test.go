package scheduling_test

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/karpenter-go/karpenter/pkg/scheduling"
	"github.com/karpenter-go/karpenter/pkg/test/fixtures"
)

var testZones = []string{"us-west-2a", "us-west-2b", "us-west-2c"}

// itype builds a test instance type offered spot and on-demand in every test zone, spot 30%
// cheaper; price grows with size so the smallest type is also the cheapest.
func itype(name, arch string, cpu, memGi, pods int64, zones ...string) *scheduling.InstanceType {
	if len(zones) == 0 {
		zones = testZones
	}
	price := 0.05*float64(cpu) + 0.01*float64(memGi)
	it := &scheduling.InstanceType{
		Name:         name,
		Requirements: scheduling.NewRequirements(req(scheduling.LabelArch, in, arch), req(scheduling.LabelOS, in, "linux"), req("example.com/cpu", in, fmt.Sprint(cpu))),
		Capacity: corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewQuantity(cpu, resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity(memGi<<30, resource.BinarySI),
			corev1.ResourcePods:   *resource.NewQuantity(pods, resource.DecimalSI),
		},
	}
	for _, z := range zones {
		it.Offerings = append(it.Offerings,
			scheduling.Offering{Zone: z, CapacityType: scheduling.CapacityTypeOnDemand, Price: price, Available: true},
			scheduling.Offering{Zone: z, CapacityType: scheduling.CapacityTypeSpot, Price: price * 0.7, Available: true})
	}
	return it
}

func defaultTypes() []*scheduling.InstanceType {
	return []*scheduling.InstanceType{
		itype("small", "amd64", 2, 4, 10),
		itype("medium", "amd64", 4, 16, 20),
		itype("large", "amd64", 16, 64, 50),
		itype("arm-medium", "arm64", 4, 16, 20),
	}
}

func pool(name string, mods ...func(*scheduling.NodePool)) *scheduling.NodePool {
	np := &scheduling.NodePool{Name: name, InstanceTypes: defaultTypes()}
	for _, m := range mods {
		m(np)
	}
	return np
}

type podOpt = fixtures.PodOption

// mkPod is a pod of namespace default whose UID is its name, requesting cpu
// and memory.
func mkPod(name, cpu, mem string, opts ...podOpt) *corev1.Pod {
	base := []podOpt{fixtures.WithUID(name), fixtures.WithRequests("cpu", cpu, "memory", mem)}
	return fixtures.Pod(name, append(base, opts...)...)
}

// pairs is the map of key, value pairs.
func pairs(kv ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

func withLabels(kv ...string) podOpt { return fixtures.WithLabels(pairs(kv...)) }

func withSelector(kv ...string) podOpt { return fixtures.WithNodeSelector(pairs(kv...)) }

func nodeTerm(exprs ...corev1.NodeSelectorRequirement) corev1.NodeSelectorTerm {
	return corev1.NodeSelectorTerm{MatchExpressions: exprs}
}

func expr(key string, op corev1.NodeSelectorOperator, vals ...string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: key, Operator: op, Values: vals}
}

// withToleration tolerates the taint's value, or any value when it is "".
func withToleration(key, value string, effect corev1.TaintEffect) podOpt {
	op := corev1.TolerationOpEqual
	if value == "" {
		op = corev1.TolerationOpExists
	}
	return fixtures.WithTolerations(corev1.Toleration{Key: key, Operator: op, Value: value, Effect: effect})
}

func sel(kv ...string) *metav1.LabelSelector { return &metav1.LabelSelector{MatchLabels: pairs(kv...)} }

func withSpread(key string, skew int32, when corev1.UnsatisfiableConstraintAction, s *metav1.LabelSelector, mods ...func(*corev1.TopologySpreadConstraint)) podOpt {
	c := corev1.TopologySpreadConstraint{TopologyKey: key, MaxSkew: skew, WhenUnsatisfiable: when, LabelSelector: s}
	for _, m := range mods {
		m(&c)
	}
	return fixtures.WithTopologySpread(c)
}

func affTerm(key string, s *metav1.LabelSelector) corev1.PodAffinityTerm {
	return corev1.PodAffinityTerm{TopologyKey: key, LabelSelector: s}
}

func node(name, zone, itName string, cpu, memGi, pods int64, mods ...func(*scheduling.ExistingNode)) *scheduling.ExistingNode {
	n := &scheduling.ExistingNode{
		Name: name, Initialized: true, NodePool: "default",
		Labels: map[string]string{scheduling.LabelZone: zone, scheduling.LabelHostname: name, scheduling.LabelInstanceType: itName,
			scheduling.LabelArch: "amd64", scheduling.LabelCapacityType: scheduling.CapacityTypeOnDemand, scheduling.LabelNodePool: "default"},
		Allocatable: corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewQuantity(cpu, resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity(memGi<<30, resource.BinarySI),
			corev1.ResourcePods:   *resource.NewQuantity(pods, resource.DecimalSI),
		},
	}
	for _, m := range mods {
		m(n)
	}
	return n
}

func boundPod(p *corev1.Pod) func(*scheduling.ExistingNode) {
	return func(n *scheduling.ExistingNode) {
		p.Spec.NodeName = n.Name
		n.Pods = append(n.Pods, p)
	}
}

// scenario is one table case: a snapshot and assertions on the result. Every result is also
// run through the independent checker.
type scenario struct {
	name     string
	pools    []*scheduling.NodePool // nil: one pool "default" with defaultTypes()
	existing []*scheduling.ExistingNode
	pods     []*corev1.Pod
	ds       []*corev1.Pod
	mutate   func(*scheduling.Input)
	opts     scheduling.Options
	expect   []expectation
}

type expectation func(t *testing.T, r *result)

type result struct {
	*scheduling.Results
	in    *scheduling.Input
	where map[string]string // pod name → claim hostname or node name
	claim map[string]*scheduling.NewClaim
}

func run(t *testing.T, sc scenario) {
	t.Helper()
	pools := sc.pools
	if pools == nil {
		pools = []*scheduling.NodePool{pool("default")}
	}
	in := &scheduling.Input{Pods: sc.pods, NodePools: pools, ExistingNodes: sc.existing, DaemonSetPods: sc.ds, Options: sc.opts,
		Namespaces: map[string]map[string]string{"default": {"team": "a"}, "other": {"team": "b"}, "third": {"team": "a"}}}
	if sc.mutate != nil {
		sc.mutate(in)
	}
	res := scheduling.Solve(in)
	r := &result{Results: res, in: in, where: map[string]string{}, claim: map[string]*scheduling.NewClaim{}}
	for _, pl := range res.ExistingNodes {
		for _, p := range pl.Pods {
			r.where[p.Name] = pl.Node.Name
		}
	}
	for _, c := range res.NewClaims {
		for _, p := range c.Pods {
			r.where[p.Name] = c.Hostname
			r.claim[p.Name] = c
		}
	}
	if errs := check(in, res); len(errs) > 0 {
		t.Fatalf("checker: %s", strings.Join(errs, "\n"))
	}
	for _, e := range sc.expect {
		e(t, r)
	}
}

func runAll(t *testing.T, cases []scenario) {
	for _, sc := range cases {
		t.Run(sc.name, func(t *testing.T) { run(t, sc) })
	}
}

func claims(n int) expectation {
	return func(t *testing.T, r *result) {
		t.Helper()
		if len(r.NewClaims) != n {
			t.Fatalf("%d new claims, want %d: %v", len(r.NewClaims), n, r.summary())
		}
	}
}

func (r *result) summary() string {
	var b strings.Builder
	for _, c := range r.NewClaims {
		names := []string{}
		for _, p := range c.Pods {
			names = append(names, p.Name)
		}
		fmt.Fprintf(&b, "[%s %s %v] ", c.Hostname, c.Requirements, names)
	}
	for p, err := range r.PodErrors {
		fmt.Fprintf(&b, "{%s: %v} ", p.Name, err)
	}
	return b.String()
}

func scheduled(names ...string) expectation {
	return func(t *testing.T, r *result) {
		t.Helper()
		for _, n := range names {
			if _, ok := r.where[n]; !ok {
				t.Fatalf("pod %s not scheduled: %s", n, r.summary())
			}
		}
	}
}

func allScheduled() expectation {
	return func(t *testing.T, r *result) {
		t.Helper()
		if len(r.PodErrors) > 0 {
			t.Fatalf("unschedulable pods: %s", r.summary())
		}
	}
}

func podErr(name, substr string) expectation {
	return func(t *testing.T, r *result) {
		t.Helper()
		for p, err := range r.PodErrors {
			if p.Name == name {
				if !strings.Contains(err.Error(), substr) {
					t.Fatalf("pod %s error %q, want containing %q", name, err.Error(), substr)
				}
				return
			}
		}
		t.Fatalf("pod %s has no error (placed on %q): %s", name, r.where[name], r.summary())
	}
}

func onNode(pod, nodeName string) expectation {
	return func(t *testing.T, r *result) {
		t.Helper()
		if r.where[pod] != nodeName {
			t.Fatalf("pod %s on %q, want %q: %s", pod, r.where[pod], nodeName, r.summary())
		}
	}
}

func onNewClaim(pod string) expectation {
	return func(t *testing.T, r *result) {
		t.Helper()
		if r.claim[pod] == nil {
			t.Fatalf("pod %s not on a new claim (on %q)", pod, r.where[pod])
		}
	}
}

func together(a, b string) expectation {
	return func(t *testing.T, r *result) {
		t.Helper()
		if r.where[a] == "" || r.where[a] != r.where[b] {
			t.Fatalf("pods %s (%q) and %s (%q) not together", a, r.where[a], b, r.where[b])
		}
	}
}

func apart(a, b string) expectation {
	return func(t *testing.T, r *result) {
		t.Helper()
		if r.where[a] == "" || r.where[b] == "" || r.where[a] == r.where[b] {
			t.Fatalf("pods %s (%q) and %s (%q) not on distinct nodes", a, r.where[a], b, r.where[b])
		}
	}
}

// label asserts the value of key on the pod's node: a claim's pinned single value, or an
// existing node's label. "" asserts the claim leaves the key open (or lacks it).
func label(pod, key, value string) expectation {
	return func(t *testing.T, r *result) {
		t.Helper()
		got := ""
		if c := r.claim[pod]; c != nil {
			if rq, ok := c.Requirements.Get(key); ok {
				got, _ = rq.Single()
			}
		} else {
			for _, n := range r.in.ExistingNodes {
				if n.Name == r.where[pod] {
					got = n.Labels[key]
				}
			}
		}
		if got != value {
			t.Fatalf("pod %s: %s=%q, want %q (%s)", pod, key, got, value, r.summary())
		}
	}
}

func labelIn(pod, key string, values ...string) expectation {
	return func(t *testing.T, r *result) {
		t.Helper()
		c := r.claim[pod]
		if c == nil {
			t.Fatalf("pod %s not on a new claim", pod)
		}
		rq, ok := c.Requirements.Get(key)
		if !ok {
			t.Fatalf("pod %s claim has no %s requirement", pod, key)
		}
		if got := strings.Join(rq.Values(), ","); got != strings.Join(values, ",") || rq.Operator() != corev1.NodeSelectorOpIn {
			t.Fatalf("pod %s: %s %s, want In %v", pod, key, rq, values)
		}
	}
}

func types(pod string, names ...string) expectation {
	return func(t *testing.T, r *result) {
		t.Helper()
		c := r.claim[pod]
		if c == nil {
			t.Fatalf("pod %s not on a new claim", pod)
		}
		var got []string
		for _, it := range c.InstanceTypes {
			got = append(got, it.Name)
		}
		if strings.Join(got, ",") != strings.Join(names, ",") {
			t.Fatalf("pod %s claim types %v, want %v", pod, got, names)
		}
	}
}

func claimPool(pod, poolName string) expectation {
	return func(t *testing.T, r *result) {
		t.Helper()
		c := r.claim[pod]
		if c == nil || c.NodePool.Name != poolName {
			t.Fatalf("pod %s not on a claim of pool %s: %s", pod, poolName, r.summary())
		}
	}
}

func distinctDomains(key string, n int, pods ...string) expectation {
	return func(t *testing.T, r *result) {
		t.Helper()
		set := map[string]bool{}
		for _, p := range pods {
			v := ""
			if c := r.claim[p]; c != nil {
				if rq, ok := c.Requirements.Get(key); ok {
					v, _ = rq.Single()
				}
				if key == scheduling.LabelHostname {
					v = c.Hostname
				}
			} else {
				v = r.where[p]
				for _, nd := range r.in.ExistingNodes {
					if nd.Name == r.where[p] {
						v = nd.Labels[key]
					}
				}
			}
			set[v] = true
		}
		if len(set) != n {
			t.Fatalf("pods span %d %s domains %v, want %d (%s)", len(set), key, set, n, r.summary())
		}
	}
}

func totalPrice(want float64) expectation {
	return func(t *testing.T, r *result) {
		t.Helper()
		if got := r.TotalPrice(); got < want-1e-9 || got > want+1e-9 {
			t.Fatalf("price %v, want %v", got, want)
		}
	}
}

func custom(f func(t *testing.T, r *result)) expectation { return f }

func pods(n int, prefix, cpu, mem string, opts ...podOpt) []*corev1.Pod {
	var out []*corev1.Pod
	for i := 0; i < n; i++ {
		out = append(out, mkPod(fmt.Sprintf("%s-%d", prefix, i), cpu, mem, opts...))
	}
	return out
}

func names(prefix string, n int) []string {
	var out []string
	for i := 0; i < n; i++ {
		out = append(out, fmt.Sprintf("%s-%d", prefix, i))
	}
	return out
}

type storagev1StorageClass struct{ sc *storagev1.StorageClass }

func (s *storagev1StorageClass) list() []*storagev1.StorageClass {
	return []*storagev1.StorageClass{s.sc}
}

func newStorageClass(name string, zones ...string) *storagev1StorageClass {
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: "ebs.csi.aws.com"}
	if len(zones) > 0 {
		sc.AllowedTopologies = []corev1.TopologySelectorTerm{{MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{{Key: scheduling.LabelZone, Values: zones}}}}
	}
	return &storagev1StorageClass{sc: sc}
}

func pvc(name, class, volume string) *corev1.PersistentVolumeClaim {
	c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Spec: corev1.PersistentVolumeClaimSpec{VolumeName: volume}}
	if class != "" {
		c.Spec.StorageClassName = &class
	}
	return c
}

func pv(name, zone string) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeSpec{
		NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{
			{MatchExpressions: []corev1.NodeSelectorRequirement{expr(scheduling.LabelZone, in, zone)}}}}},
	}}
}

// withoutOverhead returns the types with no kube-reserved or eviction overhead: their
// allocatable is their capacity, so a test's arithmetic stays in whole cpus and GiB.
func withoutOverhead(its ...*scheduling.InstanceType) []*scheduling.InstanceType {
	for _, it := range its {
		it.Overhead = nil
	}
	return its
}
