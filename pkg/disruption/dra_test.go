package disruption_test

import (
	"strings"
	"testing"
	"time"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/disruption"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
	"github.com/karpenter-go/karpenter/pkg/test/fixtures"
)

var withClaim = fixtures.WithResourceClaim("gpu", "gpu-template")

// A node running a pod with Dynamic Resource Allocation requests keeps it
// while IGNORE_DRA_REQUESTS is true, as upstream: the pod would not be
// rescheduled anywhere, so neither consolidation nor drift moves it, and the
// node says why. Its other pods, and nodes without such pods, are disrupted as
// usual.
func TestPodsWithResourceClaimsStay(t *testing.T) {
	refusal := "pod default/gpu: " + scheduling.DRAErrorMessage
	runCases(t, []tcase{
		{"an underutilized node whose pod claims a device is not deleted", func(w *world) {
			w.pool("default", standardTypes())
			a := w.node("a", "default", "m")
			w.pod(a, "gpu", "1", withClaim)
			b := w.node("b", "default", "m", notConsolidatable)
			w.pod(b, "db", "1")
		}, expect{none: true, code: map[string]disruption.Code{"a": disruption.CodeUnconsolidatable},
			explained: map[string]string{"a": "its pods cannot all be rescheduled: " + refusal}}},

		{"a node a cheaper one could replace is not replaced", func(w *world) {
			w.pool("default", standardTypes(), onDemandOnly)
			a := w.node("a", "default", "l")
			w.pod(a, "web", "1")
			w.pod(a, "gpu", "1", withClaim)
		}, expect{none: true, explained: map[string]string{"a": refusal}}},

		{"multi-node consolidation leaves it out and takes the others", func(w *world) {
			w.pool("default", standardTypes(), onDemandOnly)
			for _, n := range []string{"a", "b", "c"} {
				w.pod(w.node(n, "default", "m"), "web-"+n, "500m")
			}
			w.pod(w.node("d", "default", "m"), "gpu", "500m", withClaim)
		}, expect{method: disruption.MethodMultiNodeConsolidation, check: func(t *testing.T, r *disruption.Result) {
			for _, n := range r.Decision.CandidateNames() {
				if n == "d" {
					t.Fatalf("the node of the pod with a claim is disrupted:\n%s", describe(r))
				}
			}
			if len(r.Decision.CandidateNames()) < 2 {
				t.Fatalf("want the other nodes consolidated together:\n%s", describe(r))
			}
		}}},

		{"a drifted node whose pod claims a device is not replaced", func(w *world) {
			w.pool("default", standardTypes())
			a := w.node("a", "default", "m", notConsolidatable, drifted(now.Add(-time.Hour)))
			w.pod(a, "gpu", "1", withClaim)
		}, expect{none: true, code: map[string]disruption.Code{"a": disruption.CodeUnschedulable},
			explained: map[string]string{"a": "node a drifted (NodePoolDrifted) but its pods cannot be rescheduled: " + refusal}}},

		{"a DaemonSet pod with a claim does not keep its node", func(w *world) {
			w.pool("default", standardTypes())
			a := w.node("a", "default", "m")
			w.pod(a, "agent", "100m", withClaim, daemonSetPod)
		}, expect{method: disruption.MethodEmptiness, reason: v1.DisruptionReasonEmpty, action: "delete", candidates: []string{"a"}}},

		{"a pending pod with a claim does not stop consolidation", func(w *world) {
			w.pool("default", standardTypes())
			a := w.node("a", "default", "m")
			w.pod(a, "web", "1")
			w.pod(w.node("b", "default", "m", notConsolidatable), "db", "1")
			w.pending("queued", "1", withClaim)
		}, expect{method: disruption.MethodSingleNodeConsolidation, action: "delete", candidates: []string{"a"}}},

		{"IGNORE_DRA_REQUESTS=false moves it like any other pod", func(w *world) {
			w.pool("default", standardTypes())
			w.in.Scheduling.Options.SimulateDRARequests = true
			a := w.node("a", "default", "m")
			w.pod(a, "gpu", "1", withClaim)
			w.pod(w.node("b", "default", "m", notConsolidatable), "db", "1")
		}, expect{method: disruption.MethodSingleNodeConsolidation, action: "delete", candidates: []string{"a"}}},
	})
}

// The answer without a solve is the solver's: with the shortcut taken out of
// the picture (the pod on a node the simulation must solve for), the solver
// refuses the same pod with the same error.
func TestPodWithResourceClaimRefusedBySolver(t *testing.T) {
	w := newWorld(t)
	w.pool("default", standardTypes())
	p := w.pending("gpu", "1", withClaim)
	res := scheduling.Solve(w.in.Scheduling)
	err, ok := res.PodErrors[p]
	if !ok || !scheduling.IsDRAError(err) || !strings.Contains(err.Error(), "IGNORE_DRA_REQUESTS") {
		t.Fatalf("solver: %v", err)
	}
}
