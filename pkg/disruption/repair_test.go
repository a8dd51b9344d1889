package disruption_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/disruption"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

func dur(d time.Duration) *time.Duration { return &d }

// testRepairPolicies: Ready=False (the fallback) and Ready=Unknown after 30
// minutes without a drain bound; GPU faults whose reason names XID79 after 10
// minutes at priority 50, with a 5-minute drain bound; KernelReady=False
// after 30 minutes with a 10-minute bound; RebootRequired=True asks for a reboot.
func testRepairPolicies() []cloudprovider.RepairPolicy {
	return []cloudprovider.RepairPolicy{
		{ConditionType: corev1.NodeReady, ConditionStatus: corev1.ConditionFalse, TolerationDuration: 30 * time.Minute, Action: cloudprovider.ReplaceNode},
		{ConditionType: corev1.NodeReady, ConditionStatus: corev1.ConditionUnknown, ReasonRegex: ".*", TolerationDuration: 30 * time.Minute},
		{ConditionType: "AcceleratedHardwareReady", ConditionStatus: corev1.ConditionFalse, ReasonRegex: ".*XID79.*", TolerationDuration: 10 * time.Minute,
			TerminationGracePeriod: dur(5 * time.Minute), Priority: 50},
		{ConditionType: "KernelReady", ConditionStatus: corev1.ConditionFalse, ReasonRegex: ".*", TolerationDuration: 30 * time.Minute,
			TerminationGracePeriod: dur(10 * time.Minute)},
		{ConditionType: "RebootRequired", ConditionStatus: corev1.ConditionTrue, ReasonRegex: ".*", TolerationDuration: time.Minute,
			Action: cloudprovider.RebootNode},
	}
}

// condition sets (or adds) a Node condition that last changed `ago` before now.
func condition(t corev1.NodeConditionType, s corev1.ConditionStatus, reason string, ago time.Duration) nodeOpt {
	return func(n *disruption.Node) {
		c := corev1.NodeCondition{Type: t, Status: s, Reason: reason, LastTransitionTime: metav1.NewTime(now.Add(-ago))}
		for i := range n.Node.Status.Conditions {
			if n.Node.Status.Conditions[i].Type == t {
				n.Node.Status.Conditions[i] = c
				return
			}
		}
		n.Node.Status.Conditions = append(n.Node.Status.Conditions, c)
	}
}

func notReadyFor(ago time.Duration) nodeOpt {
	return condition(corev1.NodeReady, corev1.ConditionFalse, "KubeletNotReady", ago)
}

// repairWorld: NodePool "a" that never consolidates (so only repair can
// decide), with `healthy` healthy m nodes h0..hN holding 1 cpu each, and the
// repair policies with the NodeRepair gate on.
func repairWorld(t *testing.T, healthy int, opts ...poolOpt) *world {
	w := newWorld(t)
	w.pool("a", standardTypes(), append([]poolOpt{never}, opts...)...)
	for i := 0; i < healthy; i++ {
		n := w.node(fmt.Sprintf("h%d", i), "a", "m")
		w.pod(n, fmt.Sprintf("hp%d", i), "1")
	}
	w.in.RepairPolicies = testRepairPolicies()
	w.in.Options.NodeRepair = true
	return w
}

func repairDecision(t *testing.T, r *disruption.Result, want string) *disruption.Decision {
	t.Helper()
	d := r.Decision
	if d == nil || d.Method != disruption.MethodRepair || d.Method.Reason() != v1.DisruptionReasonUnhealthy || len(d.Candidates) != 1 || d.Candidates[0].Name != want {
		t.Fatalf("want repair of %s, got\n%s", want, describe(r))
	}
	if d.Repair == nil {
		t.Fatalf("repair decision without its repair details:\n%s", describe(r))
	}
	return d
}

func noRepair(t *testing.T, r *disruption.Result) {
	t.Helper()
	if r.Decision != nil {
		t.Fatalf("want no decision, got\n%s", describe(r))
	}
}

func wantExplanation(t *testing.T, r *disruption.Result, node string, code disruption.Code, contains string) {
	t.Helper()
	e := explanation(r, node)
	if e == nil || e.Method != disruption.MethodRepair || e.Code != code || !strings.Contains(e.Message, contains) {
		t.Fatalf("want %s explained by repair with %s (%q), got\n%s", node, code, contains, describe(r))
	}
}

