package scheduling_test

import (
	"errors"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/karpenter-go/karpenter/pkg/scheduling"
	"github.com/karpenter-go/karpenter/pkg/test/fixtures"
)

func withClaim() podOpt { return fixtures.WithResourceClaim("gpu", "gpu-template") }

// draRefused expects the pod refused for its Dynamic Resource Allocation requests, with the
// message that names the setting.
func draRefused(name string) expectation {
	return func(t *testing.T, r *result) {
		t.Helper()
		podErr(name, scheduling.DRAErrorMessage)(t, r)
		for p, err := range r.PodErrors {
			if p.Name == name && !scheduling.IsDRAError(err) {
				t.Fatalf("pod %s error %T is not a DRAError", name, err)
			}
		}
	}
}

func cpuOverhead(pod, want string) expectation {
	return func(t *testing.T, r *result) {
		t.Helper()
		c := r.claim[pod]
		if c == nil {
			t.Fatalf("pod %s not on a new claim: %s", pod, r.summary())
		}
		got := c.DaemonSetOverhead[corev1.ResourceCPU]
		if want == "0" && got.IsZero() {
			return
		}
		if got.String() != want {
			t.Fatalf("pod %s: claim's daemonset cpu overhead %s, want %s", pod, got.String(), want)
		}
	}
}

// With IGNORE_DRA_REQUESTS=true (the zero Options) a pod with Dynamic Resource Allocation
// requests gets neither a new node nor a place on an existing one, and DaemonSets with such
// requests are no node's overhead; with SimulateDRARequests they are placed by their other
// requests.
func TestDRARequests(t *testing.T) {
	initClaim := fixtures.PodFunc(func(p *corev1.Pod) {
		p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: fixtures.DefaultImage,
			Resources: corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "setup"}}}}}
	})
	containerClaimOnly := fixtures.PodFunc(func(p *corev1.Pod) {
		p.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "gpu"}}
	})
	podClaimOnly := fixtures.PodFunc(func(p *corev1.Pod) {
		tmpl := "t"
		p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: &tmpl}}
	})
	unsatisfiablePreference := fixtures.WithPreferredNodeAffinity(10, corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
		{Key: scheduling.LabelZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"nowhere"}}}})
	runAll(t, []scenario{
		{name: "a pending pod with a resource claim launches nothing, the others are provisioned for",
			pods:   append(pods(1, "dra", "1", "1Gi", withClaim()), pods(2, "plain", "1", "1Gi")...),
			expect: []expectation{draRefused("dra-0"), claims(1), scheduled(names("plain", 2)...)}},
		{name: "a claim named by a container only, by the pod only, or by an init container counts",
			pods: append(append(pods(1, "c", "1", "1Gi", containerClaimOnly), pods(1, "p", "1", "1Gi", podClaimOnly)...),
				pods(1, "i", "1", "1Gi", initClaim)...),
			expect: []expectation{draRefused("c-0"), draRefused("p-0"), draRefused("i-0"), claims(0)}},
		{name: "an existing node with room does not take it either",
			existing: []*scheduling.ExistingNode{node("n1", "us-west-2a", "large", 16, 64, 50)},
			pods:     pods(1, "dra", "1", "1Gi", withClaim()),
			expect: []expectation{draRefused("dra-0"), claims(0), custom(func(t *testing.T, r *result) {
				if len(r.ExistingNodes) != 0 {
					t.Fatalf("placed on an existing node: %s", r.summary())
				}
			})}},
		{name: "the refusal is not relaxed away: the message stays the refusal",
			pods:   pods(1, "dra", "1", "1Gi", withClaim(), unsatisfiablePreference),
			expect: []expectation{draRefused("dra-0")}},
		{name: "SimulateDRARequests places the pod by its other requests",
			opts:   scheduling.Options{SimulateDRARequests: true},
			pods:   pods(1, "dra", "1", "1Gi", withClaim()),
			expect: []expectation{allScheduled(), claims(1)}},
		{name: "a DaemonSet with a resource claim is no new node's overhead",
			ds:     []*corev1.Pod{mkPod("ds-dra", "3", "100Mi", withClaim()), mkPod("ds", "100m", "100Mi")},
			pods:   pods(1, "p", "1", "1Gi"),
			expect: []expectation{types("p-0", "small", "arm-medium", "medium", "large"), cpuOverhead("p-0", "100m")}},
		{name: "with SimulateDRARequests a DaemonSet with a resource claim is overhead",
			opts:   scheduling.Options{SimulateDRARequests: true},
			ds:     []*corev1.Pod{mkPod("ds-dra", "3", "100Mi", withClaim()), mkPod("ds", "100m", "100Mi")},
			pods:   pods(1, "p", "800m", "1Gi"),
			expect: []expectation{types("p-0", "arm-medium", "medium", "large"), cpuOverhead("p-0", "3100m")}},
		{name: "a starting node reserves no room for a DaemonSet with a resource claim",
			existing: []*scheduling.ExistingNode{node("n1", "us-west-2a", "small", 2, 4, 10, func(n *scheduling.ExistingNode) { n.Initialized = false })},
			ds:       []*corev1.Pod{mkPod("ds-dra", "1500m", "100Mi", withClaim())},
			pods:     pods(1, "p", "1", "1Gi"),
			expect:   []expectation{onNode("p-0", "n1")}},
	})
}

// Relaxation, topology and runs of identical pods leave every pod with claims refused, whatever
// its neighbours in the queue.
func TestDRARequestsAmongManyPods(t *testing.T) {
	var ps []*corev1.Pod
	for i := 0; i < 40; i++ {
		opts := []podOpt{}
		if i%3 == 0 {
			opts = append(opts, withClaim())
		}
		ps = append(ps, mkPod(fmt.Sprintf("p-%02d", i), "500m", "512Mi", opts...))
	}
	in := &scheduling.Input{Pods: ps, NodePools: []*scheduling.NodePool{pool("default")}}
	res := scheduling.Solve(in)
	if errs := check(in, res); len(errs) > 0 {
		t.Fatal(errs)
	}
	refused := 0
	for p, err := range res.PodErrors {
		if !scheduling.HasDRARequests(p) || !scheduling.IsDRAError(err) {
			t.Fatalf("pod %s: %v", p.Name, err)
		}
		refused++
	}
	if refused != 14 {
		t.Fatalf("%d pods refused, want the 14 with claims", refused)
	}
}

func TestIsDRAError(t *testing.T) {
	if !scheduling.IsDRAError(fmt.Errorf("pod default/x: %w", scheduling.DRAError{})) {
		t.Error("a wrapped DRAError is not recognised")
	}
	if scheduling.IsDRAError(errors.New(scheduling.DRAErrorMessage)) {
		t.Error("an error with the same text is recognised")
	}
}
