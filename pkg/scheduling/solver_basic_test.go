package scheduling_test

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/karpenter-go/karpenter/pkg/scheduling"
	"github.com/karpenter-go/karpenter/pkg/test/fixtures"
)

func rl(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

func TestResources(t *testing.T) {
	gpuType := itype("gpu", "amd64", 8, 32, 20)
	gpuType.Capacity["nvidia.com/gpu"] = resource.MustParse("2")
	runAll(t, []scenario{
		{name: "single pod gets every fitting type cheapest first", pods: pods(1, "p", "1", "1Gi"),
			expect: []expectation{claims(1), types("p-0", "small", "arm-medium", "medium", "large"), totalPrice(0.14 * 0.7)}},
		{name: "small pods pack onto one claim", pods: pods(3, "p", "500m", "512Mi"),
			expect: []expectation{claims(1), together("p-0", "p-2")}},
		{name: "pod larger than every type is reported", pods: pods(1, "p", "32", "1Gi"),
			expect: []expectation{claims(0), podErr("p-0", "no instance type fits requests {cpu: 32, memory: 1Gi, pods: 1}")}},
		{name: "cpu narrows the types", pods: pods(1, "p", "3", "1Gi"),
			expect: []expectation{types("p-0", "arm-medium", "medium", "large")}},
		{name: "memory narrows the types", pods: pods(1, "p", "1", "20Gi"),
			expect: []expectation{types("p-0", "large")}},
		{name: "pods capacity (maxPods) narrows the types", pods: pods(11, "p", "10m", "10Mi"),
			expect: []expectation{claims(1), types("p-0", "arm-medium", "medium", "large")}},
		{name: "overflowing the largest type opens a second claim", pods: pods(5, "p", "7", "1Gi"),
			expect: []expectation{claims(3), allScheduled()}},
		{name: "extended resource selects the type that has it",
			pools:  []*scheduling.NodePool{pool("default", func(np *scheduling.NodePool) { np.InstanceTypes = append(np.InstanceTypes, gpuType) })},
			pods:   pods(1, "p", "1", "1Gi", fixtures.WithRequests("nvidia.com/gpu", "1")),
			expect: []expectation{types("p-0", "gpu")}},
		{name: "extended resource nobody has is reported", pods: pods(1, "p", "1", "1Gi", fixtures.WithRequests("example.com/fpga", "1")),
			expect: []expectation{podErr("p-0", "example.com/fpga: 1")}},
		{name: "instance type overhead reduces allocatable",
			pools: []*scheduling.NodePool{pool("default", func(np *scheduling.NodePool) {
				np.InstanceTypes = defaultTypes()
				np.InstanceTypes[0].Overhead = rl("cpu", "500m")
			})},
			pods:   pods(1, "p", "1600m", "1Gi"),
			expect: []expectation{types("p-0", "arm-medium", "medium", "large")}},
		{name: "larger pods are placed first", pods: append(pods(1, "small", "100m", "100Mi"), pods(1, "big", "3", "1Gi")...),
			expect: []expectation{claims(1), together("small-0", "big-0"), types("big-0", "arm-medium", "medium", "large")}},
	})
}

func TestNodeSelector(t *testing.T) {
	runAll(t, []scenario{
		{name: "zone selector pins the zone", pods: pods(1, "p", "1", "1Gi", withSelector(scheduling.LabelZone, "us-west-2b")),
			expect: []expectation{label("p-0", scheduling.LabelZone, "us-west-2b")}},
		{name: "arch selector picks arm", pods: pods(1, "p", "1", "1Gi", withSelector(scheduling.LabelArch, "arm64")),
			expect: []expectation{types("p-0", "arm-medium")}},
		{name: "unknown custom label is reported", pods: pods(1, "p", "1", "1Gi", withSelector("team", "red")),
			expect: []expectation{podErr("p-0", `incompatible with nodepool default: label "team" does not have known values`)}},
		{name: "custom label from nodepool labels", pools: []*scheduling.NodePool{pool("default", func(np *scheduling.NodePool) { np.Labels = map[string]string{"team": "red"} })},
			pods: pods(1, "p", "1", "1Gi", withSelector("team", "red")), expect: []expectation{label("p-0", "team", "red")}},
		{name: "custom label with another value is reported", pools: []*scheduling.NodePool{pool("default", func(np *scheduling.NodePool) { np.Labels = map[string]string{"team": "blue"} })},
			pods: pods(1, "p", "1", "1Gi", withSelector("team", "red")), expect: []expectation{podErr("p-0", "requires team In [red], but team allows In [blue]")}},
		{name: "instance type selector", pods: pods(1, "p", "1", "1Gi", withSelector(scheduling.LabelInstanceType, "medium")),
			expect: []expectation{types("p-0", "medium")}},
		{name: "nodepool selector", pools: []*scheduling.NodePool{pool("a"), pool("b")},
			pods: pods(1, "p", "1", "1Gi", withSelector(scheduling.LabelNodePool, "b")), expect: []expectation{claimPool("p-0", "b")}},
		{name: "zone without offerings is explained", pods: pods(1, "p", "1", "1Gi", withSelector(scheduling.LabelZone, "us-west-2z")),
			expect: []expectation{podErr("p-0", "incompatible with nodepool default: requires topology.kubernetes.io/zone In [us-west-2z], but offerings are only in [us-west-2a,us-west-2b,us-west-2c]")}},
		{name: "zone outside nodepool requirements is explained",
			pools: []*scheduling.NodePool{pool("default", func(np *scheduling.NodePool) {
				np.Requirements = scheduling.NewRequirements(req(scheduling.LabelZone, in, "us-west-2a"))
			})},
			pods:   pods(1, "p", "1", "1Gi", withSelector(scheduling.LabelZone, "us-west-2b")),
			expect: []expectation{podErr("p-0", "requires topology.kubernetes.io/zone In [us-west-2b], but topology.kubernetes.io/zone allows In [us-west-2a]")}},
		{name: "spot selector", pods: pods(1, "p", "1", "1Gi", withSelector(scheduling.LabelCapacityType, "spot")),
			expect: []expectation{label("p-0", scheduling.LabelCapacityType, "spot"), totalPrice(0.14 * 0.7)}},
		{name: "on-demand selector prices on-demand", pods: pods(1, "p", "1", "1Gi", withSelector(scheduling.LabelCapacityType, "on-demand")),
			expect: []expectation{label("p-0", scheduling.LabelCapacityType, "on-demand"), totalPrice(0.14)}},
		{name: "hostname selector cannot be met by a new node", pods: pods(1, "p", "1", "1Gi", withSelector(scheduling.LabelHostname, "node-x")),
			expect: []expectation{podErr("p-0", "which a new node cannot have")}},
		{name: "hostname selector matches an existing node", existing: []*scheduling.ExistingNode{node("node-x", "us-west-2a", "medium", 4, 16, 20)},
			pods: pods(1, "p", "1", "1Gi", withSelector(scheduling.LabelHostname, "node-x")), expect: []expectation{onNode("p-0", "node-x"), claims(0)}},
		{name: "pods with different zone selectors get different claims",
			pods:   append(pods(1, "a", "1", "1Gi", withSelector(scheduling.LabelZone, "us-west-2a")), pods(1, "b", "1", "1Gi", withSelector(scheduling.LabelZone, "us-west-2b"))...),
			expect: []expectation{claims(2), apart("a-0", "b-0")}},
		{name: "pods with compatible selectors share a claim",
			pods:   append(pods(1, "a", "1", "1Gi", withSelector(scheduling.LabelZone, "us-west-2a")), pods(1, "b", "1", "1Gi", withSelector(scheduling.LabelArch, "amd64"))...),
			expect: []expectation{claims(1), together("a-0", "b-0")}},
		{name: "os selector", pods: pods(1, "p", "1", "1Gi", withSelector(scheduling.LabelOS, "windows")),
			expect: []expectation{podErr("p-0", "requires kubernetes.io/os In [windows], but kubernetes.io/os allows In [linux]")}},
	})
}

func TestNodeAffinity(t *testing.T) {
	zoneIn := func(z ...string) corev1.NodeSelectorTerm { return nodeTerm(expr(scheduling.LabelZone, in, z...)) }
	runAll(t, []scenario{
		{name: "In with several zones keeps them open", pods: pods(1, "p", "1", "1Gi", fixtures.WithRequiredNodeAffinity(zoneIn("us-west-2a", "us-west-2b"))),
			expect: []expectation{labelIn("p-0", scheduling.LabelZone, "us-west-2a", "us-west-2b")}},
		{name: "NotIn zone excludes it", pods: pods(1, "p", "1", "1Gi", fixtures.WithRequiredNodeAffinity(nodeTerm(expr(scheduling.LabelZone, notIn, "us-west-2a")))),
			expect: []expectation{custom(func(t *testing.T, r *result) {
				rq, _ := r.claim["p-0"].Requirements.Get(scheduling.LabelZone)
				if rq.Has("us-west-2a") || !rq.Has("us-west-2b") {
					t.Fatalf("zone requirement %s", rq)
				}
			})}},
		{name: "second term used when first cannot be met", pods: pods(1, "p", "1", "1Gi", fixtures.WithRequiredNodeAffinity(
			nodeTerm(expr(scheduling.LabelArch, in, "s390x")), nodeTerm(expr(scheduling.LabelArch, in, "arm64")))),
			expect: []expectation{types("p-0", "arm-medium")}},
		{name: "first term preferred when both can be met", pods: pods(1, "p", "1", "1Gi", fixtures.WithRequiredNodeAffinity(zoneIn("us-west-2c"), zoneIn("us-west-2a"))),
			expect: []expectation{label("p-0", scheduling.LabelZone, "us-west-2c")}},
		{name: "no term can be met", pods: pods(1, "p", "1", "1Gi", fixtures.WithRequiredNodeAffinity(nodeTerm(expr(scheduling.LabelArch, in, "s390x")), nodeTerm(expr(scheduling.LabelOS, in, "plan9")))),
			expect: []expectation{podErr("p-0", "requires kubernetes.io/os In [plan9]")}},
		{name: "Gt on a numeric label", pods: pods(1, "p", "1", "1Gi", fixtures.WithRequiredNodeAffinity(nodeTerm(expr("example.com/cpu", gt, "4")))),
			expect: []expectation{types("p-0", "large")}},
		{name: "Lt on a numeric label", pods: pods(1, "p", "1", "1Gi", fixtures.WithRequiredNodeAffinity(nodeTerm(expr("example.com/cpu", lt, "4")))),
			expect: []expectation{types("p-0", "small")}},
		{name: "Gt and Lt together", pods: pods(1, "p", "1", "1Gi", fixtures.WithRequiredNodeAffinity(nodeTerm(expr("example.com/cpu", gt, "2"), expr("example.com/cpu", lt, "16")))),
			expect: []expectation{types("p-0", "arm-medium", "medium")}},
		{name: "Exists on a pool-defined custom key",
			pools: []*scheduling.NodePool{pool("default", func(np *scheduling.NodePool) { np.Labels = map[string]string{"team": "red"} })},
			pods:  pods(1, "p", "1", "1Gi", fixtures.WithRequiredNodeAffinity(nodeTerm(expr("team", exists)))), expect: []expectation{label("p-0", "team", "red")}},
		{name: "DoesNotExist on an undefined custom key", pods: pods(1, "p", "1", "1Gi", fixtures.WithRequiredNodeAffinity(nodeTerm(expr("gpu", dne)))),
			expect: []expectation{allScheduled()}},
		{name: "DoesNotExist on a defined key fails",
			pools: []*scheduling.NodePool{pool("default", func(np *scheduling.NodePool) { np.Labels = map[string]string{"gpu": "yes"} })},
			pods:  pods(1, "p", "1", "1Gi", fixtures.WithRequiredNodeAffinity(nodeTerm(expr("gpu", dne)))), expect: []expectation{podErr("p-0", "requires gpu DoesNotExist")}},
		{name: "preferred zone is honoured", pods: pods(1, "p", "1", "1Gi", fixtures.WithPreferredNodeAffinity(10, zoneIn("us-west-2c"))),
			expect: []expectation{label("p-0", scheduling.LabelZone, "us-west-2c")}},
		{name: "unsatisfiable preference is relaxed", pods: pods(1, "p", "1", "1Gi", fixtures.WithPreferredNodeAffinity(10, zoneIn("us-west-2z"))),
			expect: []expectation{allScheduled(), label("p-0", scheduling.LabelZone, "")}},
		{name: "heaviest preference wins", pods: pods(1, "p", "1", "1Gi", fixtures.WithPreferredNodeAffinity(1, zoneIn("us-west-2a")), fixtures.WithPreferredNodeAffinity(50, zoneIn("us-west-2b"))),
			expect: []expectation{label("p-0", scheduling.LabelZone, "us-west-2b")}},
		{name: "next preference after the heaviest is relaxed", pods: pods(1, "p", "1", "1Gi", fixtures.WithPreferredNodeAffinity(1, zoneIn("us-west-2a")), fixtures.WithPreferredNodeAffinity(50, zoneIn("us-west-2z"))),
			expect: []expectation{label("p-0", scheduling.LabelZone, "us-west-2a")}},
		{name: "Ignore preference policy drops preferred node affinity", opts: scheduling.Options{PreferencePolicy: scheduling.PreferencePolicyIgnore},
			pods: pods(1, "p", "1", "1Gi", fixtures.WithPreferredNodeAffinity(10, zoneIn("us-west-2c"))), expect: []expectation{label("p-0", scheduling.LabelZone, "")}},
		{name: "matchFields is rejected", pods: pods(1, "p", "1", "1Gi", fixtures.WithRequiredNodeAffinity(corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: in, Values: []string{"n"}}}})),
			expect: []expectation{podErr("p-0", "matchFields is not supported")}},
		{name: "selector and affinity combine", pods: pods(1, "p", "1", "1Gi", withSelector(scheduling.LabelArch, "amd64"), fixtures.WithRequiredNodeAffinity(nodeTerm(expr("example.com/cpu", gt, "2")))),
			expect: []expectation{types("p-0", "medium", "large")}},
	})
}

