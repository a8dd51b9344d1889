package scheduling_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/karpenter-go/karpenter/pkg/scheduling"
	"github.com/karpenter-go/karpenter/pkg/test/fixtures"
)

const (
	zoneKey = scheduling.LabelZone
	hostKey = scheduling.LabelHostname
	dns     = corev1.DoNotSchedule
	sa      = corev1.ScheduleAnyway
)

func zoneCounts(r *result, podNames ...string) map[string]int {
	out := map[string]int{}
	for _, n := range podNames {
		if c := r.claim[n]; c != nil {
			rq, _ := c.Requirements.Get(zoneKey)
			v, _ := rq.Single()
			out[v]++
			continue
		}
		for _, nd := range r.in.ExistingNodes {
			if nd.Name == r.where[n] {
				out[nd.Labels[zoneKey]]++
			}
		}
	}
	return out
}

func zoneCountsAre(want map[string]int, podNames ...string) expectation {
	return func(t *testing.T, r *result) {
		t.Helper()
		got := zoneCounts(r, podNames...)
		for z, n := range want {
			if got[z] != n {
				t.Fatalf("zone counts %v, want %v (%s)", got, want, r.summary())
			}
		}
		for z := range got {
			if _, ok := want[z]; !ok {
				t.Fatalf("zone counts %v, want %v", got, want)
			}
		}
	}
}

func honorTaints(c *corev1.TopologySpreadConstraint) {
	h := corev1.NodeInclusionPolicyHonor
	c.NodeTaintsPolicy = &h
}

func ignoreAffinity(c *corev1.TopologySpreadConstraint) {
	i := corev1.NodeInclusionPolicyIgnore
	c.NodeAffinityPolicy = &i
}

func minDomains(n int32) func(*corev1.TopologySpreadConstraint) {
	return func(c *corev1.TopologySpreadConstraint) { c.MinDomains = &n }
}

func matchLabelKeys(keys ...string) func(*corev1.TopologySpreadConstraint) {
	return func(c *corev1.TopologySpreadConstraint) { c.MatchLabelKeys = keys }
}

