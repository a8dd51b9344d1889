package scheduling_test

import (
	"fmt"
	"math/rand"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// TestRunFillsEarlierClaimsFirst: a run of identical pods fills the first claim with room,
// and its next pod goes on to the next claim with room (not a new one).
func TestRunFillsEarlierClaimsFirst(t *testing.T) {
	np := pool("p", func(np *scheduling.NodePool) {
		np.InstanceTypes = []*scheduling.InstanceType{itype("four", "amd64", 4, 16, 50)}
	})
	in := &scheduling.Input{NodePools: []*scheduling.NodePool{np}, Pods: []*corev1.Pod{
		mkPod("big-a", "3", "1Gi"), mkPod("big-b", "3", "1Gi"),
		mkPod("s1", "500m", "1Gi"), mkPod("s2", "500m", "1Gi"), mkPod("s3", "500m", "1Gi"), mkPod("s4", "500m", "1Gi"), mkPod("s5", "500m", "1Gi"),
	}}
	res := scheduling.Solve(in)
	var got []string
	for _, c := range res.NewClaims {
		var names []string
		for _, p := range c.Pods {
			names = append(names, p.Name)
		}
		got = append(got, fmt.Sprint(names))
	}
	want := []string{"[big-a s1 s2]", "[big-b s3 s4]", "[s5]"}
	if fmt.Sprint(got) != fmt.Sprint(want) || fingerprint(res) != fingerprint(scheduling.SolveOneByOne(in)) {
		t.Fatalf("claims %v, want %v (and the one-by-one result)", got, want)
	}
}

// TestRunsMatchOneByOne: runs of identical pods placed as a class (placeRun) must give exactly
// the result of placing every pod on its own, on the property tests' snapshots with long runs
// of identical constraint-free pods added (same requests, some in a namespace or with labels a
// group counts, some tolerating a taint), on existing nodes, limited pools and minValues alike.
func TestRunsMatchOneByOne(t *testing.T) {
	n := 500
	if testing.Short() {
		n = 100
	}
	runs := 0
	for seed := int64(0); seed < int64(n); seed++ {
		in := genInput(seed)
		r := rand.New(rand.NewSource(seed))
		for g := 0; g < 1+r.Intn(4); g++ {
			cpu := int64(pick(r, 100, 250, 500, 1000, 2000))
			mem := int64(pick(r, 128, 512, 1024, 4096)) << 20
			size := 2 + r.Intn(60)
			lbls := map[string]string{"run": fmt.Sprint(g)}
			if r.Intn(4) == 0 {
				lbls = map[string]string{"plain": "g0"} // counted by a group of genPodGroups, if any
			}
			for i := 0; i < size; i++ {
				p := genPod(fmt.Sprintf("run%d-%d", g, i), r, lbls)
				p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{
					corev1.ResourceCPU:    *resource.NewMilliQuantity(cpu, resource.DecimalSI),
					corev1.ResourceMemory: *resource.NewQuantity(mem, resource.BinarySI),
				}
				in.Pods = append(in.Pods, p)
			}
			runs++
		}
		// Some pools run out of room for the runs: limits make the last claims differ.
		for _, np := range in.NodePools {
			if r.Intn(4) == 0 {
				np.Remaining = corev1.ResourceList{corev1.ResourceCPU: *resource.NewQuantity(int64(4+r.Intn(40)), resource.DecimalSI)}
			}
		}
		got, want := fingerprint(scheduling.Solve(in)), fingerprint(scheduling.SolveOneByOne(in))
		if got != want {
			t.Fatalf("seed %d: runs placed as a class differ from one by one:\n%s\none by one:\n%s", seed, got, want)
		}
	}
	t.Logf("%d snapshots, %d runs of identical pods", n, runs)
}