func TestTaints(t *testing.T) {
	tainted := func(effect corev1.TaintEffect) func(*scheduling.NodePool) {
		return func(np *scheduling.NodePool) {
			np.Taints = []corev1.Taint{{Key: "dedicated", Value: "gpu", Effect: effect}}
		}
	}
	runAll(t, []scenario{
		{name: "untolerated nodepool taint is reported", pools: []*scheduling.NodePool{pool("default", tainted(corev1.TaintEffectNoSchedule))},
			pods: pods(1, "p", "1", "1Gi"), expect: []expectation{podErr("p-0", "incompatible with nodepool default: did not tolerate taint dedicated=gpu:NoSchedule")}},
		{name: "tolerated nodepool taint", pools: []*scheduling.NodePool{pool("default", tainted(corev1.TaintEffectNoSchedule))},
			pods: pods(1, "p", "1", "1Gi", withToleration("dedicated", "gpu", corev1.TaintEffectNoSchedule)), expect: []expectation{allScheduled()}},
		{name: "Exists toleration", pools: []*scheduling.NodePool{pool("default", tainted(corev1.TaintEffectNoExecute))},
			pods: pods(1, "p", "1", "1Gi", withToleration("dedicated", "", "")), expect: []expectation{allScheduled()}},
		{name: "toleration for another effect does not help", pools: []*scheduling.NodePool{pool("default", tainted(corev1.TaintEffectNoExecute))},
			pods: pods(1, "p", "1", "1Gi", withToleration("dedicated", "gpu", corev1.TaintEffectNoSchedule)), expect: []expectation{podErr("p-0", "did not tolerate taint dedicated=gpu:NoExecute")}},
		{name: "startup taints are ignored", pools: []*scheduling.NodePool{pool("default", func(np *scheduling.NodePool) {
			np.StartupTaints = []corev1.Taint{{Key: "cni", Effect: corev1.TaintEffectNoSchedule}}
		})}, pods: pods(1, "p", "1", "1Gi"), expect: []expectation{allScheduled()}},
		{name: "PreferNoSchedule is tolerated after relaxation", pools: []*scheduling.NodePool{pool("default", tainted(corev1.TaintEffectPreferNoSchedule))},
			pods: pods(1, "p", "1", "1Gi"), expect: []expectation{allScheduled()}},
		{name: "PreferNoSchedule pool avoided while another fits",
			pools: []*scheduling.NodePool{pool("a-soft", tainted(corev1.TaintEffectPreferNoSchedule), func(np *scheduling.NodePool) { np.Weight = 10 }), pool("b-plain")},
			pods:  pods(1, "p", "1", "1Gi"), expect: []expectation{claimPool("p-0", "b-plain")}},
		{name: "tainted heavier pool skipped for untolerating pods",
			pools:  []*scheduling.NodePool{pool("gpu", tainted(corev1.TaintEffectNoSchedule), func(np *scheduling.NodePool) { np.Weight = 100 }), pool("general")},
			pods:   append(pods(1, "plain", "1", "1Gi"), pods(1, "tol", "2", "1Gi", withToleration("dedicated", "gpu", ""))...),
			expect: []expectation{claimPool("plain-0", "general"), claimPool("tol-0", "gpu")}},
		{name: "tainted existing node skipped",
			existing: []*scheduling.ExistingNode{node("n1", "us-west-2a", "medium", 4, 16, 20, func(n *scheduling.ExistingNode) {
				n.Taints = []corev1.Taint{{Key: "maintenance", Effect: corev1.TaintEffectNoSchedule}}
			})},
			pods: pods(1, "p", "1", "1Gi"), expect: []expectation{onNewClaim("p-0")}},
		{name: "tolerated existing node taint",
			existing: []*scheduling.ExistingNode{node("n1", "us-west-2a", "medium", 4, 16, 20, func(n *scheduling.ExistingNode) {
				n.Taints = []corev1.Taint{{Key: "maintenance", Effect: corev1.TaintEffectNoExecute}}
			})},
			pods: pods(1, "p", "1", "1Gi", withToleration("maintenance", "", corev1.TaintEffectNoExecute)), expect: []expectation{onNode("p-0", "n1")}},
		{name: "boot taints ignored on uninitialized nodes",
			existing: []*scheduling.ExistingNode{node("n1", "us-west-2a", "medium", 4, 16, 20, func(n *scheduling.ExistingNode) {
				n.Initialized = false
				n.Taints = []corev1.Taint{{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}, {Key: "karpenter.sh/unregistered", Effect: corev1.TaintEffectNoExecute}}
			})},
			pods: pods(1, "p", "1", "1Gi"), expect: []expectation{onNode("p-0", "n1")}},
		{name: "boot taints count on initialized nodes",
			existing: []*scheduling.ExistingNode{node("n1", "us-west-2a", "medium", 4, 16, 20, func(n *scheduling.ExistingNode) {
				n.Taints = []corev1.Taint{{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}}
			})},
			pods: pods(1, "p", "1", "1Gi"), expect: []expectation{onNewClaim("p-0")}},
		{name: "startup taints of an uninitialized node ignored",
			existing: []*scheduling.ExistingNode{node("n1", "us-west-2a", "medium", 4, 16, 20, func(n *scheduling.ExistingNode) {
				n.Initialized = false
				n.StartupTaints = []corev1.Taint{{Key: "cni", Effect: corev1.TaintEffectNoSchedule}}
			})},
			pods: pods(1, "p", "1", "1Gi"), expect: []expectation{onNode("p-0", "n1")}},
	})
}