func TestTopologySpread(t *testing.T) {
	app := withLabels("app", "web")
	webSel := sel("app", "web")
	twoZones := fixtures.WithRequiredNodeAffinity(nodeTerm(expr(zoneKey, in, "us-west-2a", "us-west-2b")))
	runAll(t, []scenario{
		{name: "zonal spread over three zones", pods: pods(3, "p", "100m", "100Mi", app, withSpread(zoneKey, 1, dns, webSel)),
			expect: []expectation{allScheduled(), distinctDomains(zoneKey, 3, names("p", 3)...)}},
		{name: "zonal spread of six is two per zone", pods: pods(6, "p", "100m", "100Mi", app, withSpread(zoneKey, 1, dns, webSel)),
			expect: []expectation{zoneCountsAre(map[string]int{"us-west-2a": 2, "us-west-2b": 2, "us-west-2c": 2}, names("p", 6)...)}},
		{name: "zonal spread packs pods of a zone together", pods: pods(6, "p", "100m", "100Mi", app, withSpread(zoneKey, 1, dns, webSel)),
			expect: []expectation{claims(3)}},
		{name: "hostname spread puts each pod on its own node", pods: pods(3, "p", "100m", "100Mi", app, withSpread(hostKey, 1, dns, webSel)),
			expect: []expectation{claims(3), distinctDomains(hostKey, 3, names("p", 3)...)}},
		{name: "hostname spread maxSkew 2 allows pairs", pods: pods(4, "p", "100m", "100Mi", app, withSpread(hostKey, 2, dns, webSel)),
			expect: []expectation{claims(2)}},
		{name: "node affinity limits spread domains (Honor)", pods: pods(4, "p", "100m", "100Mi", app, twoZones, withSpread(zoneKey, 1, dns, webSel)),
			expect: []expectation{zoneCountsAre(map[string]int{"us-west-2a": 2, "us-west-2b": 2}, names("p", 4)...)}},
		{name: "nodeAffinityPolicy Ignore keeps the third zone at zero", pods: pods(4, "p", "100m", "100Mi", app, twoZones, withSpread(zoneKey, 1, dns, webSel, ignoreAffinity)),
			expect: []expectation{scheduled("p-0", "p-1"), podErr("p-2", "would violate topology spread constraint on topology.kubernetes.io/zone (maxSkew 1"), podErr("p-3", "topology spread")}},
		{name: "ScheduleAnyway is honoured while possible", pods: pods(3, "p", "100m", "100Mi", app, withSpread(zoneKey, 1, sa, webSel)),
			expect: []expectation{distinctDomains(zoneKey, 3, names("p", 3)...)}},
		{name: "ScheduleAnyway is relaxed when impossible", pods: pods(4, "p", "100m", "100Mi", app, twoZones, withSpread(zoneKey, 1, sa, webSel, ignoreAffinity)),
			expect: []expectation{allScheduled()}},
		{name: "ScheduleAnyway ignored under Ignore policy", opts: scheduling.Options{PreferencePolicy: scheduling.PreferencePolicyIgnore},
			pods: pods(3, "p", "100m", "100Mi", app, withSpread(hostKey, 1, sa, webSel)), expect: []expectation{claims(1)}},
		{name: "minDomains above known domains caps each zone at maxSkew", pods: pods(4, "p", "100m", "100Mi", app, withSpread(zoneKey, 1, dns, webSel, minDomains(5))),
			expect: []expectation{distinctDomains(zoneKey, 3, names("p", 3)...), podErr("p-3", "topology spread")}},
		{name: "minDomains within known domains has no effect", pods: pods(6, "p", "100m", "100Mi", app, withSpread(zoneKey, 1, dns, webSel, minDomains(3))),
			expect: []expectation{allScheduled()}},
		{name: "spread over capacity types", pods: pods(2, "p", "100m", "100Mi", app, withSpread(scheduling.LabelCapacityType, 1, dns, webSel)),
			expect: []expectation{distinctDomains(scheduling.LabelCapacityType, 2, "p-0", "p-1")}},
		{name: "spread over a custom label with known domains",
			pools: []*scheduling.NodePool{pool("default", func(np *scheduling.NodePool) {
				np.Requirements = scheduling.NewRequirements(req("rack", in, "r1", "r2"))
			})},
			pods:   pods(2, "p", "100m", "100Mi", app, withSpread("rack", 1, dns, webSel)),
			expect: []expectation{distinctDomains("rack", 2, "p-0", "p-1")}},
		{name: "spread in a pool pinned to one zone explains the constraint", pools: []*scheduling.NodePool{pool("default", func(np *scheduling.NodePool) {
			np.Requirements = scheduling.NewRequirements(req(zoneKey, in, "us-west-2a"))
		})},
			existing: []*scheduling.ExistingNode{node("nb", "us-west-2b", "small", 2, 4, 10, boundPod(mkPod("other", "1500m", "100Mi", withLabels("app", "other"))))},
			pods:     pods(2, "p", "1", "100Mi", app, withSpread(zoneKey, 1, dns, webSel, ignoreAffinity)),
			expect:   []expectation{scheduled("p-0"), podErr("p-1", "incompatible with nodepool default: would violate topology spread constraint on topology.kubernetes.io/zone (maxSkew 1, selector app=web)")}},
		{name: "spread over a label without known domains is unschedulable", pods: pods(1, "p", "100m", "100Mi", app, withSpread("rack", 1, dns, webSel)),
			expect: []expectation{podErr("p-0", "topology spread constraint on rack")}},
		{name: "existing pods count toward spread", existing: []*scheduling.ExistingNode{node("na", "us-west-2a", "small", 2, 4, 10,
			boundPod(mkPod("old-1", "100m", "100Mi", app)), boundPod(mkPod("old-2", "1500m", "100Mi", app)))},
			pods:   pods(2, "p", "100m", "100Mi", app, withSpread(zoneKey, 1, dns, webSel)),
			expect: []expectation{zoneCountsAre(map[string]int{"us-west-2b": 1, "us-west-2c": 1}, "p-0", "p-1")}},
		{name: "pods in other namespaces do not count", existing: []*scheduling.ExistingNode{node("na", "us-west-2a", "small", 2, 4, 10,
			boundPod(mkPod("old-1", "100m", "100Mi", app, fixtures.WithNamespace("other"))))},
			pods:   pods(3, "p", "100m", "100Mi", app, withSpread(zoneKey, 1, dns, webSel)),
			expect: []expectation{distinctDomains(zoneKey, 3, names("p", 3)...)}},
		{name: "matchLabelKeys spreads each version separately",
			pods: append(pods(2, "v1", "100m", "100Mi", withLabels("app", "web", "version", "1"), withSpread(hostKey, 1, dns, webSel, matchLabelKeys("version"))),
				pods(2, "v2", "100m", "100Mi", withLabels("app", "web", "version", "2"), withSpread(hostKey, 1, dns, webSel, matchLabelKeys("version")))...),
			expect: []expectation{claims(2), apart("v1-0", "v1-1"), apart("v2-0", "v2-1")}},
		{name: "nodeTaintsPolicy Honor ignores domains of untolerated pools",
			pools: []*scheduling.NodePool{
				pool("ab", func(np *scheduling.NodePool) {
					np.Requirements = scheduling.NewRequirements(req(zoneKey, in, "us-west-2a", "us-west-2b"))
				}),
				pool("c", func(np *scheduling.NodePool) {
					np.Requirements = scheduling.NewRequirements(req(zoneKey, in, "us-west-2c"))
					np.Taints = []corev1.Taint{{Key: "dedicated", Effect: corev1.TaintEffectNoSchedule}}
				})},
			pods:   pods(4, "p", "100m", "100Mi", app, withSpread(zoneKey, 1, dns, webSel, honorTaints)),
			expect: []expectation{allScheduled(), zoneCountsAre(map[string]int{"us-west-2a": 2, "us-west-2b": 2}, names("p", 4)...)}},
		{name: "nodeTaintsPolicy Ignore counts the untolerated zone at zero",
			pools: []*scheduling.NodePool{
				pool("ab", func(np *scheduling.NodePool) {
					np.Requirements = scheduling.NewRequirements(req(zoneKey, in, "us-west-2a", "us-west-2b"))
				}),
				pool("c", func(np *scheduling.NodePool) {
					np.Requirements = scheduling.NewRequirements(req(zoneKey, in, "us-west-2c"))
					np.Taints = []corev1.Taint{{Key: "dedicated", Effect: corev1.TaintEffectNoSchedule}}
				})},
			pods:   pods(4, "p", "100m", "100Mi", app, withSpread(zoneKey, 1, dns, webSel)),
			expect: []expectation{scheduled("p-0", "p-1"), podErr("p-2", "topology spread")}},
		{name: "pod not matching its selector may join a domain at maxSkew", existing: []*scheduling.ExistingNode{node("na", "us-west-2a", "small", 2, 4, 10,
			boundPod(mkPod("db", "100m", "100Mi", withLabels("app", "db"))))},
			pods: pods(1, "p", "100m", "100Mi", app, withSpread(zoneKey, 1, dns, sel("app", "db"))), expect: []expectation{onNode("p-0", "na")}},
		{name: "pod not matching its selector avoids a domain beyond maxSkew", existing: []*scheduling.ExistingNode{node("na", "us-west-2a", "small", 2, 4, 10,
			boundPod(mkPod("db", "100m", "100Mi", withLabels("app", "db"))), boundPod(mkPod("db2", "100m", "100Mi", withLabels("app", "db"))))},
			pods: pods(1, "p", "100m", "100Mi", app, withSpread(zoneKey, 1, dns, sel("app", "db"))),
			expect: []expectation{custom(func(t *testing.T, r *result) {
				if z := zoneCounts(r, "p-0"); z["us-west-2a"] != 0 {
					t.Fatalf("pod placed in the crowded zone: %v", z)
				}
			})}},
		{name: "plain pods matching a spread selector are counted where they land",
			pods: append(pods(3, "plain", "1", "100Mi", app), pods(3, "p", "100m", "100Mi", app, withSpread(zoneKey, 1, dns, webSel))...),
			expect: []expectation{allScheduled(), custom(func(t *testing.T, r *result) {
				if zoneCounts(r, names("plain", 3)...)["us-west-2a"] != 3 || zoneCounts(r, names("p", 3)...)["us-west-2a"] != 0 {
					t.Fatalf("plain %v spread %v", zoneCounts(r, names("plain", 3)...), zoneCounts(r, names("p", 3)...))
				}
			})}},
		{name: "Honor limits domains to the pod's selector", pods: pods(2, "p", "100m", "100Mi", app, withSpread(zoneKey, 1, dns, webSel), withSelector(zoneKey, "us-west-2a")),
			expect: []expectation{allScheduled(), distinctDomains(zoneKey, 1, "p-0", "p-1")}},
		{name: "Ignore policy with a zone selector stops at maxSkew", pods: pods(2, "p", "100m", "100Mi", app, withSpread(zoneKey, 1, dns, webSel, ignoreAffinity), withSelector(zoneKey, "us-west-2a")),
			expect: []expectation{scheduled("p-0"), podErr("p-1", "topology spread")}},
	})
}

