package disruption_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/disruption"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
	"github.com/karpenter-go/karpenter/pkg/test/fixtures"
)

// expect describes what a case must produce. Empty fields are not checked.
type expect struct {
	method     disruption.Method
	reason     v1.DisruptionReason
	action     disruption.Action
	candidates []string
	none       bool // no decision
	// explained maps node -> substring of its explanation; code optional.
	explained map[string]string
	code      map[string]disruption.Code
	// unexplained nodes must have no explanation.
	unexplained []string
	check       func(t *testing.T, r *disruption.Result)
}

func (e expect) verify(t *testing.T, r *disruption.Result) {
	t.Helper()
	d := r.Decision
	if e.none && d != nil {
		t.Fatalf("want no decision, got:\n%s", describe(r))
	}
	if !e.none && (e.method != nil || e.action != "" || e.candidates != nil) {
		if d == nil {
			t.Fatalf("want a decision, got:\n%s", describe(r))
		}
		if e.method != nil && d.Method != e.method {
			t.Fatalf("method %s, want %s:\n%s", d.Method, e.method, describe(r))
		}
		if e.reason != "" && d.Method.Reason() != e.reason {
			t.Fatalf("reason %s, want %s:\n%s", d.Method.Reason(), e.reason, describe(r))
		}
		if e.action != "" && d.Action() != e.action {
			t.Fatalf("action %s, want %s:\n%s", d.Action(), e.action, describe(r))
		}
		if e.candidates != nil && !reflect.DeepEqual(d.CandidateNames(), e.candidates) {
			t.Fatalf("candidates %v, want %v:\n%s", d.CandidateNames(), e.candidates, describe(r))
		}
	}
	for n, sub := range e.explained {
		x := explanation(r, n)
		if x == nil || !strings.Contains(x.Message, sub) {
			t.Fatalf("node %s: want explanation containing %q, got:\n%s", n, sub, describe(r))
		}
	}
	for n, code := range e.code {
		if x := explanation(r, n); x == nil || x.Code != code {
			t.Fatalf("node %s: want code %s, got:\n%s", n, code, describe(r))
		}
	}
	for _, n := range e.unexplained {
		if x := explanation(r, n); x != nil {
			t.Fatalf("node %s: want no explanation, got %q", n, x.Message)
		}
	}
	if e.check != nil {
		e.check(t, r)
	}
}

type tcase struct {
	name  string
	build func(w *world)
	want  expect
}

func runCases(t *testing.T, cases []tcase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t)
			c.build(w)
			c.want.verify(t, w.run())
		})
	}
}

func TestEmptiness(t *testing.T) {
	runCases(t, []tcase{
		{"empty consolidatable node is deleted", func(w *world) {
			w.pool("default", standardTypes())
			w.node("a", "default", "m")
		}, expect{method: disruption.MethodEmptiness, reason: v1.DisruptionReasonEmpty, action: "delete", candidates: []string{"a"}}},

		{"daemonset, mirror, finished and terminating pods do not count", func(w *world) {
			w.pool("default", standardTypes())
			a := w.node("a", "default", "m")
			w.pod(a, "ds", "100m", daemonSetPod)
			w.pod(a, "static", "100m", mirrorPod)
			w.pod(a, "done", "100m", phase(corev1.PodSucceeded))
			w.pod(a, "failed", "100m", phase(corev1.PodFailed))
		}, expect{method: disruption.MethodEmptiness, candidates: []string{"a"}}},

		{"a node with a workload pod is not empty", func(w *world) {
			w.pool("default", standardTypes(), onDemandOnly)
			a := w.node("a", "default", "s")
			w.pod(a, "web", "1")
			b := w.node("b", "default", "s", notConsolidatable)
			w.pod(b, "web2", "1500m")
		}, expect{none: true, explained: map[string]string{"a": "no cheaper replacement"}}},

		{"empty but not Consolidatable yet is left alone, silently", func(w *world) {
			w.pool("default", standardTypes())
			w.node("a", "default", "m", notConsolidatable)
		}, expect{none: true, unexplained: []string{"a"}}},

		{"WhenEmpty pools still lose empty nodes", func(w *world) {
			w.pool("default", standardTypes(), whenEmpty)
			w.node("a", "default", "m")
		}, expect{method: disruption.MethodEmptiness, candidates: []string{"a"}}},

		{"every empty node the budget allows goes in one command", func(w *world) {
			w.pool("default", standardTypes(), budgetsOf(nodes("2")))
			w.node("a", "default", "m")
			w.node("b", "default", "m")
			w.node("c", "default", "m")
		}, expect{method: disruption.MethodEmptiness, candidates: []string{"a", "b"}}},

		{"budgets are per NodePool", func(w *world) {
			w.pool("one", standardTypes(), budgetsOf(nodes("1")))
			w.pool("two", standardTypes(), budgetsOf(nodes("1")))
			w.node("a1", "one", "m")
			w.node("a2", "one", "m")
			w.node("b1", "two", "m")
		}, expect{method: disruption.MethodEmptiness, candidates: []string{"a1", "b1"}}},

		{"a zero Empty budget blocks and says so", func(w *world) {
			w.pool("default", standardTypes(), budgetsOf(nodes("0", v1.DisruptionReasonEmpty), nodes("100%")))
			w.node("a", "default", "m")
		}, expect{none: true, explained: map[string]string{"a": "nodepool default: budget allows 0 Empty disruptions"}, code: map[string]disruption.Code{"a": disruption.CodeBudget}}},
	})
}

