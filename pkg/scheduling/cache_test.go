package scheduling_test

import (
	"runtime"
	"sync"
	"testing"

	"github.com/karpenter-go/karpenter/pkg/scheduling"
	"github.com/karpenter-go/karpenter/pkg/scheduling/fake"
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

// A Cache's entries memoize, per requirement set, what solves derive from the instance types
// (compatible sets, price orders, domains, claims' chosen types). These tests change the types
// between solves and check that nothing stale is served.

func TestCacheMemoSeesPriceChanges(t *testing.T) {
	a, b := fake.InstanceType("type-a", 4, 8, 20, 1.0), fake.InstanceType("type-b", 4, 8, 20, 2.0)
	np := &scheduling.NodePool{Name: "default", InstanceTypes: []*scheduling.InstanceType{a, b}}
	in := &scheduling.Input{NodePools: []*scheduling.NodePool{np}, Pods: pods(3, "p", "1", "1Gi"), Cache: scheduling.NewCache()}
	first := func() (string, float64) {
		r := scheduling.Solve(in)
		if len(r.NewClaims) != 1 {
			t.Fatalf("want one claim, got %d", len(r.NewClaims))
		}
		return r.NewClaims[0].InstanceTypes[0].Name, r.NewClaims[0].Price
	}
	for i := 0; i < 2; i++ { // miss, then hit
		if name, price := first(); name != "type-a" || price != 1.0 {
			t.Fatalf("before: cheapest %s at %v, want type-a at 1", name, price)
		}
	}
	for i := range a.Offerings {
		a.Offerings[i].Price = 3.0
	}
	if name, price := first(); name != "type-b" || price != 2.0 {
		t.Fatalf("after a's price rose: cheapest %s at %v, want type-b at 2 (stale price order)", name, price)
	}
}

func TestCacheWithNewTypesEverySolve(t *testing.T) {
	// New instance type objects every round (old ones garbage) and one long-lived Cache: an
	// entry keeps the types it names alive, so a new type never passes for an old one at the
	// same address. Reference: the same input solved without a Cache.
	cache := scheduling.NewCache()
	for seed := int64(0); seed < 60; seed++ {
		in := genInput(seed)
		want := fingerprint(scheduling.Solve(in))
		in.Cache = cache
		if got := fingerprint(scheduling.Solve(in)); got != want {
			t.Fatalf("seed %d: result with a long-lived Cache differs:\n%s\n---\n%s", seed, got, want)
		}
		runtime.GC()
	}
}

func TestNoCacheKeepsNothing(t *testing.T) {
	// Without a Cache a solve derives everything itself: even a change a Cache does not allow
	// (an instance type's capacity edited in place) shows in the next solve.
	np := pool("default")
	in := &scheduling.Input{NodePools: []*scheduling.NodePool{np}, Pods: pods(1, "p", "1", "1Gi")}
	r := scheduling.Solve(in)
	if len(r.NewClaims) != 1 || r.NewClaims[0].InstanceTypes[0].Name != "small" {
		t.Fatalf("unexpected first result %+v", r.NewClaims)
	}
	np.InstanceTypes[0].Capacity = rl("cpu", "500m", "memory", "512Mi", "pods", "10")
	r = scheduling.Solve(in)
	if len(r.NewClaims) != 1 || r.NewClaims[0].InstanceTypes[0].Name == "small" {
		t.Fatalf("a solve without a Cache used what an earlier one derived: %v", r.NewClaims[0].InstanceTypes[0].Name)
	}
}