func TestPodAffinity(t *testing.T) {
	db := func(ns string) *corev1.Pod {
		return mkPod("db", "100m", "100Mi", withLabels("app", "db"), fixtures.WithNamespace(ns))
	}
	dbSel := sel("app", "db")
	runAll(t, []scenario{
		{name: "zonal affinity follows an existing pod", existing: []*scheduling.ExistingNode{node("nb", "us-west-2b", "small", 2, 4, 10, boundPod(db("default")), func(n *scheduling.ExistingNode) {
			n.Allocatable = rl("cpu", "200m", "memory", "1Gi", "pods", "10")
		})},
			pods: pods(1, "p", "1", "100Mi", fixtures.WithPodAffinity(affTerm(zoneKey, dbSel))), expect: []expectation{onNewClaim("p-0"), label("p-0", zoneKey, "us-west-2b")}},
		{name: "hostname affinity joins the existing node", existing: []*scheduling.ExistingNode{node("n1", "us-west-2b", "medium", 4, 16, 20, boundPod(db("default"))), node("n0", "us-west-2b", "medium", 4, 16, 20)},
			pods: pods(1, "p", "1", "100Mi", fixtures.WithPodAffinity(affTerm(hostKey, dbSel))), expect: []expectation{onNode("p-0", "n1")}},
		{name: "self affinity keeps a group in one zone", pods: pods(4, "p", "1500m", "100Mi", withLabels("app", "db"), fixtures.WithPodAffinity(affTerm(zoneKey, dbSel))),
			expect: []expectation{allScheduled(), distinctDomains(zoneKey, 1, names("p", 4)...)}},
		{name: "self affinity on hostname packs together", pods: pods(3, "p", "100m", "100Mi", withLabels("app", "db"), fixtures.WithPodAffinity(affTerm(hostKey, dbSel))),
			expect: []expectation{claims(1)}},
		{name: "affinity to absent pods is reported", pods: pods(1, "p", "100m", "100Mi", fixtures.WithPodAffinity(affTerm(zoneKey, dbSel))),
			expect: []expectation{podErr("p-0", "no topology.kubernetes.io/zone domain with pods matching pod affinity selector app=db")}},
		{name: "affinity to a pod placed earlier in the same solve", pods: []*corev1.Pod{mkPod("db", "2", "100Mi", withLabels("app", "db"), withSelector(zoneKey, "us-west-2c")),
			mkPod("p", "100m", "100Mi", fixtures.WithPodAffinity(affTerm(zoneKey, dbSel)))},
			expect: []expectation{label("p", zoneKey, "us-west-2c")}},
		{name: "affinity to a pod placed later is retried", pods: []*corev1.Pod{mkPod("db", "100m", "100Mi", withLabels("app", "db"), withSelector(zoneKey, "us-west-2c")),
			mkPod("p", "2", "100Mi", fixtures.WithPodAffinity(affTerm(zoneKey, dbSel)))},
			expect: []expectation{allScheduled(), label("p", zoneKey, "us-west-2c")}},
		{name: "affinity namespaces list", existing: []*scheduling.ExistingNode{node("n1", "us-west-2a", "medium", 4, 16, 20, boundPod(db("other")))},
			pods:   pods(1, "p", "100m", "100Mi", fixtures.WithPodAffinity(corev1.PodAffinityTerm{TopologyKey: hostKey, LabelSelector: dbSel, Namespaces: []string{"other"}})),
			expect: []expectation{onNode("p-0", "n1")}},
		{name: "affinity namespaceSelector", existing: []*scheduling.ExistingNode{node("n1", "us-west-2a", "medium", 4, 16, 20, boundPod(db("other")))},
			pods:   pods(1, "p", "100m", "100Mi", fixtures.WithPodAffinity(corev1.PodAffinityTerm{TopologyKey: hostKey, LabelSelector: dbSel, NamespaceSelector: sel("team", "b")})),
			expect: []expectation{onNode("p-0", "n1")}},
		{name: "affinity defaults to the pod's namespace", existing: []*scheduling.ExistingNode{node("n1", "us-west-2a", "medium", 4, 16, 20, boundPod(db("other")))},
			pods: pods(1, "p", "100m", "100Mi", fixtures.WithPodAffinity(affTerm(hostKey, dbSel))), expect: []expectation{podErr("p-0", "pod affinity")}},
		{name: "empty namespaceSelector means all namespaces", existing: []*scheduling.ExistingNode{node("n1", "us-west-2a", "medium", 4, 16, 20, boundPod(db("third")))},
			pods:   pods(1, "p", "100m", "100Mi", fixtures.WithPodAffinity(corev1.PodAffinityTerm{TopologyKey: hostKey, LabelSelector: dbSel, NamespaceSelector: &metav1.LabelSelector{}})),
			expect: []expectation{onNode("p-0", "n1")}},
		{name: "preferred affinity honoured", existing: []*scheduling.ExistingNode{node("n1", "us-west-2a", "medium", 4, 16, 20, boundPod(db("default"))), node("n0", "us-west-2a", "medium", 4, 16, 20)},
			pods: pods(1, "p", "100m", "100Mi", fixtures.WithPreferredPodAffinity(10, affTerm(hostKey, dbSel))), expect: []expectation{onNode("p-0", "n1")}},
		{name: "preferred affinity relaxed when impossible", pods: pods(1, "p", "100m", "100Mi", fixtures.WithPreferredPodAffinity(10, affTerm(hostKey, dbSel))),
			expect: []expectation{allScheduled()}},
		{name: "affinity and selector intersect", existing: []*scheduling.ExistingNode{node("n1", "us-west-2a", "medium", 4, 16, 20, boundPod(db("default")))},
			pods:   pods(1, "p", "100m", "100Mi", withSelector(zoneKey, "us-west-2b"), fixtures.WithPodAffinity(affTerm(zoneKey, dbSel))),
			expect: []expectation{podErr("p-0", "pod affinity")}},
	})
}