func TestRepairReplacesNodeUnhealthyPastToleration(t *testing.T) {
	w := repairWorld(t, 4)
	bad := w.node("bad", "a", "m", notReadyFor(31*time.Minute))
	w.pod(bad, "p", "1")
	r := w.run()
	d := repairDecision(t, r, "bad")
	if d.Repair.Condition != corev1.NodeReady || d.Repair.Status != corev1.ConditionFalse || d.Repair.Reason != "KubeletNotReady" || d.Repair.TerminationGracePeriod != nil {
		t.Fatalf("repair details %+v", d.Repair)
	}
	if !strings.Contains(d.Explanation, "Ready=False") {
		t.Fatalf("explanation %q does not name the condition", d.Explanation)
	}
	if r.Eligible[v1.DisruptionReasonUnhealthy] != 1 {
		t.Fatalf("eligible %v", r.Eligible)
	}
}

func TestRepairOffWithoutGate(t *testing.T) {
	w := repairWorld(t, 4)
	w.node("bad", "a", "m", notReadyFor(31*time.Minute))
	w.in.Options.NodeRepair = false
	r := w.run()
	noRepair(t, r)
	// Nor is an Unhealthy budget reported.
	for _, b := range r.Budgets {
		if b.Reason == v1.DisruptionReasonUnhealthy {
			t.Fatalf("Unhealthy budget reported without the gate: %+v", b)
		}
	}
}

func TestRepairWaitsForToleration(t *testing.T) {
	w := repairWorld(t, 4)
	w.node("bad", "a", "m", notReadyFor(29*time.Minute))
	noRepair(t, w.run())
	// Counted from the Node's creation when the condition is older.
	w = repairWorld(t, 4)
	w.node("young", "a", "m", notReadyFor(2*time.Hour), func(n *disruption.Node) {
		n.Node.CreationTimestamp = metav1.NewTime(now.Add(-10 * time.Minute))
	})
	noRepair(t, w.run())
}

func TestRepairVetoedByDoNotRepair(t *testing.T) {
	w := repairWorld(t, 4)
	w.node("bad", "a", "m", notReadyFor(time.Hour), annotated(v1.DoNotRepairAnnotationKey, "true"))
	r := w.run()
	noRepair(t, r)
	wantExplanation(t, r, "bad", disruption.CodeDoNotRepair, v1.DoNotRepairAnnotationKey)
}

func TestRepairIgnoresNodeDoNotDisrupt(t *testing.T) {
	w := repairWorld(t, 4)
	w.node("bad", "a", "m", notReadyFor(time.Hour), annotated(v1.DoNotDisruptAnnotationKey, "true"),
		claimAnnotated(v1.DoNotDisruptAnnotationKey, "true"))
	repairDecision(t, w.run(), "bad")
}

func TestRepairStopsWhenMoreThanTwentyPercentUnhealthy(t *testing.T) {
	// 2 of 5 unhealthy: more than ceil(20% of 5) = 1. The second one counts
	// though its toleration has not elapsed.
	w := repairWorld(t, 3)
	w.node("bad", "a", "m", notReadyFor(time.Hour))
	w.node("bad2", "a", "m", condition("KernelReady", corev1.ConditionFalse, "", time.Minute))
	r := w.run()
	noRepair(t, r)
	wantExplanation(t, r, "bad", disruption.CodeNodeRepairBlocked, "2 of its 5 nodes are unhealthy, more than 20%")
	// 2 of 10 is not more than 20%: repair goes ahead.
	w = repairWorld(t, 8)
	w.node("bad", "a", "m", notReadyFor(time.Hour))
	w.node("bad2", "a", "m", condition("KernelReady", corev1.ConditionFalse, "", time.Minute))
	repairDecision(t, w.run(), "bad")
}