func TestNeverDisrupt(t *testing.T) {
	runCases(t, []tcase{
		{"node annotated do-not-disrupt", func(w *world) {
			w.pool("default", standardTypes())
			w.node("a", "default", "m", annotated(v1.DoNotDisruptAnnotationKey, "true"))
		}, expect{none: true, explained: map[string]string{"a": "node a has karpenter.sh/do-not-disrupt"}, code: map[string]disruption.Code{"a": disruption.CodeDoNotDisrupt}}},

		{"nodeclaim annotated do-not-disrupt", func(w *world) {
			w.pool("default", standardTypes())
			w.node("a", "default", "m", claimAnnotated(v1.DoNotDisruptAnnotationKey, "true"))
		}, expect{none: true, explained: map[string]string{"a": "nodeclaim a has karpenter.sh/do-not-disrupt"}}},

		{"pod annotated do-not-disrupt", func(w *world) {
			w.pool("default", standardTypes())
			a := w.node("a", "default", "l")
			w.pod(a, "x", "100m", podAnnotated(v1.DoNotDisruptAnnotationKey, "true"))
		}, expect{none: true, explained: map[string]string{"a": "pod default/x has karpenter.sh/do-not-disrupt"}, code: map[string]disruption.Code{"a": disruption.CodeDoNotDisrupt}}},

		{"daemonset pod annotated do-not-disrupt blocks an empty node too", func(w *world) {
			w.pool("default", standardTypes())
			a := w.node("a", "default", "l")
			w.pod(a, "agent", "100m", daemonSetPod, podAnnotated(v1.DoNotDisruptAnnotationKey, "true"))
		}, expect{none: true, explained: map[string]string{"a": "pod default/agent has karpenter.sh/do-not-disrupt"}}},

		{"do-not-disrupt duration still running", func(w *world) {
			w.pool("default", standardTypes())
			a := w.node("a", "default", "l")
			w.pod(a, "x", "100m", podAnnotated(v1.DoNotDisruptAnnotationKey, "2h"), started(time.Hour))
		}, expect{none: true, explained: map[string]string{"a": "pod default/x has karpenter.sh/do-not-disrupt=2h (until 11:30 UTC)"}}},

		{"do-not-disrupt duration elapsed", func(w *world) {
			w.pool("default", standardTypes())
			a := w.node("a", "default", "l")
			w.pod(a, "x", "100m", podAnnotated(v1.DoNotDisruptAnnotationKey, "2h"), started(3*time.Hour))
		}, expect{method: disruption.MethodSingleNodeConsolidation, action: "replace", candidates: []string{"a"}}},

		{"do-not-disrupt with a value that is neither true nor a positive duration is ignored", func(w *world) {
			w.pool("default", standardTypes())
			a := w.node("a", "default", "l")
			w.pod(a, "x", "100m", podAnnotated(v1.DoNotDisruptAnnotationKey, "yes"))
			w.pod(a, "y", "100m", podAnnotated(v1.DoNotDisruptAnnotationKey, "-1h"), started(time.Hour))
		}, expect{method: disruption.MethodSingleNodeConsolidation, action: "replace", candidates: []string{"a"}}},

		{"do-not-disrupt duration on a pod not started yet blocks", func(w *world) {
			w.pool("default", standardTypes())
			a := w.node("a", "default", "l")
			w.pod(a, "x", "100m", podAnnotated(v1.DoNotDisruptAnnotationKey, "1m"))
		}, expect{none: true, explained: map[string]string{"a": "pod default/x has karpenter.sh/do-not-disrupt=1m and has not started"}}},

		{"PDB allowing no disruption", func(w *world) {
			w.pool("default", standardTypes())
			a := w.node("a", "default", "l")
			w.pod(a, "web-7c9", "100m", labeled("app", "web"))
			w.pdb("web", 0, map[string]string{"app": "web"})
		}, expect{none: true, explained: map[string]string{"a": "PDB default/web blocks eviction of web-7c9"}, code: map[string]disruption.Code{"a": disruption.CodePodDisruptionBudget}}},

		{"PDB allowing a disruption does not block", func(w *world) {
			w.pool("default", standardTypes())
			a := w.node("a", "default", "l")
			w.pod(a, "web-7c9", "100m", labeled("app", "web"))
			w.pdb("web", 1, map[string]string{"app": "web"})
		}, expect{method: disruption.MethodSingleNodeConsolidation, candidates: []string{"a"}}},

		{"PDB of another app does not block", func(w *world) {
			w.pool("default", standardTypes())
			a := w.node("a", "default", "l")
			w.pod(a, "web-7c9", "100m", labeled("app", "web"))
			w.pdb("db", 0, map[string]string{"app": "db"})
		}, expect{method: disruption.MethodSingleNodeConsolidation, candidates: []string{"a"}}},

		{"pod selected by two PDBs cannot be evicted", func(w *world) {
			w.pool("default", standardTypes())
			a := w.node("a", "default", "l")
			w.pod(a, "web-7c9", "100m", labeled("app", "web"), labeled("tier", "front"))
			w.pdb("web", 1, map[string]string{"app": "web"})
			w.pdb("front", 1, map[string]string{"tier": "front"})
		}, expect{none: true, explained: map[string]string{"a": "more than one PDB (default/front, default/web)"}}},

		{"pending pod is evicted without the PDB", func(w *world) {
			w.pool("default", standardTypes())
			a := w.node("a", "default", "l")
			w.pod(a, "web-7c9", "100m", labeled("app", "web"), phase(corev1.PodPending))
			w.pdb("web", 0, map[string]string{"app": "web"})
		}, expect{method: disruption.MethodSingleNodeConsolidation, candidates: []string{"a"}}},

		{"not initialized", func(w *world) {
			w.pool("default", standardTypes())
			w.node("a", "default", "m", uninitialized)
		}, expect{none: true, explained: map[string]string{"a": "node a is not initialized yet"}, code: map[string]disruption.Code{"a": disruption.CodeNotInitialized}}},

		{"nominated for pending pods", func(w *world) {
			w.pool("default", standardTypes())
			w.node("a", "default", "m", func(n *disruption.Node) { n.Nominated = true })
		}, expect{none: true, explained: map[string]string{"a": "node a is nominated for pending pods"}}},

		{"already disrupting or deleting: left alone without a word", func(w *world) {
			w.pool("default", standardTypes())
			w.node("a", "default", "m", func(n *disruption.Node) { n.MarkedForDeletion = true })
			w.node("b", "default", "m", func(n *disruption.Node) { n.Deleting = true })
		}, expect{none: true, unexplained: []string{"a", "b"}}},

		{"nodepool gone", func(w *world) {
			w.pool("default", standardTypes())
			w.node("a", "default", "m")
			w.in.Nodes[0].NodePool = "gone"
		}, expect{none: true, explained: map[string]string{"a": "nodepool gone of node a not found"}}},

		{"unmanaged nodes are never candidates", func(w *world) {
			w.pool("default", standardTypes())
			w.node("a", "default", "m", func(n *disruption.Node) { n.NodeClaim = nil; n.NodePool = "" })
		}, expect{none: true, unexplained: []string{"a"}}},
	})
}