func TestPodAntiAffinity(t *testing.T) {
	web := withLabels("app", "web")
	webSel := sel("app", "web")
	guard := func(key string, ns ...string) *corev1.Pod {
		term := affTerm(key, webSel)
		if len(ns) > 0 {
			term.Namespaces = ns
		}
		return mkPod("guard", "100m", "100Mi", withLabels("app", "guard"), fixtures.WithPodAntiAffinity(term))
	}
	runAll(t, []scenario{
		{name: "hostname anti-affinity gives each pod a node", pods: pods(3, "p", "100m", "100Mi", web, fixtures.WithPodAntiAffinity(affTerm(hostKey, webSel))),
			expect: []expectation{claims(3), distinctDomains(hostKey, 3, names("p", 3)...)}},
		{name: "zonal anti-affinity allows one per zone", pods: pods(4, "p", "100m", "100Mi", web, fixtures.WithPodAntiAffinity(affTerm(zoneKey, webSel))),
			expect: []expectation{distinctDomains(zoneKey, 3, names("p", 3)...), podErr("p-3", "every topology.kubernetes.io/zone domain already has pods matching pod anti-affinity selector app=web")}},
		{name: "anti-affinity avoids nodes with matching pods", existing: []*scheduling.ExistingNode{node("n1", "us-west-2a", "medium", 4, 16, 20, boundPod(mkPod("old", "100m", "100Mi", web)))},
			pods: pods(1, "p", "100m", "100Mi", fixtures.WithPodAntiAffinity(affTerm(hostKey, webSel))), expect: []expectation{onNewClaim("p-0")}},
		{name: "inverse: existing pod's anti-affinity repels new pods", existing: []*scheduling.ExistingNode{node("n1", "us-west-2a", "medium", 4, 16, 20, boundPod(guard(hostKey)))},
			pods: pods(1, "p", "100m", "100Mi", web), expect: []expectation{onNewClaim("p-0")}},
		{name: "inverse zonal anti-affinity keeps new pods out of the zone", existing: []*scheduling.ExistingNode{node("n1", "us-west-2a", "medium", 4, 16, 20, boundPod(guard(zoneKey)))},
			pods: pods(3, "p", "100m", "100Mi", web, withSpread(zoneKey, 1, sa, webSel)),
			expect: []expectation{allScheduled(), custom(func(t *testing.T, r *result) {
				if zoneCounts(r, names("p", 3)...)["us-west-2a"] != 0 {
					t.Fatalf("pod placed in guarded zone")
				}
			})}},
		{name: "inverse does not apply to unmatched pods", existing: []*scheduling.ExistingNode{node("n1", "us-west-2a", "medium", 4, 16, 20, boundPod(guard(hostKey)))},
			pods: pods(1, "p", "100m", "100Mi", withLabels("app", "api")), expect: []expectation{onNode("p-0", "n1")}},
		{name: "inverse respects the owner's namespaces", existing: []*scheduling.ExistingNode{node("n1", "us-west-2a", "medium", 4, 16, 20, boundPod(guard(hostKey, "other")))},
			pods: pods(1, "p", "100m", "100Mi", web), expect: []expectation{onNode("p-0", "n1")}},
		{name: "inverse from a pod placed in the same solve", pods: []*corev1.Pod{mkPod("guard", "2", "100Mi", withLabels("app", "guard"), fixtures.WithPodAntiAffinity(affTerm(hostKey, webSel))),
			mkPod("p", "100m", "100Mi", web)},
			expect: []expectation{claims(2), apart("guard", "p")}},
		{name: "anti-affinity in another namespace does not apply", existing: []*scheduling.ExistingNode{node("n1", "us-west-2a", "medium", 4, 16, 20, boundPod(mkPod("old", "100m", "100Mi", web, fixtures.WithNamespace("other"))))},
			pods: pods(1, "p", "100m", "100Mi", fixtures.WithPodAntiAffinity(affTerm(hostKey, webSel))), expect: []expectation{onNode("p-0", "n1")}},
		{name: "anti-affinity with all namespaces applies", existing: []*scheduling.ExistingNode{node("n1", "us-west-2a", "medium", 4, 16, 20, boundPod(mkPod("old", "100m", "100Mi", web, fixtures.WithNamespace("other"))))},
			pods:   pods(1, "p", "100m", "100Mi", fixtures.WithPodAntiAffinity(corev1.PodAffinityTerm{TopologyKey: hostKey, LabelSelector: webSel, NamespaceSelector: &metav1.LabelSelector{}})),
			expect: []expectation{onNewClaim("p-0")}},
		{name: "preferred anti-affinity spreads when possible", pods: pods(2, "p", "100m", "100Mi", web, fixtures.WithPreferredPodAntiAffinity(5, affTerm(hostKey, webSel))),
			expect: []expectation{apart("p-0", "p-1")}},
		{name: "preferred anti-affinity ignored under Ignore", opts: scheduling.Options{PreferencePolicy: scheduling.PreferencePolicyIgnore},
			pods: pods(2, "p", "100m", "100Mi", web, fixtures.WithPreferredPodAntiAffinity(5, affTerm(hostKey, webSel))), expect: []expectation{together("p-0", "p-1")}},
		{name: "unsatisfiable preferred zonal anti-affinity is relaxed", pods: pods(5, "p", "100m", "100Mi", web, fixtures.WithPreferredPodAntiAffinity(5, affTerm(zoneKey, webSel))),
			expect: []expectation{allScheduled()}},
		{name: "anti-affinity and hostname spread together", pods: pods(3, "p", "100m", "100Mi", web, fixtures.WithPodAntiAffinity(affTerm(hostKey, webSel)), withSpread(zoneKey, 1, dns, webSel)),
			expect: []expectation{claims(3), distinctDomains(zoneKey, 3, names("p", 3)...)}},
	})
}

