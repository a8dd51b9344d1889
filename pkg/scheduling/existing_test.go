package scheduling_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/karpenter-go/karpenter/pkg/scheduling"
	"github.com/karpenter-go/karpenter/pkg/scheduling/fake"
)

// mixedExisting builds existing nodes that exercise every part of an existing node's set-up:
// zones (and nodes without a zone label or a hostname label), two instance types, taints
// (NoSchedule and PreferNoSchedule, startup taints, ephemeral taints on starting nodes),
// starting and in-flight nodes (with DaemonSets to reserve), finished pods, bound pods with
// host ports and with required anti-affinity (zonal and hostname), and bound pods whose labels
// the pending pods' selectors name. Names are shuffled so that the solver sorts them.
func mixedExisting(n int) []*scheduling.ExistingNode {
	r := rand.New(rand.NewSource(11))
	var out []*scheduling.ExistingNode
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("mixed-%05d", i)
		size := []string{"4", "16"}[r.Intn(2)]
		en := &scheduling.ExistingNode{
			Name: name,
			Labels: map[string]string{
				scheduling.LabelHostname: name, scheduling.LabelZone: fake.Zones[i%len(fake.Zones)],
				scheduling.LabelInstanceType: "fake-" + size, scheduling.LabelCapacityType: scheduling.CapacityTypeOnDemand,
				scheduling.LabelArch: "amd64", scheduling.LabelOS: "linux", "karpenter.sh/nodepool": "default",
			},
			Allocatable: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse(size),
				corev1.ResourceMemory: resource.MustParse(size + "Gi"),
				corev1.ResourcePods:   resource.MustParse("20"),
			},
			Initialized: true, NodePool: "default",
		}
		switch i % 13 {
		case 1:
			delete(en.Labels, scheduling.LabelZone)
		case 2:
			delete(en.Labels, scheduling.LabelHostname)
		case 3:
			en.Taints = []corev1.Taint{{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}}
		case 4:
			en.Taints = []corev1.Taint{{Key: "soft", Effect: corev1.TaintEffectPreferNoSchedule}}
		case 5:
			en.Initialized = false
			en.Taints = []corev1.Taint{{Key: "node.kubernetes.io/not-ready", Effect: corev1.TaintEffectNoSchedule}}
		case 6:
			en.InFlight, en.Initialized = true, false
		case 7:
			en.StartupTaints = []corev1.Taint{{Key: "startup", Effect: corev1.TaintEffectNoSchedule}}
		case 8:
			delete(en.Allocatable, corev1.ResourcePods)
		}
		pods := r.Intn(6)
		if en.InFlight {
			pods = 0
		}
		for k := 0; k < pods; k++ {
			lbls := map[string]string{"app": fmt.Sprintf("svc-%d", r.Intn(20))}
			if r.Intn(4) == 0 {
				lbls["my-label"] = fmt.Sprintf("value-%d", r.Intn(30))
			}
			if r.Intn(8) == 0 {
				lbls = map[string]string{"my-affinity": fmt.Sprintf("value-%d", r.Intn(30))}
			}
			p := fake.Pod("default", fmt.Sprintf("%s-%d", name, k), fmt.Sprintf("%dm", 100+r.Intn(700)), fmt.Sprintf("%dMi", 100+r.Intn(700)), lbls)
			p.Spec.NodeName = name
			switch r.Intn(16) {
			case 0:
				p.Status.Phase = corev1.PodSucceeded
			case 1:
				p.Spec.Containers[0].Ports = []corev1.ContainerPort{{HostPort: 8080, ContainerPort: 8080}}
			case 2:
				p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
					LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "nginx"}}, TopologyKey: scheduling.LabelHostname,
				}}}}
			case 3:
				p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
					LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "my-label", Operator: metav1.LabelSelectorOpIn, Values: []string{"value-1", "value-2"}}}},
					TopologyKey:   scheduling.LabelZone,
				}}}}
			case 4:
				p.OwnerReferences = []metav1.OwnerReference{{Kind: "DaemonSet", Name: "ds", APIVersion: "apps/v1", UID: "ds"}}
			}
			en.Pods = append(en.Pods, p)
		}
		out = append(out, en)
	}
	r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// mixedPending adds to the diverse workload pods whose spread constraints filter nodes (node
