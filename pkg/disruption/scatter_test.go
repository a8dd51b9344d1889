package disruption

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/karpenter-go/karpenter/pkg/scheduling"
	"github.com/karpenter-go/karpenter/pkg/test/fixtures"
)

// scatterWorld is the move that looped on a small fleet: node f (8 cpu, full
// with seven 1-cpu pods and one of 500m) and node s (one 1-cpu web pod) go;
// the plan puts the 500m pod into the 600m left on node e and the other eight
// pods on one new 8-cpu node, packed full. Evicted, the pods go to the
// emptiest node first: the new node takes f's pods, and the web pod, last,
// finds 500m there and 600m on e. The pods request cpu alone; frag is the
// cpu left on e.
func scatterWorld(frag string) *simulation {
	pod := func(name, cpu, owner string) *corev1.Pod {
		return fixtures.Pod(name, fixtures.WithRequests("cpu", cpu),
			fixtures.WithOwners(metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: owner, UID: types.UID(owner), Controller: ptrTrue()}))
	}
	big := &scheduling.InstanceType{Name: "big", Capacity: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("32Gi"), corev1.ResourcePods: resource.MustParse("110")}}
	used := resource.MustParse("8")
	used.Sub(resource.MustParse(frag))
	e := &scheduling.ExistingNode{Name: "e", NodePool: "default", Allocatable: big.Allocatable(), Initialized: true,
		Pods: []*corev1.Pod{fixtures.Pod("resident", fixtures.WithRequests("cpu", used.String()))}}
	var fPods []*corev1.Pod
	for i := 0; i < 7; i++ {
		fPods = append(fPods, pod(fmt.Sprintf("api-%d", i), "1", "api"))
	}
	small := pod("batch-0", "500m", "batch")
	web := pod("web-0", "1", "web")
	moving := append(append(fPods, small), web)
	return &simulation{ok: true, moving: moving,
		placed: []scheduling.ExistingPlacement{{Node: e, Pods: []*corev1.Pod{small}}},
		replacements: []*scheduling.NewClaim{{Hostname: "new-0", NodePool: &scheduling.NodePool{Name: "default"},
			InstanceTypes: []*scheduling.InstanceType{big}, Pods: append(append([]*corev1.Pod(nil), fPods...), web)}},
	}
}

func ptrTrue() *bool { t := true; return &t }

// TestScatterFailureFindsMovesThatHoldOnlyAsPlanned: the plan above leaves
// the web pod without room once the pods land emptiest-first, so repack
// consolidation refuses it; with 1200m left on e the web pod lands there and
// the move holds. Pods whose place follows topology keep the solver's node.
func TestScatterFailureFindsMovesThatHoldOnlyAsPlanned(t *testing.T) {
	if why := scatterFailure(scatterWorld("600m")); !strings.Contains(why, "pod default/web-0 could find no room") {
		t.Fatalf("the plan holds only if the pods land as planned, got %q", why)
	}
	if why := scatterFailure(scatterWorld("1200m")); why != "" {
		t.Fatalf("with room for the web pod on e the move holds, got %q", why)
	}
	// The web pod spread by zone stays where the solver put it: the new node,
	// and the 500m pod, free to go anywhere, takes the room e keeps for it.
	sim := scatterWorld("600m")
	web := sim.moving[len(sim.moving)-1]
	web.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone,
		WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
	if why := scatterFailure(sim); why != "" {
		t.Fatalf("a spread pod keeps the solver's place, got %q", why)
	}
}