func TestRelaxationOrder(t *testing.T) {
	web := withLabels("app", "web")
	webSel := sel("app", "web")
	runAll(t, []scenario{
		{name: "preferred pod affinity relaxed before preferred anti-affinity",
			pods:   pods(2, "p", "100m", "100Mi", web, fixtures.WithPreferredPodAffinity(10, affTerm(hostKey, sel("app", "nothing"))), fixtures.WithPreferredPodAntiAffinity(1, affTerm(hostKey, webSel))),
			expect: []expectation{apart("p-0", "p-1")}},
		{name: "preferred anti-affinity relaxed before preferred node affinity",
			pods: pods(4, "p", "100m", "100Mi", web, fixtures.WithPreferredNodeAffinity(1, nodeTerm(expr(zoneKey, in, "us-west-2b"))), fixtures.WithPreferredPodAntiAffinity(1, affTerm(zoneKey, webSel))),
			expect: []expectation{allScheduled(), custom(func(t *testing.T, r *result) {
				// the fourth pod cannot avoid the others by zone; it drops the anti-affinity but keeps the zone preference
				if zoneCounts(r, "p-3")["us-west-2b"] != 1 {
					t.Fatalf("p-3 zone %v", zoneCounts(r, "p-3"))
				}
			})}},
		{name: "required terms relaxed before preferences",
			pods: pods(1, "p", "100m", "100Mi", fixtures.WithRequiredNodeAffinity(nodeTerm(expr(zoneKey, in, "us-west-2z")), nodeTerm(expr(zoneKey, in, "us-west-2a", "us-west-2b"))),
				fixtures.WithPreferredNodeAffinity(1, nodeTerm(expr(zoneKey, in, "us-west-2b")))),
			expect: []expectation{label("p-0", zoneKey, "us-west-2b")}},
		{name: "ScheduleAnyway relaxed after node preference",
			pods:   pods(2, "p", "100m", "100Mi", web, withSpread(hostKey, 1, sa, webSel), withSelector(scheduling.LabelHostname, "x")),
			expect: []expectation{podErr("p-0", "which a new node cannot have")}},
		{name: "error reports the most relaxed attempt", pods: pods(1, "p", "100m", "100Mi", fixtures.WithPreferredNodeAffinity(1, nodeTerm(expr(zoneKey, in, "us-west-2a"))), withSelector(scheduling.LabelArch, "s390x")),
			expect: []expectation{podErr("p-0", "requires kubernetes.io/arch In [s390x]")}},
	})
}