func TestNodePoolsAndLimits(t *testing.T) {
	weight := func(w int32) func(*scheduling.NodePool) { return func(np *scheduling.NodePool) { np.Weight = w } }
	limits := func(kv ...string) func(*scheduling.NodePool) {
		return func(np *scheduling.NodePool) { np.Remaining = rl(kv...) }
	}
	runAll(t, []scenario{
		{name: "heavier pool first", pools: []*scheduling.NodePool{pool("light", weight(1)), pool("heavy", weight(50))},
			pods: pods(1, "p", "1", "1Gi"), expect: []expectation{claimPool("p-0", "heavy")}},
		{name: "equal weights ordered by name", pools: []*scheduling.NodePool{pool("b"), pool("a")},
			pods: pods(1, "p", "1", "1Gi"), expect: []expectation{claimPool("p-0", "a")}},
		{name: "incompatible heavier pool falls through", pools: []*scheduling.NodePool{
			pool("arm", weight(50), func(np *scheduling.NodePool) {
				np.Requirements = scheduling.NewRequirements(req(scheduling.LabelArch, in, "arm64"))
			}),
			pool("any", weight(1))},
			pods: pods(1, "p", "1", "1Gi", withSelector(scheduling.LabelArch, "amd64")), expect: []expectation{claimPool("p-0", "any")}},
		{name: "pool without instance types", pools: []*scheduling.NodePool{pool("empty", func(np *scheduling.NodePool) { np.InstanceTypes = nil })},
			pods: pods(1, "p", "1", "1Gi"), expect: []expectation{podErr("p-0", "incompatible with nodepool empty: no instance types available")}},
		{name: "error lists every nodepool", pools: []*scheduling.NodePool{pool("a"), pool("b")},
			pods: pods(1, "p", "64", "1Gi"), expect: []expectation{podErr("p-0", "incompatible with nodepool a: no instance type fits"), podErr("p-0", "; incompatible with nodepool b: no instance type fits")}},
		{name: "cpu limit removes larger types", pools: []*scheduling.NodePool{pool("default", limits("cpu", "3"))},
			pods: pods(1, "p", "1", "1Gi"), expect: []expectation{types("p-0", "small")}},
		{name: "limit below every type", pools: []*scheduling.NodePool{pool("default", limits("cpu", "1"))},
			pods: pods(1, "p", "500m", "1Gi"), expect: []expectation{podErr("p-0", "incompatible with nodepool default: exceeds nodepool limits (remaining cpu: 1)")}},
		{name: "limit reserved at the largest candidate type", pools: []*scheduling.NodePool{pool("default", limits("cpu", "4"))},
			pods:   pods(2, "p", "1", "1Gi", withLabels("app", "x"), fixtures.WithPodAntiAffinity(affTerm(scheduling.LabelHostname, sel("app", "x")))),
			expect: []expectation{claims(1), podErr("p-1", "exceeds nodepool limits")}},
		{name: "limit shared by claims", pools: []*scheduling.NodePool{pool("default", limits("cpu", "4"), func(np *scheduling.NodePool) { np.InstanceTypes = np.InstanceTypes[:1] })},
			pods: pods(3, "p", "1500m", "1Gi"), expect: []expectation{claims(2), podErr("p-2", "exceeds nodepool limits (remaining cpu: 0)")}},
		{name: "memory limit", pools: []*scheduling.NodePool{pool("default", limits("memory", "10Gi"))},
			pods: pods(1, "p", "100m", "3Gi"), expect: []expectation{types("p-0", "small")}},
		{name: "memory limit explained", pools: []*scheduling.NodePool{pool("default", limits("memory", "10Gi"))},
			pods: pods(1, "p", "100m", "5Gi"), expect: []expectation{podErr("p-0", "larger instance types exceed the nodepool's remaining limits")}},
		{name: "nodes limit", pools: []*scheduling.NodePool{pool("default", limits("nodes", "1"))},
			pods:   pods(2, "p", "1", "1Gi", withLabels("app", "x"), fixtures.WithPodAntiAffinity(affTerm(scheduling.LabelHostname, sel("app", "x")))),
			expect: []expectation{claims(1), podErr("p-1", "exceeds nodepool limits (nodes: 1)")}},
		{name: "limited pool overflows into the next", pools: []*scheduling.NodePool{pool("first", weight(10), limits("cpu", "2")), pool("second")},
			pods: pods(2, "p", "1500m", "1Gi"), expect: []expectation{claimPool("p-0", "first"), claimPool("p-1", "second")}},
		{name: "unlimited resource not constrained by other limits", pools: []*scheduling.NodePool{pool("default", limits("memory", "1000Gi"))},
			pods: pods(1, "p", "10", "1Gi"), expect: []expectation{types("p-0", "large")}},
	})
}

