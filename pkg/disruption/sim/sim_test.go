package sim_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/disruption/sim"
)

var policies = []v1.ConsolidationPolicy{
	v1.ConsolidationPolicyWhenEmpty, v1.ConsolidationPolicyWhenEmptyOrUnderutilized, v1.ConsolidationPolicyBalanced,
}

// short keeps the tests quick: a day of a smaller workload still scales up,
// down and up again.
func short(cfg sim.Config) sim.Config {
	cfg.Steps, cfg.Deployments = 24, 16
	return cfg
}

// Every step of every policy keeps the invariants: each Deployment has its
// replica count of pods, each on one node or pending, one DaemonSet pod per
// node, no node above its allocatable; and no pod is left pending, since the
// pools can always launch.
func TestStepsKeepInvariants(t *testing.T) {
	for _, policy := range policies {
		t.Run(string(policy), func(t *testing.T) {
			s, err := sim.New(short(kwokConfig(t, 7, policy)))
			if err != nil {
				t.Fatal(err)
			}
			moves := 0
			for i := 0; i < 24; i++ {
				st, err := s.Step()
				if err != nil {
					t.Fatal(err)
				}
				if err := s.Check(); err != nil {
					t.Fatalf("after step %d: %v", i, err)
				}
				if st.Pending != 0 {
					t.Errorf("step %d left %d pods pending", i, st.Pending)
				}
				if st.PassesCapped {
					t.Errorf("step %d stopped at the pass bound", i)
				}
				moves += st.Moves
			}
			if moves == 0 {
				t.Errorf("no disruption decision in 24 steps of a workload that scales down")
			}
		})
	}
}