func TestDrift(t *testing.T) {
	runCases(t, []tcase{
		{"drifted node whose pods fit elsewhere is deleted", func(w *world) {
			w.pool("default", standardTypes())
			a := w.node("a", "default", "m", notConsolidatable, drifted(now.Add(-time.Hour)))
			w.pod(a, "web", "1")
			w.node("b", "default", "m", notConsolidatable)
		}, expect{method: disruption.MethodDrift, reason: v1.DisruptionReasonDrifted, action: "delete", candidates: []string{"a"}}},

		{"drifted node whose pods need room is replaced", func(w *world) {
			w.pool("default", standardTypes())
			a := w.node("a", "default", "m", notConsolidatable, drifted(now.Add(-time.Hour)))
			w.pod(a, "web", "3")
		}, expect{method: disruption.MethodDrift, action: "replace", candidates: []string{"a"}, check: func(t *testing.T, r *disruption.Result) {
			if n := len(r.Decision.Replacements); n != 1 {
				t.Fatalf("want 1 replacement, got %d", n)
			}
			if !strings.Contains(r.Decision.Explanation, "node a drifted (NodePoolDrifted): replacing it with 1 node of nodepool default (m") {
				t.Fatalf("explanation %q", r.Decision.Explanation)
			}
		}}},

		{"drift may need several replacements", func(w *world) {
			w.pool("default", []*scheduling.InstanceType{itype("s", 2, 8, 0.17, 0), itype("l", 8, 32, 0.68, 0)}, onDemandOnly)
			a := w.node("a", "default", "l", notConsolidatable, drifted(now.Add(-time.Hour)))
			for _, n := range []string{"p1", "p2", "p3"} {
				w.pod(a, n, "1500m", fixtures.WithNodeSelector(map[string]string{corev1.LabelInstanceTypeStable: "s"}))
			}
		}, expect{method: disruption.MethodDrift, action: "replace", check: func(t *testing.T, r *disruption.Result) {
			if n := len(r.Decision.Replacements); n != 3 {
				t.Fatalf("want 3 replacements, got %d:\n%s", n, describe(r))
			}
		}}},

		{"the node drifted longest goes first", func(w *world) {
			w.pool("default", standardTypes())
			for _, x := range []struct {
				name string
				ago  time.Duration
			}{{"new", time.Minute}, {"old", time.Hour}, {"mid", 10 * time.Minute}} {
				n := w.node(x.name, "default", "m", notConsolidatable, drifted(now.Add(-x.ago)))
				w.pod(n, "p-"+x.name, "1")
			}
		}, expect{method: disruption.MethodDrift, candidates: []string{"old"}}},

		{"empty drifted nodes go before older non-empty ones", func(w *world) {
			w.pool("default", standardTypes())
			old := w.node("old", "default", "m", notConsolidatable, drifted(now.Add(-time.Hour)))
			w.pod(old, "p", "1")
			w.node("empty", "default", "m", notConsolidatable, drifted(now.Add(-time.Minute)))
		}, expect{method: disruption.MethodDrift, action: "delete", candidates: []string{"empty"}}},

		{"a Drifted budget of 0 blocks drift only", func(w *world) {
			w.pool("default", standardTypes(), budgetsOf(nodes("0", v1.DisruptionReasonDrifted), nodes("100%")))
			a := w.node("a", "default", "m", notConsolidatable, drifted(now.Add(-time.Hour)))
			w.pod(a, "web", "1")
			b := w.node("b", "default", "m", notConsolidatable)
			w.pod(b, "db", "1")
		}, expect{none: true, explained: map[string]string{"a": "nodepool default: budget allows 0 Drifted disruptions"}}},

		{"budget with a schedule: blocked until the window closes", func(w *world) {
			w.pool("default", standardTypes(), budgetsOf(scheduled("0", "0 1 * * *", 10*time.Hour, v1.DisruptionReasonDrifted), nodes("100%")))
			a := w.node("a", "default", "m", notConsolidatable, drifted(now.Add(-time.Hour)))
			w.pod(a, "web", "1")
		}, expect{none: true, explained: map[string]string{"a": "nodepool default: budget allows 0 Drifted disruptions until 11:00 UTC"}}},

		{"budget with a schedule: outside the window drift goes ahead", func(w *world) {
			w.pool("default", standardTypes(), budgetsOf(scheduled("0", "0 1 * * *", 9*time.Hour, v1.DisruptionReasonDrifted), nodes("100%")))
			a := w.node("a", "default", "m", notConsolidatable, drifted(now.Add(-time.Hour)))
			w.pod(a, "web", "1")
		}, expect{method: disruption.MethodDrift, candidates: []string{"a"}}},

		{"pods that cannot be rescheduled keep the drifted node and say why", func(w *world) {
			w.pool("default", standardTypes())
			a := w.node("a", "default", "m", notConsolidatable, drifted(now.Add(-time.Hour)))
			w.pod(a, "gpu", "1", fixtures.WithNodeSelector(map[string]string{"example.com/gpu": "true"}))
		}, expect{none: true, code: map[string]disruption.Code{"a": disruption.CodeUnschedulable}, explained: map[string]string{"a": "node a drifted (NodePoolDrifted) but its pods cannot be rescheduled: pod default/gpu"}}},

		{"terminationGracePeriod lets drift past a PDB", func(w *world) {
			w.pool("default", standardTypes())
			a := w.node("a", "default", "m", notConsolidatable, drifted(now.Add(-time.Hour)), tgp(time.Hour))
			w.pod(a, "web-1", "1", labeled("app", "web"))
			w.pdb("web", 0, map[string]string{"app": "web"})
		}, expect{method: disruption.MethodDrift, candidates: []string{"a"}}},

		{"without terminationGracePeriod the PDB holds the drifted node", func(w *world) {
			w.pool("default", standardTypes())
			a := w.node("a", "default", "m", notConsolidatable, drifted(now.Add(-time.Hour)))
			w.pod(a, "web-1", "1", labeled("app", "web"))
			w.pdb("web", 0, map[string]string{"app": "web"})
		}, expect{none: true, explained: map[string]string{"a": "PDB default/web blocks eviction of web-1"}}},

		{"a static pool's drifted node is replaced by a node of the pool first", func(w *world) {
			w.pool("default", standardTypes(), static(2, ""))
			w.in.StaticClaims = map[string]*scheduling.NewClaim{"default": {Price: 0.17}}
			w.node("a", "default", "m", drifted(now.Add(-time.Hour)))
			w.node("b", "default", "m")
		}, expect{method: disruption.MethodDrift, action: "replace", candidates: []string{"a"}, check: func(t *testing.T, r *disruption.Result) {
			if len(r.Decision.Replacements) != 1 || r.Decision.Replacements[0].Price != 0.17 {
				t.Fatalf("replacements %+v, want the static pool's claim", r.Decision.Replacements)
			}
			if !strings.Contains(r.Decision.Explanation, "replacing it with a node of static nodepool default") {
				t.Fatalf("explanation %q", r.Decision.Explanation)
			}
		}}},

		{"a static pool at its node limit waits without TerminateFirstDrift", func(w *world) {
			w.pool("default", standardTypes(), static(2, "2"))
			w.in.StaticClaims = map[string]*scheduling.NewClaim{"default": {Price: 0.17}}
			w.pod(w.node("a", "default", "m", drifted(now.Add(-time.Hour))), "web", "1")
			w.node("b", "default", "m")
		}, expect{none: true, code: map[string]disruption.Code{"a": disruption.CodeUnschedulable}, explained: map[string]string{"a": "static nodepool default is at its node limit (limits.nodes 2) and cannot stage a replacement"}}},

		{"a static pool at its node limit deletes first with TerminateFirstDrift", func(w *world) {
			w.in.Options.TerminateFirstDrift = true
			w.pool("default", standardTypes(), static(2, "2"))
			w.in.StaticClaims = map[string]*scheduling.NewClaim{"default": {Price: 0.17}}
			w.node("a", "default", "m", drifted(now.Add(-time.Hour)))
			w.node("b", "default", "m")
		}, expect{method: disruption.MethodDrift, action: disruption.ActionTerminateFirst, candidates: []string{"a"}, check: func(t *testing.T, r *disruption.Result) {
			if len(r.Decision.Replacements) != 0 || r.Decision.TerminateFirstReason != disruption.TerminateFirstStaticAtLimit {
				t.Fatalf("decision %+v, want a delete-first for static-at-limit", r.Decision)
			}
		}}},

		{"a static pool scaling down replaces nothing", func(w *world) {
			w.pool("default", standardTypes(), static(1, ""))
			w.in.StaticClaims = map[string]*scheduling.NewClaim{"default": {Price: 0.17}}
			w.pod(w.node("a", "default", "m", drifted(now.Add(-time.Hour))), "web", "1")
			w.node("b", "default", "m")
		}, expect{none: true, explained: map[string]string{"a": "static nodepool default is scaling down to 1 replicas first"}}},

		{"terminationGracePeriod does not override a do-not-disrupt node", func(w *world) {
			w.pool("default", standardTypes())
			w.node("a", "default", "m", notConsolidatable, drifted(now.Add(-time.Hour)), tgp(time.Hour), annotated(v1.DoNotDisruptAnnotationKey, "true"))
		}, expect{none: true, code: map[string]disruption.Code{"a": disruption.CodeDoNotDisrupt}}},
	})
}