func TestDaemonSets(t *testing.T) {
	ds := func(cpu string, opts ...podOpt) *corev1.Pod { return mkPod("ds", cpu, "100Mi", opts...) }
	runAll(t, []scenario{
		{name: "daemonset overhead excludes small types", ds: []*corev1.Pod{ds("1500m")}, pods: pods(1, "p", "1", "1Gi"),
			expect: []expectation{types("p-0", "arm-medium", "medium", "large"), custom(func(t *testing.T, r *result) {
				q := r.NewClaims[0].DaemonSetOverhead[corev1.ResourceCPU]
				if q.String() != "1500m" {
					t.Fatalf("overhead %v", r.NewClaims[0].DaemonSetOverhead)
				}
			})}},
		{name: "daemonset not tolerating pool taint adds nothing",
			pools: []*scheduling.NodePool{pool("default", func(np *scheduling.NodePool) {
				np.Taints = []corev1.Taint{{Key: "dedicated", Effect: corev1.TaintEffectNoSchedule}}
			})},
			ds: []*corev1.Pod{ds("1500m")}, pods: pods(1, "p", "1", "1Gi", withToleration("dedicated", "", "")),
			expect: []expectation{types("p-0", "small", "arm-medium", "medium", "large")}},
		{name: "daemonset selecting arm only weighs on arm types", ds: []*corev1.Pod{ds("2", withSelector(scheduling.LabelArch, "arm64"))},
			pods: pods(1, "p", "3", "1Gi"), expect: []expectation{types("p-0", "medium", "large")}},
		{name: "daemonset with required affinity to another zone adds nothing",
			ds: []*corev1.Pod{ds("2", fixtures.WithRequiredNodeAffinity(nodeTerm(expr("example.com/cpu", in, "999"))))}, pods: pods(1, "p", "1", "1Gi"),
			expect: []expectation{types("p-0", "small", "arm-medium", "medium", "large")}},
		{name: "daemonset host port conflicts with pod", ds: []*corev1.Pod{ds("100m", fixtures.WithHostPort(9100, "", ""))},
			pods: pods(1, "p", "1", "1Gi", fixtures.WithHostPort(9100, "", "")), expect: []expectation{podErr("p-0", "conflicts with a daemonset")}},
		{name: "daemonset pods count against pods capacity", ds: []*corev1.Pod{ds("10m")}, pods: pods(10, "p", "10m", "10Mi"),
			expect: []expectation{claims(1), types("p-0", "arm-medium", "medium", "large")}},
	})
}