func TestMinValuesAndTruncation(t *testing.T) {
	minIT := func(n int, policy ...func(*scheduling.NodePool)) []*scheduling.NodePool {
		np := pool("default", func(np *scheduling.NodePool) {
			r := req(scheduling.LabelInstanceType, exists)
			r.MinValues = &n
			np.Requirements = scheduling.NewRequirements(r)
		})
		return []*scheduling.NodePool{np}
	}
	runAll(t, []scenario{
		{name: "minValues satisfied keeps enough types", pools: minIT(3), pods: pods(1, "p", "1", "1Gi"),
			expect: []expectation{types("p-0", "small", "arm-medium", "medium", "large")}},
		{name: "minValues stops a claim from narrowing too far", pools: minIT(4), pods: pods(2, "p", "1500m", "1Gi"),
			expect: []expectation{claims(2), types("p-0", "small", "arm-medium", "medium", "large")}},
		{name: "minValues unsatisfiable is reported", pools: minIT(3), pods: pods(1, "p", "5", "1Gi"),
			expect: []expectation{podErr("p-0", "minValues 3 for node.kubernetes.io/instance-type not met (only 1 values)")}},
		{name: "BestEffort relaxes minValues", pools: minIT(3), opts: scheduling.Options{MinValuesPolicy: scheduling.MinValuesPolicyBestEffort},
			pods: pods(1, "p", "5", "1Gi"), expect: []expectation{types("p-0", "large"), custom(func(t *testing.T, r *result) {
				if !r.NewClaims[0].MinValuesRelaxed {
					t.Fatal("claim not marked relaxed")
				}
			})}},
		{name: "MaxInstanceTypes truncates the cheapest first", opts: scheduling.Options{MaxInstanceTypes: 2}, pods: pods(1, "p", "1", "1Gi"),
			expect: []expectation{types("p-0", "small", "arm-medium")}},
		{name: "minValues extends past MaxInstanceTypes", pools: minIT(3), opts: scheduling.Options{MaxInstanceTypes: 1}, pods: pods(1, "p", "1", "1Gi"),
			expect: []expectation{types("p-0", "small", "arm-medium", "medium")}},
		{name: "claim requirements list the instance types", pods: pods(1, "p", "3", "1Gi"),
			expect: []expectation{custom(func(t *testing.T, r *result) {
				rq, _ := r.NewClaims[0].Requirements.Get(scheduling.LabelInstanceType)
				if rq.String() != "In [arm-medium large medium]" {
					t.Fatalf("instance-type requirement %s", rq)
				}
			})}},
	})
}