func TestSingleNodeConsolidation(t *testing.T) {
	runCases(t, []tcase{
		{"pods fit on another node: delete", func(w *world) {
			w.pool("default", standardTypes())
			a := w.node("a", "default", "m")
			w.pod(a, "web", "1")
			b := w.node("b", "default", "m", notConsolidatable)
			w.pod(b, "db", "1")
		}, expect{method: disruption.MethodSingleNodeConsolidation, reason: v1.DisruptionReasonUnderutilized, action: "delete", candidates: []string{"a"}}},

		{"replace with one cheaper node", func(w *world) {
			w.pool("default", standardTypes(), onDemandOnly)
			a := w.node("a", "default", "l")
			w.pod(a, "web", "1")
		}, expect{method: disruption.MethodSingleNodeConsolidation, action: "replace", candidates: []string{"a"}, check: func(t *testing.T, r *disruption.Result) {
			d := r.Decision
			c := d.Replacements[0]
			if c.InstanceTypes[0].Name != "s" || c.Price != 0.17 {
				t.Fatalf("want cheapest s at 0.17, got:\n%s", describe(r))
			}
			for _, it := range c.InstanceTypes {
				if it.Name == "l" {
					t.Fatalf("replacement may not be the candidate's own type or pricier:\n%s", describe(r))
				}
			}
			if d.ReplacementsPrice >= d.CandidatesPrice {
				t.Fatalf("replacement %.2f not cheaper than %.2f", d.ReplacementsPrice, d.CandidatesPrice)
			}
			if !strings.Contains(d.Explanation, "replacing node a (0.68/h) with a cheaper node of nodepool default (s or 1 other type(s), from 0.17/h)") {
				t.Fatalf("explanation %q", d.Explanation)
			}
		}}},

		{"no cheaper type holds the pods (packer answer)", func(w *world) {
			w.pool("default", standardTypes(), onDemandOnly)
			a := w.node("a", "default", "m")
			w.pod(a, "web", "3500m")
		}, expect{none: true, code: map[string]disruption.Code{"a": disruption.CodeUnconsolidatable}, explained: map[string]string{"a": "no cheaper replacement: cheapest compatible costs 0.34/h vs 0.34/h"}}},

		{"no cheaper type holds the pods with today's daemonsets (solver answer)", func(w *world) {
			unavailable := itype("x", 3, 12, 0.17, 0)
			unavailable.Offerings[0].Available = false
			w.pool("default", []*scheduling.InstanceType{itype("s", 2, 8, 0.15, 0), unavailable, itype("m", 4, 16, 0.19, 0)}, onDemandOnly)
			a := w.node("a", "default", "x")
			w.pod(a, "web", "1500m")
			w.in.Scheduling.DaemonSetPods = []*corev1.Pod{podOf("kube-system", "agent", "500m")}
		}, expect{none: true, explained: map[string]string{"a": "no cheaper replacement: cheapest compatible costs 0.19/h vs 0.17/h"}}},

		{"the pool's policy keeps non-empty nodes", func(w *world) {
			w.pool("default", standardTypes(), whenEmpty)
			a := w.node("a", "default", "l")
			w.pod(a, "web", "1")
		}, expect{none: true, code: map[string]disruption.Code{"a": disruption.CodeConsolidationDisabled}, explained: map[string]string{"a": "only consolidates empty nodes (consolidationPolicy: WhenEmpty)"}}},

		// Balanced: pool cost 0.68/h, disruption 1+3; replacing l by m saves
		// half the cost for all the disruption: score 0.50, at the threshold.
		{"a Balanced pool takes a move scoring at its threshold", func(w *world) {
			w.pool("default", standardTypes(), balanced, onDemandOnly)
			a := w.node("a", "default", "l")
			for i := range 3 {
				w.pod(a, fmt.Sprintf("web-%d", i), "1")
			}
		}, expect{method: disruption.MethodSingleNodeConsolidation, action: disruption.ActionReplace, candidates: []string{"a"}, check: func(t *testing.T, r *disruption.Result) {
			d := r.Decision
			if len(d.Scores) != 1 || !d.Scores[0].Scored || d.Scores[0].NodePool != "default" || d.Scores[0].Value() != 0.5 {
				t.Fatalf("scores %+v, want default's scored 0.5", d.Scores)
			}
			if !strings.Contains(d.Explanation, "nodepool default (Balanced): score 0.50 >= threshold 0.50 (k: 2, savings 50.0%, disruption 100.0%)") {
				t.Fatalf("explanation %q does not give the score", d.Explanation)
			}
			if len(r.Moves) != 1 || !r.Moves[0].Approved {
				t.Fatalf("moves %+v, want the one approved", r.Moves)
			}
		}}},

		// With a second, full node in the pool (cost 1.36/h, disruption 4+2)
		// the same replacement scores (0.34/1.36)/(4/6) = 0.375: refused, the
		// score in the explanation. WhenEmptyOrUnderutilized takes it.
		{"a Balanced pool refuses a move scoring below its threshold", func(w *world) {
			w.pool("default", standardTypes(), balanced, onDemandOnly)
			a := w.node("a", "default", "l")
			for i := range 3 {
				w.pod(a, fmt.Sprintf("web-%d", i), "1")
			}
			w.pod(w.node("b", "default", "l"), "db", "7500m")
		}, expect{none: true, code: map[string]disruption.Code{"a": disruption.CodeUnconsolidatable},
			explained: map[string]string{"a": "nodepool default has consolidationPolicy Balanced and this replace scores too low: score 0.38 < threshold 0.50 (k: 2, savings 25.0%, disruption 66.7%)"},
			check: func(t *testing.T, r *disruption.Result) {
				refused := 0
				for _, m := range r.Moves {
					if !m.Approved {
						refused++
					}
				}
				if refused == 0 {
					t.Fatalf("moves %+v, want the refused move recorded", r.Moves)
				}
			}}},
		{"the same move under WhenEmptyOrUnderutilized", func(w *world) {
			w.pool("default", standardTypes(), onDemandOnly)
			a := w.node("a", "default", "l")
			for i := range 3 {
				w.pod(a, fmt.Sprintf("web-%d", i), "1")
			}
			w.pod(w.node("b", "default", "l"), "db", "7500m")
		}, expect{method: disruption.MethodSingleNodeConsolidation, action: disruption.ActionReplace, candidates: []string{"a"}}},

		// A node whose deletion alone would score too low is not simulated:
		// (0.34/1.70)/(6/10) = 0.33 (pool: a m with 5 pods, b l full).
		{"a Balanced pool skips a node even deleting it cannot justify", func(w *world) {
			w.pool("default", standardTypes(), balanced, onDemandOnly)
			a := w.node("a", "default", "m")
			for i := range 5 {
				w.pod(a, fmt.Sprintf("web-%d", i), "100m")
			}
			w.pod(w.node("b", "default", "l"), "db", "7500m")
			w.pod(w.node("c", "default", "l"), "db2", "7500m")
		}, expect{none: true, explained: map[string]string{"a": "even deleting the node scores too low: score 0.33 < threshold 0.50"}}},

		{"a Balanced pool still removes empty nodes", func(w *world) {
			w.pool("default", standardTypes(), balanced)
			w.node("a", "default", "l")
		}, expect{method: disruption.MethodEmptiness, candidates: []string{"a"}}},

		{"a static pool's empty node stays", func(w *world) {
			w.pool("default", standardTypes(), fixtures.NodePoolFunc(func(np *v1.NodePool) { np.Spec.Replicas = ptr.To[int64](1) }))
			w.node("a", "default", "l")
		}, expect{none: true, code: map[string]disruption.Code{"a": disruption.CodeConsolidationDisabled}, explained: map[string]string{"a": "nodepool default is static: its node count is spec.replicas (1)"}}},

		{"a static pool's underused node is not consolidated", func(w *world) {
			w.pool("default", standardTypes(), fixtures.NodePoolFunc(func(np *v1.NodePool) { np.Spec.Replicas = ptr.To[int64](2) }))
			a := w.node("a", "default", "l")
			w.pod(a, "web", "100m")
		}, expect{none: true, code: map[string]disruption.Code{"a": disruption.CodeConsolidationDisabled}, explained: map[string]string{"a": "is static"}}},

		{"consolidateAfter Never", func(w *world) {
			w.pool("default", standardTypes(), never)
			a := w.node("a", "default", "l")
			w.pod(a, "web", "1")
		}, expect{none: true, explained: map[string]string{"a": "consolidation disabled (consolidateAfter: Never)"}}},

		{"an Underutilized budget of 0", func(w *world) {
			w.pool("default", standardTypes(), budgetsOf(nodes("0", v1.DisruptionReasonUnderutilized), nodes("100%")))
			a := w.node("a", "default", "l")
			w.pod(a, "web", "1")
		}, expect{none: true, explained: map[string]string{"a": "budget allows 0 Underutilized disruptions"}}},

		{"nothing cheaper holds a big pod", func(w *world) {
			w.pool("default", standardTypes(), onDemandOnly)
			a := w.node("a", "default", "l")
			w.pod(a, "huge", "7")
		}, expect{none: true, explained: map[string]string{"a": "no cheaper replacement"}}},

		{"pending pods compete for the room", func(w *world) {
			w.pool("default", standardTypes(), onDemandOnly)
			a := w.node("a", "default", "m")
			w.pod(a, "web", "2")
			b := w.node("b", "default", "m", notConsolidatable)
			w.pod(b, "db", "1500m")
			// b has 2.4 cpu free: web fits there, unless the pending pod takes it.
			w.pending("queued", "2")
		}, expect{none: true, explained: map[string]string{"a": "no cheaper replacement"}}},

		{"an unknown offering price cannot be compared", func(w *world) {
			w.pool("default", standardTypes())
			a := w.node("a", "default", "l")
			w.pod(a, "web", "1")
			a.Node.Labels[corev1.LabelTopologyZone] = "zone-z"
		}, expect{none: true, code: map[string]disruption.Code{"a": disruption.CodeUnpriced}}},
	})
}