func TestHostPorts(t *testing.T) {
	runAll(t, []scenario{
		{name: "same host port goes apart", pods: pods(2, "p", "100m", "100Mi", fixtures.WithHostPort(80, "", "")),
			expect: []expectation{claims(2), apart("p-0", "p-1")}},
		{name: "different protocols share", pods: append(pods(1, "tcp", "100m", "100Mi", fixtures.WithHostPort(53, corev1.ProtocolTCP, "")), pods(1, "udp", "100m", "100Mi", fixtures.WithHostPort(53, corev1.ProtocolUDP, ""))...),
			expect: []expectation{claims(1), together("tcp-0", "udp-0")}},
		{name: "different specific IPs share", pods: append(pods(1, "a", "100m", "100Mi", fixtures.WithHostPort(80, "", "10.0.0.1")), pods(1, "b", "100m", "100Mi", fixtures.WithHostPort(80, "", "10.0.0.2"))...),
			expect: []expectation{claims(1)}},
		{name: "wildcard IP conflicts with specific", pods: append(pods(1, "a", "100m", "100Mi", fixtures.WithHostPort(80, "", "10.0.0.1")), pods(1, "b", "100m", "100Mi", fixtures.WithHostPort(80, "", ""))...),
			expect: []expectation{claims(2), apart("a-0", "b-0")}},
		{name: "bound pod port blocks existing node",
			existing: []*scheduling.ExistingNode{node("n1", "us-west-2a", "medium", 4, 16, 20, boundPod(mkPod("web", "100m", "100Mi", fixtures.WithHostPort(8080, "", ""))))},
			pods:     pods(1, "p", "100m", "100Mi", fixtures.WithHostPort(8080, "", "")), expect: []expectation{onNewClaim("p-0")}},
		{name: "other port fits existing node",
			existing: []*scheduling.ExistingNode{node("n1", "us-west-2a", "medium", 4, 16, 20, boundPod(mkPod("web", "100m", "100Mi", fixtures.WithHostPort(8080, "", ""))))},
			pods:     pods(1, "p", "100m", "100Mi", fixtures.WithHostPort(8081, "", "")), expect: []expectation{onNode("p-0", "n1")}},
	})
}