// Check fails on a fleet that breaks each invariant: it is a real check.
func TestCheckCatchesBrokenFleets(t *testing.T) {
	cases := map[string]struct {
		breakIt func(s *sim.Sim)
		want    string
	}{
		"node above allocatable": {
			breakIt: func(s *sim.Sim) {
				n := s.Nodes()[0]
				n.Allocatable = n.Allocatable.DeepCopy()
				n.Allocatable[corev1.ResourceCPU] = resource.MustParse("100m")
			},
			want: "allocatable",
		},
		"pod lost": {
			breakIt: func(s *sim.Sim) {
				n := s.Nodes()[0]
				n.Pods = n.Pods[:len(n.Pods)-1]
			},
			want: "neither on a node nor pending",
		},
		"pod on two nodes": {
			breakIt: func(s *sim.Sim) {
				a, b := s.Nodes()[0], s.Nodes()[1]
				b.Pods = append(b.Pods, a.Pods[len(a.Pods)-1])
			},
			want: "is on node",
		},
		"node without its DaemonSet pod": {
			breakIt: func(s *sim.Sim) {
				n := s.Nodes()[0]
				n.Pods = n.Pods[1:]
			},
			want: "DaemonSet pods",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s, err := sim.New(short(kwokConfig(t, 7, v1.ConsolidationPolicyWhenEmptyOrUnderutilized)))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Step(); err != nil {
				t.Fatal(err)
			}
			if err := s.Check(); err != nil {
				t.Fatalf("before breaking it: %v", err)
			}
			if len(s.Nodes()) < 2 {
				t.Fatalf("the first step launched %d nodes, want at least 2", len(s.Nodes()))
			}
			tc.breakIt(s)
			err = s.Check()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Check() = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// One seed gives one history, step by step, for every policy.
func TestRunIsDeterministicForASeed(t *testing.T) {
	for _, policy := range policies {
		t.Run(string(policy), func(t *testing.T) {
			a, err := sim.Run(short(kwokConfig(t, 3, policy)))
			if err != nil {
				t.Fatal(err)
			}
			b, err := sim.Run(short(kwokConfig(t, 3, policy)))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("two runs of seed 3 differ:\n%+v\n%+v", a, b)
			}
		})
	}
}

// The demand is the seed's alone: every policy replays the same replica
// counts, and another seed draws another curve.
func TestDemandIsTheSeeds(t *testing.T) {
	var first []int
	for _, policy := range policies {
		r, err := sim.Run(short(kwokConfig(t, 5, policy)))
		if err != nil {
			t.Fatal(err)
		}
		var replicas []int
		for _, st := range r.Steps {
			replicas = append(replicas, st.Replicas)
		}
		if first == nil {
			first = replicas
		} else if !reflect.DeepEqual(first, replicas) {
			t.Fatalf("policy %s saw replicas %v, the first policy %v", policy, replicas, first)
		}
	}
	other, err := sim.New(short(kwokConfig(t, 6, v1.ConsolidationPolicyWhenEmpty)))
	if err != nil {
		t.Fatal(err)
	}
	same, err := sim.New(short(kwokConfig(t, 5, v1.ConsolidationPolicyWhenEmpty)))
	if err != nil {
		t.Fatal(err)
	}
	if reflect.DeepEqual(other.Deployments(), same.Deployments()) {
		t.Fatalf("seeds 5 and 6 drew the same workload")
	}
}

// WhenEmpty deletes only empty nodes: it never evicts a pod, and never
// replaces a node. The other policies do both on this workload.
func TestWhenEmptyNeverEvicts(t *testing.T) {
	r, err := sim.Run(short(kwokConfig(t, 7, v1.ConsolidationPolicyWhenEmpty)))
	if err != nil {
		t.Fatal(err)
	}
	if r.Evicted != 0 || r.Replacements != 0 {
		t.Fatalf("WhenEmpty evicted %d pods and launched %d replacements, want none", r.Evicted, r.Replacements)
	}
	u, err := sim.Run(short(kwokConfig(t, 7, v1.ConsolidationPolicyWhenEmptyOrUnderutilized)))
	if err != nil {
		t.Fatal(err)
	}
	if u.Evicted == 0 {
		t.Fatalf("WhenEmptyOrUnderutilized evicted no pod: the workload does not exercise consolidation")
	}
}

// Every decision's simulation holds when it is carried out: the pods it
// moved all fit where the pass said, with no node launched beyond its
// replacements, and the fleet never costs less than the lower bound.
func TestDecisionsHoldWhenApplied(t *testing.T) {
	for _, policy := range policies[1:] {
		t.Run(string(policy), func(t *testing.T) {
			r, err := sim.Run(short(kwokConfig(t, 7, policy)))
			if err != nil {
				t.Fatal(err)
			}
			if r.Relaunched != 0 {
				t.Errorf("%d nodes launched for evicted pods the decisions had placed", r.Relaunched)
			}
			if r.FinalBoundPerHour <= 0 || r.FinalPricePerHour < r.FinalBoundPerHour {
				t.Errorf("final $/h %.2f against a lower bound of %.2f", r.FinalPricePerHour, r.FinalBoundPerHour)
			}
		})
	}
}

// With the evicted pods re-homed emptiest-first, as kube-scheduler tends to,
// rather than where each decision put them, the replay still keeps every
// invariant and never loops (no step stops at the pass bound), and the model
// is not the plan under another name: upstream's moves alone, which do not
// check how their pods will land, leave pods a node must be launched for.
func TestLeastAllocatedReplayKeepsInvariantsAndConverges(t *testing.T) {
	for _, upstream := range []bool{false, true} {
		t.Run(fmt.Sprintf("upstream-moves=%v", upstream), func(t *testing.T) {
			cfg := short(kwokConfig(t, 7, v1.ConsolidationPolicyWhenEmptyOrUnderutilized))
			cfg.LeastAllocated, cfg.UpstreamMovesOnly = true, upstream
			s, err := sim.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			relaunched := 0
			for i := 0; i < cfg.Steps; i++ {
				st, err := s.Step()
				if err != nil {
					t.Fatal(err)
				}
				if err := s.Check(); err != nil {
					t.Fatalf("after step %d: %v", i, err)
				}
				if st.Pending != 0 || st.PassesCapped {
					t.Errorf("step %d: %d pods pending, stopped at the pass bound: %v", i, st.Pending, st.PassesCapped)
				}
				relaunched += st.Relaunched
			}
			if upstream && relaunched == 0 {
				t.Errorf("no evicted pod landed off its plan: the least-allocated model re-homes pods as planned")
			}
			t.Logf("nodes launched for evicted pods: %d", relaunched)
		})
	}
}