func TestSpotConsolidation(t *testing.T) {
	many := func() []*scheduling.InstanceType {
		// big costs 1.0 spot; 20 smaller types each cheaper.
		its := []*scheduling.InstanceType{itype("big", 16, 64, 2.0, 1.0)}
		for i := 0; i < 20; i++ {
			its = append(its, itype("t"+string(rune('a'+i)), 4, 16, 0.5+float64(i)*0.01, 0.2+float64(i)*0.01))
		}
		return its
	}
	runCases(t, []tcase{
		{"on-demand to [spot, on-demand] launches spot only", func(w *world) {
			w.pool("default", standardTypes())
			a := w.node("a", "default", "l")
			w.pod(a, "web", "1")
		}, expect{method: disruption.MethodSingleNodeConsolidation, action: "replace", check: func(t *testing.T, r *disruption.Result) {
			ct, ok := r.Decision.Replacements[0].Requirements.Get(scheduling.LabelCapacityType)
			if !ok || !reflect.DeepEqual(ct.Values(), []string{"spot"}) {
				t.Fatalf("want capacity-type In [spot], got %v", r.Decision.Replacements[0].Requirements)
			}
		}}},

		{"spot to spot needs the feature gate", func(w *world) {
			w.pool("default", many())
			a := w.node("a", "default", "big", spot)
			w.pod(a, "web", "1")
		}, expect{none: true, explained: map[string]string{"a": "SpotToSpotConsolidation is disabled"}}},

		{"spot to spot with the gate keeps the cheapest 15", func(w *world) {
			w.in.Options.SpotToSpotConsolidation = true
			w.pool("default", many())
			a := w.node("a", "default", "big", spot)
			w.pod(a, "web", "1")
		}, expect{method: disruption.MethodSingleNodeConsolidation, action: "replace", check: func(t *testing.T, r *disruption.Result) {
			c := r.Decision.Replacements[0]
			if len(c.InstanceTypes) != 15 {
				t.Fatalf("want 15 types, got %d", len(c.InstanceTypes))
			}
			if c.InstanceTypes[0].Name != "ta" || c.InstanceTypes[14].Name != "to" {
				t.Fatalf("want the 15 cheapest, got:\n%s", describe(r))
			}
			ct, _ := c.Requirements.Get(scheduling.LabelCapacityType)
			if !reflect.DeepEqual(ct.Values(), []string{"spot"}) {
				t.Fatalf("want spot only, got %v", ct)
			}
			it, _ := c.Requirements.Get(scheduling.LabelInstanceType)
			if it.Len() != 15 {
				t.Fatalf("instance-type requirement has %d values", it.Len())
			}
		}}},

		{"spot to spot needs 15 cheaper types", func(w *world) {
			w.in.Options.SpotToSpotConsolidation = true
			w.pool("default", many()[:11])
			a := w.node("a", "default", "big", spot)
			w.pod(a, "web", "1")
		}, expect{none: true, explained: map[string]string{"a": "SpotToSpotConsolidation requires 15 cheaper instance types than the current node, got 10"}}},

		{"spot node deleted without the gate when its pods fit elsewhere", func(w *world) {
			w.pool("default", standardTypes())
			a := w.node("a", "default", "m", spot)
			w.pod(a, "web", "1")
			b := w.node("b", "default", "m", notConsolidatable)
			w.pod(b, "db", "1")
		}, expect{method: disruption.MethodSingleNodeConsolidation, action: "delete", candidates: []string{"a"}}},
	})
}

func TestMultiNodeConsolidation(t *testing.T) {
	runCases(t, []tcase{
		{"three nodes into one cheaper node", func(w *world) {
			w.pool("default", standardTypes(), onDemandOnly)
			for _, n := range []string{"a", "b", "c"} {
				x := w.node(n, "default", "m")
				w.pod(x, "p-"+n, "500m")
			}
		}, expect{method: disruption.MethodMultiNodeConsolidation, reason: v1.DisruptionReasonUnderutilized, action: "replace", check: func(t *testing.T, r *disruption.Result) {
			d := r.Decision
			if len(d.Candidates) != 3 || len(d.Replacements) != 1 {
				t.Fatalf("want 3 -> 1:\n%s", describe(r))
			}
			if d.ReplacementsPrice >= d.CandidatesPrice {
				t.Fatalf("replacement not cheaper:\n%s", describe(r))
			}
			for _, it := range d.Replacements[0].InstanceTypes {
				if it.Name == "m" || it.Name == "l" {
					t.Fatalf("replacement lists %s, same or pricier than the candidates:\n%s", it.Name, describe(r))
				}
			}
		}}},

		{"light nodes emptied onto a busy one", func(w *world) {
			w.pool("default", standardTypes(), onDemandOnly)
			busy := w.node("busy", "default", "l", notConsolidatable)
			w.pod(busy, "big", "4")
			for _, n := range []string{"a", "b", "c"} {
				x := w.node(n, "default", "s")
				w.pod(x, "p-"+n, "1")
			}
		}, expect{method: disruption.MethodMultiNodeConsolidation, action: "delete", candidates: []string{"a", "b", "c"}}},

		{"never replaced by one of the candidates' own types", func(w *world) {
			// m, m, s -> the cheapest holder would be s, the type of a candidate:
			// deleting the two m nodes would be better, and is what happens.
			w.pool("default", standardTypes(), onDemandOnly)
			for _, n := range []string{"m1", "m2"} {
				x := w.node(n, "default", "m")
				w.pod(x, "p-"+n, "300m")
			}
			s := w.node("s1", "default", "s")
			w.pod(s, "p-s1", "300m")
		}, expect{check: func(t *testing.T, r *disruption.Result) {
			d := r.Decision
			if d == nil {
				t.Fatalf("want a decision:\n%s", describe(r))
			}
			for _, c := range d.Replacements {
				for _, it := range c.InstanceTypes {
					if it.Name == "s" || it.Name == "m" || it.Name == "l" {
						t.Fatalf("replacement lists %s:\n%s", it.Name, describe(r))
					}
				}
			}
		}}},

		{"budget limits how many go together", func(w *world) {
			w.pool("default", standardTypes(), onDemandOnly, budgetsOf(nodes("2")))
			busy := w.node("busy", "default", "l", notConsolidatable)
			w.pod(busy, "big", "2")
			for _, n := range []string{"a", "b", "c"} {
				x := w.node(n, "default", "s")
				w.pod(x, "p-"+n, "1")
			}
		}, expect{method: disruption.MethodMultiNodeConsolidation, action: "delete", check: func(t *testing.T, r *disruption.Result) {
			if n := len(r.Decision.Candidates); n != 2 {
				t.Fatalf("want 2 candidates within the budget, got:\n%s", describe(r))
			}
		}}},
	})
}