func TestExistingNodes(t *testing.T) {
	runAll(t, []scenario{
		{name: "fits an existing node", existing: []*scheduling.ExistingNode{node("n1", "us-west-2a", "medium", 4, 16, 20)},
			pods: pods(2, "p", "1", "1Gi"), expect: []expectation{claims(0), onNode("p-0", "n1"), onNode("p-1", "n1")}},
		{name: "overflow goes to a new claim", existing: []*scheduling.ExistingNode{node("n1", "us-west-2a", "medium", 4, 16, 20)},
			pods: pods(3, "p", "1500m", "1Gi"), expect: []expectation{claims(1), onNode("p-0", "n1"), onNode("p-1", "n1"), onNewClaim("p-2")}},
		{name: "bound pods consume capacity",
			existing: []*scheduling.ExistingNode{node("n1", "us-west-2a", "medium", 4, 16, 20, boundPod(mkPod("b", "3500m", "1Gi")))},
			pods:     pods(1, "p", "1", "1Gi"), expect: []expectation{onNewClaim("p-0")}},
		{name: "finished bound pods do not", existing: []*scheduling.ExistingNode{node("n1", "us-west-2a", "medium", 4, 16, 20, boundPod(func() *corev1.Pod {
			p := mkPod("b", "3500m", "1Gi")
			p.Status.Phase = corev1.PodSucceeded
			return p
		}()))},
			pods: pods(1, "p", "1", "1Gi"), expect: []expectation{onNode("p-0", "n1")}},
		{name: "label mismatch skips existing node", existing: []*scheduling.ExistingNode{node("n1", "us-west-2a", "medium", 4, 16, 20)},
			pods: pods(1, "p", "1", "1Gi", withSelector(scheduling.LabelZone, "us-west-2b")), expect: []expectation{onNewClaim("p-0")}},
		{name: "undefined custom label skips existing node", existing: []*scheduling.ExistingNode{node("n1", "us-west-2a", "medium", 4, 16, 20)},
			pools: []*scheduling.NodePool{pool("default", func(np *scheduling.NodePool) { np.Labels = map[string]string{"team": "red"} })},
			pods:  pods(1, "p", "1", "1Gi", withSelector("team", "red")), expect: []expectation{onNewClaim("p-0")}},
		{name: "initialized nodes before in-flight ones", existing: []*scheduling.ExistingNode{
			node("a-inflight", "us-west-2a", "medium", 4, 16, 20, func(n *scheduling.ExistingNode) { n.InFlight = true; n.Initialized = false }),
			node("z-ready", "us-west-2a", "medium", 4, 16, 20)},
			pods: pods(1, "p", "1", "1Gi"), expect: []expectation{onNode("p-0", "z-ready")}},
		{name: "in-flight node before a new claim", existing: []*scheduling.ExistingNode{
			node("inflight", "us-west-2a", "medium", 4, 16, 20, func(n *scheduling.ExistingNode) { n.InFlight = true; n.Initialized = false })},
			pods: pods(1, "p", "1", "1Gi"), expect: []expectation{claims(0), onNode("p-0", "inflight")}},
		{name: "existing nodes in name order", existing: []*scheduling.ExistingNode{node("n2", "us-west-2a", "medium", 4, 16, 20), node("n1", "us-west-2a", "medium", 4, 16, 20)},
			pods: pods(1, "p", "1", "1Gi"), expect: []expectation{onNode("p-0", "n1")}},
		{name: "pending daemonsets reserved on an in-flight node", ds: []*corev1.Pod{mkPod("ds", "2", "100Mi")},
			existing: []*scheduling.ExistingNode{node("inflight", "us-west-2a", "medium", 4, 16, 20, func(n *scheduling.ExistingNode) { n.InFlight = true; n.Initialized = false })},
			pods:     pods(1, "p", "3", "1Gi"), expect: []expectation{onNewClaim("p-0")}},
		{name: "daemonsets already bound are not reserved twice", ds: []*corev1.Pod{mkPod("ds", "2", "100Mi")},
			existing: []*scheduling.ExistingNode{node("starting", "us-west-2a", "medium", 6, 16, 20, func(n *scheduling.ExistingNode) { n.Initialized = false },
				boundPod(func() *corev1.Pod {
					p := mkPod("ds-abc", "2", "100Mi")
					p.OwnerReferences = []metav1.OwnerReference{{Kind: "DaemonSet", Name: "ds"}}
					return p
				}()))},
			pods: pods(1, "p", "3", "1Gi"), expect: []expectation{onNode("p-0", "starting")}},
		{name: "initialized nodes get no daemonset reservation", ds: []*corev1.Pod{mkPod("ds", "2", "100Mi")},
			existing: []*scheduling.ExistingNode{node("ready", "us-west-2a", "medium", 4, 16, 20)},
			pods:     pods(1, "p", "3", "1Gi"), expect: []expectation{onNode("p-0", "ready")}},
		{name: "node pods allocatable respected", existing: []*scheduling.ExistingNode{node("n1", "us-west-2a", "medium", 4, 16, 2)},
			pods: pods(3, "p", "10m", "10Mi"), expect: []expectation{claims(1), onNode("p-0", "n1"), onNode("p-1", "n1"), onNewClaim("p-2")}},
	})
}