func TestRepairBudget(t *testing.T) {
	// An Unhealthy budget of 0 holds it.
	w := repairWorld(t, 4, budgetsOf(nodes("0", v1.DisruptionReasonUnhealthy)))
	w.node("bad", "a", "m", notReadyFor(time.Hour))
	r := w.run()
	noRepair(t, r)
	wantExplanation(t, r, "bad", disruption.CodeBudget, "Unhealthy")
	// Budgets of other reasons do not.
	w = repairWorld(t, 4, budgetsOf(nodes("0", v1.DisruptionReasonDrifted, v1.DisruptionReasonEmpty, v1.DisruptionReasonUnderutilized)))
	w.node("bad", "a", "m", notReadyFor(time.Hour))
	repairDecision(t, w.run(), "bad")
	// A NotReady node does not consume the Unhealthy budget it needs.
	w = repairWorld(t, 4, budgetsOf(nodes("1")))
	w.node("bad", "a", "m", notReadyFor(time.Hour))
	r = w.run()
	repairDecision(t, r, "bad")
	for _, b := range r.Budgets {
		if b.Reason == v1.DisruptionReasonUnhealthy && (b.Disrupting != 0 || b.Allowed != 1) {
			t.Fatalf("Unhealthy budget %+v", b)
		}
		if b.Reason == v1.DisruptionReasonDrifted && b.Disrupting != 1 {
			t.Fatalf("Drifted budget %+v: a NotReady node consumes it", b)
		}
	}
	// A node that never initialized needs no budget.
	w = repairWorld(t, 4, budgetsOf(nodes("0", v1.DisruptionReasonUnhealthy)))
	registered := func(n *disruption.Node) { n.Node.Labels[v1.NodeRegisteredLabelKey] = "true" }
	w.node("bad", "a", "m", notReadyFor(time.Hour), uninitialized, registered)
	repairDecision(t, w.run(), "bad")
	// Until it registers, it is left to the registration timeout.
	w = repairWorld(t, 4, budgetsOf(nodes("0", v1.DisruptionReasonUnhealthy)))
	w.node("bad", "a", "m", notReadyFor(time.Hour), uninitialized)
	r = w.run()
	noRepair(t, r)
	wantExplanation(t, r, "bad", disruption.CodeNotInitialized, "has not registered")
}

func TestRepairBlockingPods(t *testing.T) {
	// Ready=False sets no drain bound: a PDB that allows nothing holds the node.
	w := repairWorld(t, 4)
	bad := w.node("bad", "a", "m", notReadyFor(time.Hour))
	w.pod(bad, "guarded", "1", labeled("app", "g"))
	w.pdb("g", 0, map[string]string{"app": "g"})
	r := w.run()
	noRepair(t, r)
	wantExplanation(t, r, "bad", disruption.CodePodDisruptionBudget, "termination grace period")
	// The NodeClaim's terminationGracePeriod bounds the drain: it goes ahead.
	w = repairWorld(t, 4)
	bad = w.node("bad", "a", "m", notReadyFor(time.Hour), tgp(time.Hour))
	w.pod(bad, "guarded", "1", labeled("app", "g"), podAnnotated(v1.DoNotDisruptAnnotationKey, "true"))
	w.pdb("g", 0, map[string]string{"app": "g"})
	repairDecision(t, w.run(), "bad")
	// So does the policy's: the lesser of the policy's and the NodeClaim's applies.
	w = repairWorld(t, 4)
	bad = w.node("bad", "a", "m", condition("KernelReady", corev1.ConditionFalse, "", time.Hour), tgp(time.Hour))
	w.pod(bad, "guarded", "1", labeled("app", "g"))
	w.pdb("g", 0, map[string]string{"app": "g"})
	d := repairDecision(t, w.run(), "bad")
	if d.Repair.TerminationGracePeriod == nil || *d.Repair.TerminationGracePeriod != 10*time.Minute {
		t.Fatalf("drain bound %v, want 10m", d.Repair.TerminationGracePeriod)
	}
	w = repairWorld(t, 4)
	w.node("bad", "a", "m", condition("KernelReady", corev1.ConditionFalse, "", time.Hour), tgp(time.Minute))
	if d := repairDecision(t, w.run(), "bad"); *d.Repair.TerminationGracePeriod != time.Minute {
		t.Fatalf("drain bound %v, want 1m", *d.Repair.TerminationGracePeriod)
	}
}