func TestBudgetLimit(t *testing.T) {
	np := func(bs ...v1.Budget) *v1.NodePool {
		return &v1.NodePool{Spec: v1.NodePoolSpec{Disruption: v1.Disruption{Budgets: bs}}}
	}
	at := func(h, m int) time.Time { return time.Date(2026, 3, 4, h, m, 0, 0, time.UTC) } // a Wednesday
	for _, c := range []struct {
		name   string
		np     *v1.NodePool
		reason v1.DisruptionReason
		total  int
		now    time.Time
		want   int
		until  string
		err    bool
	}{
		{"count", np(nodes("3")), v1.DisruptionReasonDrifted, 10, now, 3, "", false},
		{"percentage rounds up", np(nodes("10%")), v1.DisruptionReasonDrifted, 11, now, 2, "", false},
		{"percentage of one node", np(nodes("10%")), v1.DisruptionReasonEmpty, 1, now, 1, "", false},
		{"percentage of none", np(nodes("10%")), v1.DisruptionReasonEmpty, 0, now, 0, "", false},
		{"50% of 3", np(nodes("50%")), v1.DisruptionReasonEmpty, 3, now, 2, "", false},
		{"no budgets: unlimited", np(), v1.DisruptionReasonEmpty, 3, now, -1, "", false},
		{"reason not listed: budget does not apply", np(nodes("0", v1.DisruptionReasonDrifted)), v1.DisruptionReasonEmpty, 5, now, -1, "", false},
		{"reason listed", np(nodes("0", v1.DisruptionReasonDrifted, v1.DisruptionReasonEmpty)), v1.DisruptionReasonEmpty, 5, now, 0, "", false},
		{"most restrictive wins", np(nodes("5"), nodes("20%"), nodes("3")), v1.DisruptionReasonUnderutilized, 100, now, 3, "", false},
		{"schedule active", np(nodes("10"), scheduled("0", "0 9 * * *", 8*time.Hour)), v1.DisruptionReasonDrifted, 10, at(10, 0), 0, "2026-03-04 17:00", false},
		{"schedule at its first minute", np(nodes("10"), scheduled("0", "0 9 * * *", 8*time.Hour)), v1.DisruptionReasonDrifted, 10, at(9, 0), 0, "2026-03-04 17:00", false},
		{"schedule window just closed", np(nodes("10"), scheduled("0", "0 9 * * *", 8*time.Hour)), v1.DisruptionReasonDrifted, 10, at(17, 0), 10, "", false},
		{"schedule before its window", np(nodes("10"), scheduled("0", "0 9 * * *", 8*time.Hour)), v1.DisruptionReasonDrifted, 10, at(8, 59), 10, "", false},
		{"window crossing midnight", np(scheduled("1", "0 22 * * *", 4*time.Hour)), v1.DisruptionReasonDrifted, 10, at(1, 30), 1, "2026-03-04 02:00", false},
		{"weekday schedule on a wednesday", np(scheduled("0", "0 0 * * mon-fri", 24*time.Hour)), v1.DisruptionReasonDrifted, 10, at(12, 0), 0, "2026-03-05 00:00", false},
		{"weekend schedule on a wednesday", np(scheduled("0", "0 0 * * sat,sun", 24*time.Hour)), v1.DisruptionReasonDrifted, 10, at(12, 0), -1, "", false},
		{"@daily", np(scheduled("2", "@daily", time.Hour)), v1.DisruptionReasonEmpty, 10, at(0, 59), 2, "2026-03-04 01:00", false},
		{"two zero windows: the later end", np(scheduled("0", "0 9 * * *", time.Hour), scheduled("0", "0 8 * * *", 4*time.Hour)), v1.DisruptionReasonEmpty, 10, at(9, 30), 0, "2026-03-04 12:00", false},
		{"zero forever wins over a window's end", np(nodes("0"), scheduled("0", "0 9 * * *", time.Hour)), v1.DisruptionReasonEmpty, 10, at(9, 30), 0, "", false},
		{"invalid schedule allows nothing", np(scheduled("10", "61 * * * *", time.Hour)), v1.DisruptionReasonEmpty, 10, now, 0, "", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, until, err := disruption.BudgetLimit(c.np, c.reason, c.total, c.now)
			if (err != nil) != c.err {
				t.Fatalf("err %v, want error %v", err, c.err)
			}
			if got != c.want {
				t.Fatalf("limit %d, want %d", got, c.want)
			}
			u := ""
			if !until.IsZero() {
				u = until.Format("2006-01-02 15:04")
			}
			if u != c.until {
				t.Fatalf("until %q, want %q", u, c.until)
			}
		})
	}
}

func TestBudgetsCountDisruptingNodes(t *testing.T) {
	w := newWorld(t)
	w.pool("default", standardTypes(), budgetsOf(nodes("3")))
	for _, n := range []string{"a", "b", "c", "d", "e", "f"} {
		x := w.node(n, "default", "m", notConsolidatable)
		w.pod(x, "p-"+n, "3")
	}
	w.in.Nodes[0].MarkedForDeletion = true
	w.in.Nodes[1].Deleting = true
	notReady(w.in.Nodes[2])
	w.node("empty", "default", "m")
	r := w.run()
	if r.Decision != nil {
		t.Fatalf("budget used up by disrupting nodes, got:\n%s", describe(r))
	}
	x := explanation(r, "empty")
	if x == nil || x.Message != "nodepool default: budget allows 3 Empty disruption(s) and 3 node(s) are already disrupting" {
		t.Fatalf("got:\n%s", describe(r))
	}
	for _, b := range r.Budgets {
		if b.NodePool == "default" && b.Reason == v1.DisruptionReasonEmpty && (b.Limit != 3 || b.Disrupting != 3 || b.Allowed != 0) {
			t.Fatalf("budget status %+v", b)
		}
	}
	// One fewer disrupting node frees one disruption.
	w.in.Nodes[0].MarkedForDeletion = false
	if r := w.run(); r.Decision == nil || !reflect.DeepEqual(r.Decision.CandidateNames(), []string{"empty"}) {
		t.Fatalf("want the empty node deleted, got:\n%s", describe(r))
	}
}

func TestBudgetWithSchedulePercentage(t *testing.T) {
	// 10 nodes; 30% (rounded up to 3) at any time, but none from 17:00 to 09:00.
	w := newWorld(t)
	w.pool("default", standardTypes(), budgetsOf(nodes("30%"), scheduled("0", "0 17 * * *", 16*time.Hour)))
	for i := 0; i < 10; i++ {
		w.node(string(rune('a'+i)), "default", "m")
	}
	w.in.Now = time.Date(2026, 3, 4, 20, 0, 0, 0, time.UTC)
	r := w.run()
	if r.Decision != nil || explanation(r, "a").Message != "nodepool default: budget allows 0 Empty disruptions until 2026-03-05 09:00 UTC" {
		t.Fatalf("inside the quiet window nothing goes, got:\n%s", describe(r))
	}
	w.in.Now = time.Date(2026, 3, 5, 10, 0, 0, 0, time.UTC)
	r = w.run()
	if r.Decision == nil || !reflect.DeepEqual(r.Decision.CandidateNames(), []string{"a", "b", "c"}) {
		t.Fatalf("want 30%% of 10 rounded up = 3 nodes, got:\n%s", describe(r))
	}
}