func TestVolumeTopology(t *testing.T) {
	sc := func(name string, zones ...string) *storagev1StorageClass { return newStorageClass(name, zones...) }
	runAll(t, []scenario{
		{name: "bound volume pins the zone", pods: pods(1, "p", "1", "1Gi", fixtures.WithPVC("data")),
			mutate: func(in *scheduling.Input) {
				in.PersistentVolumeClaims = []*corev1.PersistentVolumeClaim{pvc("data", "", "pv-1")}
				in.PersistentVolumes = []*corev1.PersistentVolume{pv("pv-1", "us-west-2c")}
			},
			expect: []expectation{label("p-0", scheduling.LabelZone, "us-west-2c")}},
		{name: "unbound claim uses storage class topologies as alternatives", pods: pods(1, "p", "1", "1Gi", fixtures.WithPVC("data")),
			mutate: func(in *scheduling.Input) {
				in.PersistentVolumeClaims = []*corev1.PersistentVolumeClaim{pvc("data", "zonal", "")}
				in.StorageClasses = sc("zonal", "us-west-2a", "us-west-2b").list()
			},
			expect: []expectation{labelIn("p-0", scheduling.LabelZone, "us-west-2a", "us-west-2b")}},
		{name: "missing claim is reported", pods: pods(1, "p", "1", "1Gi", fixtures.WithPVC("nope")),
			expect: []expectation{podErr("p-0", `persistent volume claim "nope" not found`)}},
		{name: "volumes in different zones cannot be combined", pods: pods(1, "p", "1", "1Gi", fixtures.WithPVC("a"), fixtures.WithPVC("b")),
			mutate: func(in *scheduling.Input) {
				in.PersistentVolumeClaims = []*corev1.PersistentVolumeClaim{pvc("a", "", "pv-a"), pvc("b", "", "pv-b")}
				in.PersistentVolumes = []*corev1.PersistentVolume{pv("pv-a", "us-west-2a"), pv("pv-b", "us-west-2b")}
			},
			expect: []expectation{podErr("p-0", "topology.kubernetes.io/zone")}},
		{name: "volume zone combines with pod selector", pods: pods(1, "p", "1", "1Gi", fixtures.WithPVC("data"), withSelector(scheduling.LabelArch, "arm64")),
			mutate: func(in *scheduling.Input) {
				in.PersistentVolumeClaims = []*corev1.PersistentVolumeClaim{pvc("data", "", "pv-1")}
				in.PersistentVolumes = []*corev1.PersistentVolume{pv("pv-1", "us-west-2b")}
			},
			expect: []expectation{label("p-0", scheduling.LabelZone, "us-west-2b"), types("p-0", "arm-medium")}},
		{name: "local volume hostname affinity ignored", pods: pods(1, "p", "1", "1Gi", fixtures.WithPVC("data")),
			mutate: func(in *scheduling.Input) {
				in.PersistentVolumeClaims = []*corev1.PersistentVolumeClaim{pvc("data", "", "pv-1")}
				v := pv("pv-1", "us-west-2a")
				v.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions = append(v.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions,
					expr(scheduling.LabelHostname, corev1.NodeSelectorOpIn, "some-node"))
				in.PersistentVolumes = []*corev1.PersistentVolume{v}
			},
			expect: []expectation{label("p-0", scheduling.LabelZone, "us-west-2a")}},
		{name: "storage class without topologies adds nothing", pods: pods(1, "p", "1", "1Gi", fixtures.WithPVC("data")),
			mutate: func(in *scheduling.Input) {
				in.PersistentVolumeClaims = []*corev1.PersistentVolumeClaim{pvc("data", "any", "")}
				in.StorageClasses = sc("any").list()
			},
			expect: []expectation{label("p-0", scheduling.LabelZone, "")}},
		{name: "missing storage class is reported", pods: pods(1, "p", "1", "1Gi", fixtures.WithPVC("data")),
			mutate: func(in *scheduling.Input) {
				in.PersistentVolumeClaims = []*corev1.PersistentVolumeClaim{pvc("data", "gone", "")}
			},
			expect: []expectation{podErr("p-0", `storage class "gone" of claim "data" not found`)}},
		{name: "volume zone steers to the matching existing node", existing: []*scheduling.ExistingNode{node("na", "us-west-2a", "medium", 4, 16, 20), node("nb", "us-west-2b", "medium", 4, 16, 20)},
			pods: pods(1, "p", "1", "1Gi", fixtures.WithPVC("data")),
			mutate: func(in *scheduling.Input) {
				in.PersistentVolumeClaims = []*corev1.PersistentVolumeClaim{pvc("data", "", "pv-1")}
				in.PersistentVolumes = []*corev1.PersistentVolume{pv("pv-1", "us-west-2b")}
			},
			expect: []expectation{onNode("p-0", "nb")}},
	})
}