func TestRepairReasonPoliciesAndOrder(t *testing.T) {
	// The XID79 policy tolerates 10 minutes at priority 50; another GPU fault
	// falls to the fallback (30 minutes).
	w := repairWorld(t, 8)
	w.node("xid", "a", "m", condition("AcceleratedHardwareReady", corev1.ConditionFalse, "NvidiaXID79Error", 15*time.Minute))
	w.node("other", "a", "m", condition("AcceleratedHardwareReady", corev1.ConditionFalse, "NvidiaXID13Error", 15*time.Minute))
	r := w.run()
	d := repairDecision(t, r, "xid")
	if *d.Repair.TerminationGracePeriod != 5*time.Minute {
		t.Fatalf("drain bound %v", *d.Repair.TerminationGracePeriod)
	}
	if r.Eligible[v1.DisruptionReasonUnhealthy] != 1 {
		t.Fatalf("the fallback's toleration has not elapsed for other: eligible %v", r.Eligible)
	}
	// Higher priority first, though eligible later.
	w = repairWorld(t, 8)
	w.node("old", "a", "m", notReadyFor(50*time.Minute))
	w.node("xid", "a", "m", condition("AcceleratedHardwareReady", corev1.ConditionFalse, "XID79", 11*time.Minute))
	repairDecision(t, w.run(), "xid")
	// Equal priority: the one eligible longest first.
	w = repairWorld(t, 8)
	w.node("a-recent", "a", "m", notReadyFor(40*time.Minute))
	w.node("b-old", "a", "m", notReadyFor(90*time.Minute))
	repairDecision(t, w.run(), "b-old")
}

// rebootingNode marks the node's NodeClaim as rebooting (Rebooting=True),
// uninitialized as an issued reboot leaves it.
func rebootingNode(n *disruption.Node) {
	n.NodeClaim.StatusConditions().SetTrueWithReason(v1.ConditionTypeRebooting, v1.RebootReasonIssued, "rebooting")
	n.NodeClaim.StatusConditions().SetUnknown(v1.ConditionTypeInitialized, v1.RebootReasonRebooting, "node is rebooting")
	n.Initialized = false
}

// rebootEnded marks the node's last reboot as ended `ago` before now.
func rebootEnded(ago time.Duration) nodeOpt {
	return func(n *disruption.Node) {
		n.NodeClaim.StatusConditions().SetFalse(v1.ConditionTypeRebooting, v1.RebootReasonSucceeded, "rebooted")
		for i := range n.NodeClaim.Status.Conditions {
			if n.NodeClaim.Status.Conditions[i].Type == v1.ConditionTypeRebooting {
				n.NodeClaim.Status.Conditions[i].LastTransitionTime = metav1.NewTime(now.Add(-ago))
			}
		}
	}
}

func TestRepairRebootsInPlace(t *testing.T) {
	// The pod fits nowhere else: a reboot moves nothing, so it does not matter.
	w := repairWorld(t, 4)
	bad := w.node("bad", "a", "m", condition("RebootRequired", corev1.ConditionTrue, "Stuck", time.Hour))
	w.pod(bad, "big", "3")
	r := w.run()
	d := repairDecision(t, r, "bad")
	if !d.Reboot || d.Action() != disruption.ActionReboot || len(d.Replacements) != 0 {
		t.Fatalf("want a reboot without replacements, got\n%s", describe(r))
	}
	if d.Repair.Action != cloudprovider.RebootNode || d.Repair.Escalated || d.Repair.Condition != "RebootRequired" || d.Repair.Reason != "Stuck" {
		t.Fatalf("repair details %+v", d.Repair)
	}
	if !strings.Contains(d.Explanation, "rebooting it in place") || !strings.Contains(d.Explanation, "RebootRequired=True") {
		t.Fatalf("explanation %q", d.Explanation)
	}
	// The drain before it is described: unbounded here, bounded by the
	// NodeClaim's terminationGracePeriod when it has one.
	if !strings.Contains(d.Explanation, "after draining it") {
		t.Fatalf("explanation %q does not describe the drain", d.Explanation)
	}
	w = repairWorld(t, 4)
	w.node("bad", "a", "m", condition("RebootRequired", corev1.ConditionTrue, "", time.Hour), tgp(3*time.Minute))
	if d := repairDecision(t, w.run(), "bad"); !strings.Contains(d.Explanation, "for at most 3m0s") {
		t.Fatalf("explanation %q", d.Explanation)
	}
	// The reboot takes the Unhealthy budget like a replacement.
	w = repairWorld(t, 4, budgetsOf(nodes("0", v1.DisruptionReasonUnhealthy)))
	w.node("bad", "a", "m", condition("RebootRequired", corev1.ConditionTrue, "", time.Hour))
	r = w.run()
	noRepair(t, r)
	wantExplanation(t, r, "bad", disruption.CodeBudget, "Unhealthy")
}