func TestDeterministic(t *testing.T) {
	build := func(reverse bool) *disruption.Result {
		w := newWorld(t)
		w.pool("a", standardTypes(), onDemandOnly)
		w.pool("b", standardTypes())
		for i := 0; i < 30; i++ {
			pool := "a"
			if i%3 == 0 {
				pool = "b"
			}
			n := w.node("n"+string(rune('A'+i)), pool, []string{"s", "m", "l"}[i%3])
			for j := 0; j < i%4; j++ {
				w.pod(n, "p"+string(rune('A'+i))+string(rune('0'+j)), []string{"300m", "700m", "1"}[j%3])
			}
		}
		if reverse {
			for i, j := 0, len(w.in.Nodes)-1; i < j; i, j = i+1, j-1 {
				w.in.Nodes[i], w.in.Nodes[j] = w.in.Nodes[j], w.in.Nodes[i]
			}
		}
		return w.run()
	}
	first := describe(build(false))
	for i := 0; i < 3; i++ {
		if again := describe(build(i%2 == 1)); again != first {
			t.Fatalf("results differ:\n%s\nvs\n%s", first, again)
		}
	}
}

func TestEligibleCounts(t *testing.T) {
	w := newWorld(t)
	w.pool("default", standardTypes(), budgetsOf(nodes("0")))
	w.node("e1", "default", "m")
	w.node("e2", "default", "m")
	x := w.node("u", "default", "l")
	w.pod(x, "p", "1")
	d := w.node("d", "default", "m", notConsolidatable, drifted(now))
	w.pod(d, "q", "1")
	r := w.run()
	want := map[v1.DisruptionReason]int{v1.DisruptionReasonEmpty: 2, v1.DisruptionReasonDrifted: 1, v1.DisruptionReasonUnderutilized: 1}
	if !reflect.DeepEqual(r.Eligible, want) {
		t.Fatalf("eligible %v, want %v", r.Eligible, want)
	}
}

func TestValidate(t *testing.T) {
	build := func() (*world, *disruption.Node, *scheduling.InstanceType) {
		w := newWorld(t)
		its := standardTypes()
		its[1].Offerings[0].Available = false // m cannot launch when the decision is taken
		w.pool("default", its, onDemandOnly)
		a := w.node("a", "default", "l")
		w.pod(a, "web", "1")
		return w, a, its[1]
	}
	w, a, m := build()
	r := w.run()
	if r.Decision == nil || r.Decision.Action() != "replace" || len(r.Decision.Replacements[0].InstanceTypes) != 1 {
		t.Fatalf("want a replacement by s only, got:\n%s", describe(r))
	}
	if ok, why := disruption.Validate(w.in, r.Decision); !ok {
		t.Fatalf("unchanged snapshot must validate: %s", why)
	}
	// A pod arrives and m became available: the replacement would now be m,
	// outside the decided types.
	m.Offerings[0].Available = true
	w.pod(a, "more", "1500m")
	if ok, why := disruption.Validate(w.in, r.Decision); ok || !strings.Contains(why, "instance type m, not among those decided") {
		t.Fatalf("want a failed validation naming m, got ok=%v %q", ok, why)
	}
	// A pod that only l can hold: no cheaper replacement any more.
	w, a, _ = build()
	r = w.run()
	w.pod(a, "huge", "6")
	if ok, why := disruption.Validate(w.in, r.Decision); ok || !strings.Contains(why, "no cheaper replacement") {
		t.Fatalf("ok=%v %q", ok, why)
	}

	w = newWorld(t)
	w.pool("default", standardTypes())
	e := w.node("e", "default", "m")
	r = w.run()
	if r.Decision == nil || r.Decision.Method != disruption.MethodEmptiness {
		t.Fatalf("got:\n%s", describe(r))
	}
	w.pod(e, "arrived", "100m")
	if ok, why := disruption.Validate(w.in, r.Decision); ok || !strings.Contains(why, "no longer a candidate for emptiness") {
		t.Fatalf("a node that got a pod is no longer empty: ok=%v %q", ok, why)
	}
	e.Existing.Pods = nil
	e.MarkedForDeletion = true
	if ok, why := disruption.Validate(w.in, r.Decision); ok || !strings.Contains(why, "already being disrupted") {
		t.Fatalf("ok=%v %q", ok, why)
	}
	e.MarkedForDeletion = false
	w.pools["default"].NodePool.Spec.Disruption.Budgets = []v1.Budget{nodes("0")}
	if ok, why := disruption.Validate(w.in, r.Decision); ok || !strings.Contains(why, "budget allows 0 Empty disruptions") {
		t.Fatalf("ok=%v %q", ok, why)
	}
}

// TestReplacementSolverAgreesWithFullCluster checks the narrowing argument of
// simulate.go: a decision taken on the packer's nodes is one the solver also
// takes with every node in view.
func TestReplacementSolverAgreesWithFullCluster(t *testing.T) {
	w := newWorld(t)
	w.pool("default", standardTypes(), onDemandOnly)
	for i := 0; i < 12; i++ {
		n := w.node("full-"+string(rune('a'+i)), "default", "m", notConsolidatable)
		w.pod(n, "f"+string(rune('a'+i)), "3")
	}
	roomy := w.node("roomy", "default", "l", notConsolidatable)
	w.pod(roomy, "r", "1")
	a := w.node("a", "default", "m")
	w.pod(a, "x", "2")
	w.pod(a, "y", "1")
	r := w.run()
	if r.Decision == nil || r.Decision.Action() != "delete" {
		t.Fatalf("got:\n%s", describe(r))
	}
	in := &scheduling.Input{Pods: a.Existing.Pods, NodePools: w.in.Scheduling.NodePools}
	for _, n := range w.in.Nodes {
		if n != a {
			in.ExistingNodes = append(in.ExistingNodes, n.Existing)
		}
	}
	full := scheduling.Solve(in)
	if len(full.NewClaims) != 0 || len(full.PodErrors) != 0 || len(full.ExistingNodes) != 1 || full.ExistingNodes[0].Node.Name != "roomy" {
		t.Fatalf("full solve disagrees: %+v", full)
	}
	if r.Simulations != 1 || r.SimulationWork > 5 {
		t.Fatalf("want one narrowed solve (1 node, 2 pods), got %d solves, work %d", r.Simulations, r.SimulationWork)
	}
}

func TestTopologySpreadSeesWholeCluster(t *testing.T) {
	// web spreads across hostnames with maxSkew 1: moving the candidate's web pod
	// onto the roomy node, which already runs one, would put 2 there while an
	// empty-of-web node keeps 0. Only a solve over every node sees that.
	w := newWorld(t)
	w.pool("default", standardTypes(), onDemandOnly)
	spread := fixtures.PodFunc(func(p *corev1.Pod) {
		p.Labels = map[string]string{"app": "web"}
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelHostname,
			WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: metav1LabelSelector("app", "web")}}
	})
	full := w.node("full", "default", "s", notConsolidatable)
	w.pod(full, "db", "1800m")
	roomy := w.node("roomy", "default", "l", notConsolidatable)
	w.pod(roomy, "web-1", "500m", spread)
	a := w.node("a", "default", "s")
	w.pod(a, "web-2", "500m", spread)
	r := w.run()
	if r.Decision != nil && r.Decision.Action() == "delete" {
		t.Fatalf("deleting a would break the spread constraint:\n%s", describe(r))
	}
}

