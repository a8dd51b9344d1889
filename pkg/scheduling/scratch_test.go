package scheduling_test

import (
	"sync"
	"testing"

	"github.com/karpenter-go/karpenter/pkg/scheduling"
	"github.com/karpenter-go/karpenter/pkg/scheduling/fake"
)

// Solves reuse pooled scratch memory (scratch.go). A solve must give the same result whatever
// solves ran before it on that memory (larger, smaller, with other constraints) and while
// others run on other goroutines.
func TestScratchReuseKeepsResults(t *testing.T) {
	inputs := []*scheduling.Input{
		{Pods: fake.DiversePods(500), NodePools: []*scheduling.NodePool{fake.BenchNodePool()}},
		{Pods: fake.PreferencePods(300), NodePools: []*scheduling.NodePool{fake.BenchNodePool()},
			Options: scheduling.Options{PreferencePolicy: scheduling.PreferencePolicyIgnore}},
	}
	for seed := int64(0); seed < 30; seed++ {
		inputs = append(inputs, genInput(seed))
	}
	// The reference: each input solved first, in order.
	want := make([]string, len(inputs))
	for i, in := range inputs {
		want[i] = fingerprint(scheduling.Solve(in))
	}
	// Again in reverse order, so that every solve follows others of different sizes.
	for i := len(inputs) - 1; i >= 0; i-- {
		if got := fingerprint(scheduling.Solve(inputs[i])); got != want[i] {
			t.Fatalf("input %d: result differs when solved after others", i)
		}
	}
	// And concurrently.
	var wg sync.WaitGroup
	got := make([][]string, 4)
	for w := range got {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := range inputs {
				j := (i + w*7) % len(inputs)
				got[w] = append(got[w], fingerprint(scheduling.Solve(inputs[j])))
			}
		}(w)
	}
	wg.Wait()
	for w := range got {
		for i, g := range got[w] {
			if j := (i + w*7) % len(inputs); g != want[j] {
				t.Fatalf("worker %d, input %d: result differs when solved concurrently", w, j)
			}
		}
	}
}