func TestRepairRebootEscalatesToReplacement(t *testing.T) {
	// Rebooted once recently: rebooted again.
	w := repairWorld(t, 4)
	bad := w.node("bad", "a", "m", condition("RebootRequired", corev1.ConditionTrue, "", time.Hour))
	w.in.RecentReboots = map[types.UID]int{bad.NodeClaim.UID: disruption.RebootsBeforeReplacement - 1}
	if d := repairDecision(t, w.run(), "bad"); !d.Reboot {
		t.Fatalf("want a reboot after one recent reboot, got %s", d.Action())
	}
	// Rebooted twice: replaced.
	w = repairWorld(t, 4)
	bad = w.node("bad", "a", "m", condition("RebootRequired", corev1.ConditionTrue, "", time.Hour))
	w.pod(bad, "p", "1")
	w.in.RecentReboots = map[types.UID]int{bad.NodeClaim.UID: disruption.RebootsBeforeReplacement}
	r := w.run()
	d := repairDecision(t, r, "bad")
	if d.Reboot || d.Action() != disruption.ActionDelete || d.Repair.Action != cloudprovider.ReplaceNode || !d.Repair.Escalated {
		t.Fatalf("want an escalated replacement, got %s %+v\n%s", d.Action(), d.Repair, describe(r))
	}
	if !strings.Contains(d.Explanation, "rebooted 2 times in the last 24h0m0s") {
		t.Fatalf("explanation %q does not say why it is not rebooted", d.Explanation)
	}
}

func TestRepairLeavesRebootingNodeAlone(t *testing.T) {
	// A rebooting node is nobody's candidate, whatever its conditions.
	w := repairWorld(t, 4)
	w.node("bad", "a", "m", condition("RebootRequired", corev1.ConditionTrue, "", time.Hour), notReadyFor(time.Hour), rebootingNode)
	r := w.run()
	noRepair(t, r)
	if e := explanation(r, "bad"); e != nil {
		t.Fatalf("a rebooting node is not explained as blocked: %+v", e)
	}
	// It consumes every budget while it reboots, though uninitialized.
	w = repairWorld(t, 4, budgetsOf(nodes("1")))
	w.node("rebooting", "a", "m", rebootingNode)
	w.node("bad", "a", "m", notReadyFor(time.Hour))
	r = w.run()
	noRepair(t, r)
	wantExplanation(t, r, "bad", disruption.CodeBudget, "Unhealthy")
	for _, b := range r.Budgets {
		if b.Disrupting < 1 {
			t.Fatalf("budget %+v does not count the rebooting node", b)
		}
	}
}

func TestRepairTolerationCountsFromRebootEnd(t *testing.T) {
	// The fault has held for an hour, but the node came back from a reboot
	// 30s ago: the 1-minute toleration starts again.
	w := repairWorld(t, 4)
	w.node("bad", "a", "m", condition("RebootRequired", corev1.ConditionTrue, "", time.Hour), rebootEnded(30*time.Second))
	r := w.run()
	noRepair(t, r)
	if r.Eligible[v1.DisruptionReasonUnhealthy] != 0 {
		t.Fatalf("eligible %v", r.Eligible)
	}
	w = repairWorld(t, 4)
	w.node("bad", "a", "m", condition("RebootRequired", corev1.ConditionTrue, "", time.Hour), rebootEnded(2*time.Minute))
	repairDecision(t, w.run(), "bad")
}

