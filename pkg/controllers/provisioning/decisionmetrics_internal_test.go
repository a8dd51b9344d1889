package provisioning

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
)

func zonePod(selector map[string]string, terms ...corev1.NodeSelectorTerm) *corev1.Pod {
	p := &corev1.Pod{Spec: corev1.PodSpec{NodeSelector: selector}}
	if len(terms) > 0 {
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms}}}
	}
	return p
}

func term(key string, op corev1.NodeSelectorOperator, values ...string) corev1.NodeSelectorTerm {
	return corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: key, Operator: op, Values: values}}}
}

// effectiveZone: one zone, several, none, and unconstrained.
func TestEffectiveZone(t *testing.T) {
	zone := corev1.LabelTopologyZone
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want string
	}{
		{"unconstrained", zonePod(nil), "flexible"},
		{"node selector", zonePod(map[string]string{zone: "a"}), "a"},
		{"affinity In one", zonePod(nil, term(zone, corev1.NodeSelectorOpIn, "b")), "b"},
		{"affinity In two", zonePod(nil, term(zone, corev1.NodeSelectorOpIn, "a", "b")), "flexible"},
		{"two terms, one zone each", zonePod(nil, term(zone, corev1.NodeSelectorOpIn, "a"), term(zone, corev1.NodeSelectorOpIn, "a")), "a"},
		{"NotIn", zonePod(nil, term(zone, corev1.NodeSelectorOpNotIn, "a")), "flexible"},
		{"selector and affinity disjoint", zonePod(map[string]string{zone: "a"}, term(zone, corev1.NodeSelectorOpIn, "b")), "none"},
		{"other key only", zonePod(nil, term("example.com/x", corev1.NodeSelectorOpExists)), "flexible"},
	} {
		if got := effectiveZone(tc.pod); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestAsksForNoKarpenterNode(t *testing.T) {
	np := "karpenter.sh/nodepool"
	if !asksForNoKarpenterNode(zonePod(nil, term(np, corev1.NodeSelectorOpDoesNotExist))) {
		t.Error("DoesNotExist in the only term: want ignored")
	}
	if asksForNoKarpenterNode(zonePod(nil, term(np, corev1.NodeSelectorOpDoesNotExist), term("x", corev1.NodeSelectorOpExists))) {
		t.Error("another term allows Karpenter nodes: want kept")
	}
	if asksForNoKarpenterNode(zonePod(nil)) {
		t.Error("no affinity: want kept")
	}
}

// While a run is in progress its queue depth and unfinished work are
// exported under one scheduling id; after it, neither is.
func TestSchedulerRunGauges(t *testing.T) {
	r := &schedulerRuns{running: map[string]schedulerRun{}}
	end := r.begin("provisioner", 7)
	if n := testutil.CollectAndCount(r); n != 2 {
		t.Fatalf("%d series during a run, want 2", n)
	}
	want := `
# HELP karpenter_scheduler_queue_depth The number of pods currently waiting to be scheduled.
# TYPE karpenter_scheduler_queue_depth gauge
karpenter_scheduler_queue_depth{controller="provisioner",scheduling_id="` + r.running["provisioner"].id + `"} 7
`
	if err := testutil.CollectAndCompare(r, strings.NewReader(want), "karpenter_scheduler_queue_depth"); err != nil {
		t.Error(err)
	}
	end()
	if n := testutil.CollectAndCount(r); n != 0 {
		t.Fatalf("%d series after the run, want 0", n)
	}
}