// TestRoomMemoSkipsOnlyNodesWithoutRoom: the room index remembers ranges of existing nodes
// without room for a request (nextExisting's noRoom). In name order, nodes with cpu but no
// memory and nodes with memory but no cpu come first (each dimension's maximum fits, no node
// does), then nodes taking two pods each. The 2-cpu pods must fill every one of those, two
// each, before the last one goes to a new claim, and a smaller pod (another request) still
// lands on the first node, which the larger pods' remembered range covers.
func TestRoomMemoSkipsOnlyNodesWithoutRoom(t *testing.T) {
	var existing []*scheduling.ExistingNode
	for i := 0; i < 5; i++ {
		existing = append(existing,
			node(fmt.Sprintf("a-cpu-%d", i), "us-west-2a", "medium", 8, 1, 20),
			node(fmt.Sprintf("b-mem-%d", i), "us-west-2a", "medium", 1, 16, 20),
			node(fmt.Sprintf("c-fit-%d", i), "us-west-2a", "medium", 4, 4, 20))
	}
	perNode := func(t *testing.T, r *result) {
		t.Helper()
		got := map[string]int{}
		for i := 0; i < 11; i++ {
			name := fmt.Sprintf("p-%d", i)
			if r.claim[name] != nil {
				got["new claim"]++
			} else {
				got[r.where[name]]++
			}
		}
		want := map[string]int{"new claim": 1}
		for i := 0; i < 5; i++ {
			want[fmt.Sprintf("c-fit-%d", i)] = 2
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("2-cpu pods per node %v, want %v: %s", got, want, r.summary())
		}
	}
	runAll(t, []scenario{{name: "joint misfits skipped, room kept", existing: existing,
		pods:   append(pods(11, "p", "2", "2Gi"), pods(1, "small", "1", "512Mi")...),
		expect: []expectation{claims(1), perNode, onNode("small-0", "a-cpu-0")}}})
}