func metav1LabelSelector(k, v string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{k: v}}
}

func TestZonalAntiAffinityOwnerElsewhereCounts(t *testing.T) {
	// An "owner" pod in zone-a (on a node the packer never uses: it is full)
	// repels app=web from the whole zone. The candidate's web pod fits on the
	// roomy node, also in zone-a, as far as resources go; only a solve that sees
	// the owner knows it may not go there.
	w := newWorld(t)
	w.pool("default", standardTypes(), onDemandOnly)
	// Named to sort last: the roomy node, of the same shape, represents it.
	owner := w.node("z-owner", "default", "l", notConsolidatable)
	w.pod(owner, "guard", "7800m", fixtures.WithPodAntiAffinity(corev1.PodAffinityTerm{
		TopologyKey: corev1.LabelTopologyZone, LabelSelector: metav1LabelSelector("app", "web")}))
	w.node("roomy", "default", "l", notConsolidatable)
	a := w.node("a", "default", "m")
	w.pod(a, "web-1", "500m", labeled("app", "web"))
	r := w.run()
	if r.Decision != nil {
		t.Fatalf("web may not move within zone-a, and no pool launches elsewhere:\n%s", describe(r))
	}
	if x := explanation(r, "a"); x == nil || !strings.Contains(x.Message, "cannot all be rescheduled") {
		t.Fatalf("got:\n%s", describe(r))
	}
}

func TestZoneSpreadCountsPodsOnNodesThePackerSkips(t *testing.T) {
	// web spreads over zones (maxSkew 1). zone-a already runs two web pods (on a
	// full node), zone-b none: the candidate's web pod, in zone-b, may not move
	// to the roomy zone-a node, though it fits there.
	w := newWorld(t)
	its := standardTypes()
	for _, it := range its {
		it.Offerings = append(it.Offerings, scheduling.Offering{Zone: "zone-b", CapacityType: scheduling.CapacityTypeOnDemand, Price: it.Offerings[0].Price, Available: true})
	}
	w.pool("default", its, onDemandOnly)
	spread := fixtures.PodFunc(func(p *corev1.Pod) {
		p.Labels = map[string]string{"app": "web"}
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone,
			WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: metav1LabelSelector("app", "web")}}
	})
	full := w.node("z-full", "default", "l", notConsolidatable)
	w.pod(full, "web-1", "3900m", spread)
	w.pod(full, "web-2", "3900m", spread)
	w.node("roomy", "default", "l", notConsolidatable)
	b := w.node("b", "default", "m")
	b.Node.Labels[corev1.LabelTopologyZone] = "zone-b"
	w.pod(b, "web-3", "500m", spread)
	b.Node.Labels[corev1.LabelTopologyZone] = "zone-b"
	r := w.run()
	if r.Decision != nil && r.Decision.Action() == "delete" {
		t.Fatalf("moving web-3 to zone-a would make the skew 3:\n%s", describe(r))
	}
}

func TestSimulationWorkIsBounded(t *testing.T) {
	w := newWorld(t)
	w.in.Options.MaxSimulationWork = 1
	w.pool("default", standardTypes())
	for _, n := range []string{"a", "b"} {
		x := w.node(n, "default", "m", notConsolidatable, drifted(now.Add(-time.Hour)))
		w.pod(x, "gpu-"+n, "1", fixtures.WithNodeSelector(map[string]string{"example.com/gpu": "true"}))
	}
	r := w.run()
	if r.Decision != nil || !reflect.DeepEqual(r.TimedOut, []disruption.Method{disruption.MethodDrift}) || r.Simulations != 1 {
		t.Fatalf("want drift to stop after one simulation, got %d simulations, timed out %v:\n%s", r.Simulations, r.TimedOut, describe(r))
	}
	if explanation(r, "a") == nil || explanation(r, "b") != nil {
		t.Fatalf("only the node evaluated is explained:\n%s", describe(r))
	}
}

// A multi-node delete whose candidates partly changed during the validation
// delay keeps the ones still valid (simulated afresh) where Validate abandons
// all of them; with fewer than two left, or for other methods, it answers as
// Validate does.
func TestValidateNarrowing(t *testing.T) {
	build := func() (*world, map[string]*disruption.Node, *disruption.Result) {
		w := newWorld(t)
		w.pool("default", standardTypes(), onDemandOnly)
		busy := w.node("busy", "default", "l", notConsolidatable)
		w.pod(busy, "big", "4")
		nodes := map[string]*disruption.Node{"busy": busy}
		for _, n := range []string{"a", "b", "c"} {
			nodes[n] = w.node(n, "default", "s")
			w.pod(nodes[n], "p-"+n, "1")
		}
		r := w.run()
		if r.Decision == nil || r.Decision.Method != disruption.MethodMultiNodeConsolidation || r.Decision.Action() != "delete" || len(r.Decision.Candidates) != 3 {
			t.Fatalf("want a multi-node delete of a, b, c, got:\n%s", describe(r))
		}
		return w, nodes, r
	}
	w, nodes, r := build()
	if d, ok, why := disruption.ValidateNarrowing(w.in, r.Decision); !ok || len(d.Candidates) != 3 {
		t.Fatalf("unchanged snapshot: ok=%v %q", ok, why)
	}
	// b had a pod event: no longer Consolidatable while the decision waited.
	notConsolidatable(nodes["b"])
	if ok, _ := disruption.Validate(w.in, r.Decision); ok {
		t.Fatal("Validate accepted a decision with a candidate that is no longer one")
	}
	d, ok, why := disruption.ValidateNarrowing(w.in, r.Decision)
	if !ok {
		t.Fatalf("narrowing refused: %s", why)
	}
	if got := d.CandidateNames(); strings.Join(got, ",") != "a,c" || d.Action() != "delete" || d.Method != disruption.MethodMultiNodeConsolidation {
		t.Fatalf("narrowed to %v (%s, %v), want a,c deleted by multi-node consolidation", got, d.Action(), d.Method)
	}
	// Only one left: nothing for a multi-node command to do.
	notConsolidatable(nodes["c"])
	if _, ok, why := disruption.ValidateNarrowing(w.in, r.Decision); ok || !strings.Contains(why, "2 of 3 candidates are no longer valid") {
		t.Fatalf("want a refusal naming 2 of 3, got ok=%v %q", ok, why)
	}
	// The remaining candidates are simulated afresh: once a and c's pods no
	// longer fit on busy (it filled up), the narrowed decision is refused too.
	w, nodes, r = build()
	notConsolidatable(nodes["b"])
	w.pod(nodes["busy"], "filler", "3500m")
	if _, ok, _ := disruption.ValidateNarrowing(w.in, r.Decision); ok {
		t.Fatal("narrowing accepted a delete whose pods no longer fit")
	}
}

// static makes the pool static (spec.replicas) and Ready, with limits.nodes
// when given.
func static(replicas int64, limitNodes string) poolOpt {
	return fixtures.NodePoolFunc(func(np *v1.NodePool) {
		np.Spec.Replicas = ptr.To(replicas)
		if limitNodes != "" {
			np.Spec.Limits = v1.Limits{v1.ResourceNodes: resource.MustParse(limitNodes)}
		}
		for _, c := range []string{v1.ConditionTypeValidationSucceeded, v1.ConditionTypeNodeClassReady, v1.ConditionTypeNodeRegistrationHealthy} {
			np.StatusConditions().SetTrue(c)
		}
	})
}
