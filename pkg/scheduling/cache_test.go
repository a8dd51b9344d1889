package scheduling_test

import (
	"sync"
	"testing"

	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

func TestCacheGivesIdenticalResults(t *testing.T) {
	cache := scheduling.NewCache()
	for seed := int64(0); seed < 300; seed++ {
		in := genInput(seed)
		want := fingerprint(scheduling.Solve(in))
		in.Cache = cache
		for i := 0; i < 2; i++ { // miss, then hit
			if got := fingerprint(scheduling.Solve(in)); got != want {
				t.Fatalf("seed %d run %d: cached result differs:\n%s\n---\n%s", seed, i, got, want)
			}
		}
	}
}

func TestCacheSeesOfferingChanges(t *testing.T) {
	cache := scheduling.NewCache()
	np := pool("default")
	in := &scheduling.Input{NodePools: []*scheduling.NodePool{np}, Pods: pods(1, "p", "1", "1Gi", withSelector(zoneKey, "us-west-2a")), Cache: cache}
	if r := scheduling.Solve(in); len(r.NewClaims) != 1 || r.NewClaims[0].InstanceTypes[0].Name != "small" {
		t.Fatalf("unexpected first result %+v", r.NewClaims)
	}
	for i := range np.InstanceTypes[0].Offerings {
		if np.InstanceTypes[0].Offerings[i].Zone == "us-west-2a" {
			np.InstanceTypes[0].Offerings[i].Available = false
		}
	}
	r := scheduling.Solve(in)
	if len(r.NewClaims) != 1 || r.NewClaims[0].InstanceTypes[0].Name == "small" {
		t.Fatalf("cache served a stale offering: %v", r.NewClaims[0].InstanceTypes[0].Name)
	}
}

func TestCacheConcurrentUse(t *testing.T) {
	cache := scheduling.NewCache()
	for seed := int64(0); seed < 40; seed++ {
		base := genInput(seed)
		want := fingerprint(scheduling.Solve(base))
		var wg sync.WaitGroup
		results := make([]string, 4)
		for w := range results {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				in := *base // same pools and instance types, shared cache
				in.Cache = cache
				results[w] = fingerprint(scheduling.Solve(&in))
			}(w)
		}
		wg.Wait()
		for w, got := range results {
			if got != want {
				t.Fatalf("seed %d worker %d: result differs with a shared cache", seed, w)
			}
		}
	}
}