func TestOfferings(t *testing.T) {
	withTypes := func(its ...*scheduling.InstanceType) []*scheduling.NodePool {
		return []*scheduling.NodePool{pool("default", func(np *scheduling.NodePool) { np.InstanceTypes = its })}
	}
	onlyA := itype("only-a", "amd64", 2, 4, 10, "us-west-2a")
	unavailable := itype("gone", "amd64", 1, 2, 10)
	for i := range unavailable.Offerings {
		unavailable.Offerings[i].Available = false
	}
	spotOnly := itype("spot-only", "amd64", 1, 2, 10)
	spotOnly.Offerings = []scheduling.Offering{{Zone: "us-west-2a", CapacityType: scheduling.CapacityTypeSpot, Price: 0.01, Available: true}}
	reserved := itype("reserved", "amd64", 2, 4, 10)
	reserved.Offerings = append(reserved.Offerings, scheduling.Offering{Zone: "us-west-2a", CapacityType: scheduling.CapacityTypeReserved, Price: 0.001, Available: true,
		Requirements: scheduling.NewRequirements(req("example.com/reservation-id", in, "r-1"))})
	runAll(t, []scenario{
		{name: "type without an offering in the zone is dropped", pools: withTypes(onlyA, itype("everywhere", "amd64", 4, 8, 10)),
			pods: pods(1, "p", "1", "1Gi", withSelector(zoneKey, "us-west-2b")), expect: []expectation{types("p-0", "everywhere")}},
		{name: "unavailable offerings are ignored", pools: withTypes(unavailable, itype("ok", "amd64", 4, 8, 10)),
			pods: pods(1, "p", "100m", "100Mi"), expect: []expectation{types("p-0", "ok")}},
		{name: "spot-only type excluded for on-demand pods", pools: withTypes(spotOnly, itype("ok", "amd64", 4, 8, 10)),
			pods: pods(1, "p", "100m", "100Mi", withSelector(scheduling.LabelCapacityType, "on-demand")), expect: []expectation{types("p-0", "ok")}},
		{name: "price is the cheapest compatible offering", pools: withTypes(spotOnly, itype("ok", "amd64", 4, 8, 10)),
			pods: pods(1, "p", "100m", "100Mi"), expect: []expectation{types("p-0", "spot-only", "ok"), totalPrice(0.01)}},
		{name: "reserved offering needs its reservation requirement", pools: withTypes(reserved),
			pods:   pods(1, "p", "100m", "100Mi", withSelector(scheduling.LabelCapacityType, "reserved")),
			expect: []expectation{totalPrice(0.001), label("p-0", scheduling.LabelCapacityType, "reserved")}},
		{name: "pod requiring a different reservation", pools: withTypes(reserved),
			pods:   pods(1, "p", "100m", "100Mi", withSelector(scheduling.LabelCapacityType, "reserved"), fixtures.WithRequiredNodeAffinity(nodeTerm(expr("example.com/reservation-id", in, "r-2")))),
			expect: []expectation{podErr("p-0", "no available offering matches")}},
		{name: "capacity type with no offerings is explained", pools: withTypes(onlyA),
			pods:   pods(1, "p", "100m", "100Mi", withSelector(scheduling.LabelCapacityType, "reserved")),
			expect: []expectation{podErr("p-0", "requires karpenter.sh/capacity-type In [reserved], but offerings are only in [on-demand,spot]")}},
	})
}

func TestDeterminismAndPurity(t *testing.T) {
	in := genInput(7)
	before := fingerprintInput(in)
	a := fingerprint(scheduling.Solve(in))
	for i := 0; i < 5; i++ {
		if b := fingerprint(scheduling.Solve(in)); a != b {
			t.Fatalf("run %d differs:\n%s\n---\n%s", i, a, b)
		}
	}
	if after := fingerprintInput(in); before != after {
		t.Fatal("Solve modified its input")
	}
	// Input order does not matter either.
	rev := *in
	rev.Pods = append([]*corev1.Pod(nil), in.Pods...)
	for i, j := 0, len(rev.Pods)-1; i < j; i, j = i+1, j-1 {
		rev.Pods[i], rev.Pods[j] = rev.Pods[j], rev.Pods[i]
	}
	if b := fingerprint(scheduling.Solve(&rev)); a != b {
		t.Fatalf("pod order changed the result:\n%s\n---\n%s", a, b)
	}
}

func fingerprintInput(in *scheduling.Input) string {
	s := ""
	for _, p := range in.Pods {
		s += p.Name + p.Spec.String()
	}
	for _, np := range in.NodePools {
		s += np.Name + np.Requirements.String()
	}
	return s
}