func TestRepairStaticPoolTerminateFirst(t *testing.T) {
	static := func(w *world, limit string) {
		w.pool("s", standardTypes(), never, static(2, limit))
		w.in.StaticClaims = map[string]*scheduling.NewClaim{"s": {Price: 0.17}}
		w.pod(w.node("bad", "s", "m", notReadyFor(time.Hour)), "web", "1")
		w.node("ok", "s", "m")
	}
	// Below its limit: a node of the pool is launched first.
	w := repairWorld(t, 8)
	static(w, "")
	d := repairDecision(t, w.run(), "bad")
	if d.Action() != disruption.ActionReplace || len(d.Replacements) != 1 || d.Replacements[0].Price != 0.17 {
		t.Fatalf("want the static pool's claim launched first, got %s %+v", d.Action(), d.Replacements)
	}
	// At its limit without TerminateFirstRepair: it waits, explained.
	w = repairWorld(t, 8)
	static(w, "2")
	r := w.run()
	noRepair(t, r)
	wantExplanation(t, r, "bad", disruption.CodeUnschedulable, "static nodepool s is at its node limit (limits.nodes 2) and cannot stage a replacement")
	// With it: deleted first, the pool refilled after.
	w = repairWorld(t, 8)
	static(w, "2")
	w.in.Options.TerminateFirstRepair = true
	r = w.run()
	d = repairDecision(t, r, "bad")
	if d.Action() != disruption.ActionTerminateFirst || d.TerminateFirstReason != disruption.TerminateFirstStaticAtLimit || len(d.Replacements) != 0 {
		t.Fatalf("want a terminate-first delete, got\n%s", describe(r))
	}
	if !strings.Contains(d.Explanation, "TerminateFirstRepair") {
		t.Fatalf("explanation %q", d.Explanation)
	}
	// TerminateFirstDrift is not the repair gate.
	w = repairWorld(t, 8)
	static(w, "2")
	w.in.Options.TerminateFirstDrift = true
	noRepair(t, w.run())
}

func TestRepairUnschedulable(t *testing.T) {
	// No room and no NodePool that can launch for the pod.
	w := repairWorld(t, 4)
	bad := w.node("bad", "a", "m", notReadyFor(time.Hour))
	w.pod(bad, "big", "100")
	r := w.run()
	noRepair(t, r)
	wantExplanation(t, r, "bad", disruption.CodeUnschedulable, "cannot be rescheduled")
}

func TestValidateRepairPolicies(t *testing.T) {
	if err := disruption.ValidateRepairPolicies(testRepairPolicies()); err != nil {
		t.Fatalf("valid set: %v", err)
	}
	for name, mutate := range map[string]func([]cloudprovider.RepairPolicy) []cloudprovider.RepairPolicy{
		"empty": func([]cloudprovider.RepairPolicy) []cloudprovider.RepairPolicy { return nil },
		"no fallback": func(ps []cloudprovider.RepairPolicy) []cloudprovider.RepairPolicy {
			ps[0].ReasonRegex = ".*"
			return ps
		},
		"two fallbacks": func(ps []cloudprovider.RepairPolicy) []cloudprovider.RepairPolicy {
			ps[1].ReasonRegex = ""
			return ps
		},
		"bad regex": func(ps []cloudprovider.RepairPolicy) []cloudprovider.RepairPolicy { ps[2].ReasonRegex = "("; return ps },
		"bad status": func(ps []cloudprovider.RepairPolicy) []cloudprovider.RepairPolicy {
			ps[2].ConditionStatus = "Maybe"
			return ps
		},
		"bad priority": func(ps []cloudprovider.RepairPolicy) []cloudprovider.RepairPolicy { ps[2].Priority = 101; return ps },
		"negative": func(ps []cloudprovider.RepairPolicy) []cloudprovider.RepairPolicy {
			ps[2].TolerationDuration = -1
			return ps
		},
		"fallback reboots": func(ps []cloudprovider.RepairPolicy) []cloudprovider.RepairPolicy {
			ps[0].Action = cloudprovider.RebootNode
			return ps
		},
	} {
		if err := disruption.ValidateRepairPolicies(mutate(testRepairPolicies())); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestRepairNominated(t *testing.T) {
	nominated := func(n *disruption.Node) { n.Nominated = true }
	w := repairWorld(t, 4)
	w.node("bad", "a", "m", notReadyFor(time.Hour), nominated)
	r := w.run()
	noRepair(t, r)
	wantExplanation(t, r, "bad", disruption.CodeNominated, "nominated")
	// A registered node that never initialized is repaired though nominated.
	w = repairWorld(t, 4)
	w.node("bad", "a", "m", notReadyFor(time.Hour), nominated, uninitialized, func(n *disruption.Node) { n.Node.Labels[v1.NodeRegisteredLabelKey] = "true" })
	repairDecision(t, w.run(), "bad")
}