// affinity and taints honoured), pods tolerating the taints, pods with host ports and pods
// selecting an instance type.
func mixedPending(n int) []*corev1.Pod {
	pods := fake.DiversePods(n)
	honor := corev1.NodeInclusionPolicyHonor
	for i, p := range pods {
		switch i % 11 {
		case 0:
			p.Spec.NodeSelector = map[string]string{scheduling.LabelInstanceType: "fake-16"}
		case 1:
			p.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}
		case 2:
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{HostPort: 8080, ContainerPort: 8080}}
		case 3:
			p.Spec.NodeSelector = map[string]string{scheduling.LabelInstanceType: "fake-4"}
			p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
				MaxSkew: 2, TopologyKey: scheduling.LabelZone, WhenUnsatisfiable: corev1.DoNotSchedule,
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "svc-3"}}, NodeTaintsPolicy: &honor,
			}}
			p.Labels["app"] = "svc-3"
		case 4:
			p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpExists}}},
				TopologyKey:   scheduling.LabelZone,
			}}}}
		}
	}
	return pods
}

// digest renders a result canonically: every placement, claim and error.
func digest(res *scheduling.Results) string {
	var lines []string
	for _, e := range res.ExistingNodes {
		var names []string
		for _, p := range e.Pods {
			names = append(names, p.Name)
		}
		lines = append(lines, "existing "+e.Node.Name+": "+strings.Join(names, ","))
	}
	for _, c := range res.NewClaims {
		var names []string
		for _, p := range c.Pods {
			names = append(names, p.Name)
		}
		lines = append(lines, fmt.Sprintf("claim %s %s %d types %.4f: %s", c.Hostname, c.Requirements.Without(scheduling.LabelInstanceType), len(c.InstanceTypes), c.Price, strings.Join(names, ",")))
	}
	var errs []string
	for p, err := range res.PodErrors {
		errs = append(errs, "error "+p.Name+": "+err.Error())
	}
	sort.Strings(errs)
	lines = append(lines, errs...)
	sum := sha256.Sum256([]byte(strings.Join(lines, "\n")))
	return hex.EncodeToString(sum[:8])
}

// TestExistingNodesUnchanged pins the results of solves against existing nodes, so that work
// on how existing nodes are set up (lazily compiled labels, slabs, the bound-pod index, cached
// domains) cannot change a placement. The digests were taken before that work.
func TestExistingNodesUnchanged(t *testing.T) {
	daemon := fake.Pod("kube-system", "ds", "100m", "128Mi", map[string]string{"ds": "yes"})
	daemon.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
	for _, tc := range []struct {
		name string
		in   func() *scheduling.Input
		want string
	}{
		{"mixed", func() *scheduling.Input {
			return &scheduling.Input{Pods: mixedPending(2000), ExistingNodes: mixedExisting(500), DaemonSetPods: []*corev1.Pod{daemon},
				NodePools: []*scheduling.NodePool{fake.BenchNodePool()}}
		}, "e434fe91057479a8"},
		{"mixed-no-pools", func() *scheduling.Input {
			return &scheduling.Input{Pods: mixedPending(300), ExistingNodes: mixedExisting(400), DaemonSetPods: []*corev1.Pod{daemon}}
		}, "a1725864d99ac61b"},
		{"scale-room", func() *scheduling.Input {
			return &scheduling.Input{Pods: fake.DiversePods(1000), ExistingNodes: scaleNodes(2000, 0.5), NodePools: []*scheduling.NodePool{fake.BenchNodePool()}}
		}, "e54713ee9df42e3b"},
		{"scale-full", func() *scheduling.Input {
			return &scheduling.Input{Pods: fake.DiversePods(1000), ExistingNodes: scaleNodes(2000, 1), NodePools: []*scheduling.NodePool{fake.BenchNodePool()}}
		}, "7ca6a67623b6a9d8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := scheduling.Solve(tc.in())
			if got := digest(res); got != tc.want {
				onExisting := 0
				for _, e := range res.ExistingNodes {
					onExisting += len(e.Pods)
				}
				t.Errorf("digest %s, want %s (%d pods on existing nodes, %d claims, %d errors)", got, tc.want, onExisting, len(res.NewClaims), len(res.PodErrors))
			}
		})
	}
}
