package scheduling_test

import (
	"fmt"
	"math/rand"
	"os"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ktypes "k8s.io/apimachinery/pkg/types"

	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

var genZones = []string{"zone-a", "zone-b", "zone-c"}

func pick[T any](r *rand.Rand, xs ...T) T { return xs[r.Intn(len(xs))] }

func genInstanceTypes(r *rand.Rand) []*scheduling.InstanceType {
	n := 4 + r.Intn(14)
	var out []*scheduling.InstanceType
	for i := 0; i < n; i++ {
		cpu := int64(pick(r, 1, 2, 4, 8, 16))
		mem := cpu * int64(pick(r, 1, 2, 4, 8))
		it := &scheduling.InstanceType{
			Name: fmt.Sprintf("it-%d", i),
			Requirements: scheduling.NewRequirements(
				scheduling.NewRequirement(scheduling.LabelArch, corev1.NodeSelectorOpIn, pick(r, "amd64", "amd64", "arm64")),
				scheduling.NewRequirement("example.com/cpu", corev1.NodeSelectorOpIn, fmt.Sprint(cpu)),
			),
			Capacity: corev1.ResourceList{
				corev1.ResourceCPU:    *resource.NewQuantity(cpu, resource.DecimalSI),
				corev1.ResourceMemory: *resource.NewQuantity(mem<<30, resource.BinarySI),
				corev1.ResourcePods:   *resource.NewQuantity(int64(pick(r, 4, 8, 16, 32)), resource.DecimalSI),
			},
			Overhead: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
		}
		base := 0.04*float64(cpu) + 0.005*float64(mem) + 0.001*float64(r.Intn(10))
		for _, z := range genZones {
			for _, ct := range []string{scheduling.CapacityTypeSpot, scheduling.CapacityTypeOnDemand} {
				if r.Intn(4) == 0 {
					continue
				}
				price := base
				if ct == scheduling.CapacityTypeSpot {
					price *= 0.6
				}
				it.Offerings = append(it.Offerings, scheduling.Offering{Zone: z, CapacityType: ct, Price: price, Available: r.Intn(8) != 0})
			}
		}
		out = append(out, it)
	}
	return out
}

func genPools(r *rand.Rand, its []*scheduling.InstanceType) []*scheduling.NodePool {
	n := 1 + r.Intn(3)
	var out []*scheduling.NodePool
	for i := 0; i < n; i++ {
		np := &scheduling.NodePool{Name: fmt.Sprintf("pool-%d", i), Weight: int32(r.Intn(3)), InstanceTypes: its}
		var reqs []scheduling.Requirement
		if r.Intn(3) == 0 {
			reqs = append(reqs, scheduling.NewRequirement(scheduling.LabelZone, corev1.NodeSelectorOpIn, genZones[:1+r.Intn(3)]...))
		}
		if r.Intn(4) == 0 {
			reqs = append(reqs, scheduling.NewRequirement(scheduling.LabelCapacityType, corev1.NodeSelectorOpIn, scheduling.CapacityTypeOnDemand))
		}
		if r.Intn(4) == 0 {
			reqs = append(reqs, scheduling.NewRequirement(scheduling.LabelArch, corev1.NodeSelectorOpIn, "amd64"))
		}
		if r.Intn(5) == 0 {
			reqs = append(reqs, scheduling.NewRequirement("example.com/cpu", corev1.NodeSelectorOpGt, "1"))
		}
		np.Requirements = scheduling.NewRequirements(reqs...)
		if r.Intn(3) == 0 {
			np.Labels = map[string]string{"team": pick(r, "red", "blue")}
		}
		if r.Intn(4) == 0 {
			np.Taints = []corev1.Taint{{Key: "dedicated", Value: pick(r, "gpu", "batch"), Effect: corev1.TaintEffectNoSchedule}}
		}
		if r.Intn(3) == 0 {
			np.Remaining = corev1.ResourceList{corev1.ResourceCPU: *resource.NewQuantity(int64(4+r.Intn(60)), resource.DecimalSI)}
			if r.Intn(2) == 0 {
				np.Remaining["nodes"] = *resource.NewQuantity(int64(1+r.Intn(5)), resource.DecimalSI)
			}
		}
		out = append(out, np)
	}
	return out
}

func genPod(name string, r *rand.Rand, lbls map[string]string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: pick(r, "default", "default", "other"), Name: name, UID: ktypes.UID("uid-" + metavName(name)), Labels: lbls},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewMilliQuantity(int64(pick(r, 100, 250, 500, 1000, 2000, 3500)), resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity(int64(pick(r, 128, 512, 1024, 4096))<<20, resource.BinarySI),
		}}}}},
	}
	return p
}

func metavName(s string) string { return strings.ReplaceAll(s, "/", "-") }

// genPodGroups creates groups of identical-constraint pods. Each group kind uses its own label
// key so that selectors never cross groups (the checker relies on it for spread).
func genPodGroups(r *rand.Rand) []*corev1.Pod {
	var pods []*corev1.Pod
	groups := 2 + r.Intn(7)
	for g := 0; g < groups; g++ {
		kind := r.Intn(13)
		size := 1 + r.Intn(7)
		ns := pick(r, "default", "other")
		var proto func(i int) *corev1.Pod
		mk := func(i int, lbls map[string]string) *corev1.Pod {
			p := genPod(fmt.Sprintf("g%d-k%d-%d", g, kind, i), r, lbls)
			p.Namespace = ns
			return p
		}
		gl := fmt.Sprintf("g%d", g)
		switch kind {
		case 0: // plain
			proto = func(i int) *corev1.Pod { return mk(i, map[string]string{"plain": gl}) }
		case 1: // node selector on zone
			z := pick(r, genZones...)
			proto = func(i int) *corev1.Pod {
				p := mk(i, map[string]string{"plain": gl})
				p.Spec.NodeSelector = map[string]string{scheduling.LabelZone: z}
				return p
			}
		case 2: // two required node affinity terms
			proto = func(i int) *corev1.Pod {
				p := mk(i, map[string]string{"plain": gl})
				p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{
					{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: scheduling.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{"arm64"}}}},
					{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: scheduling.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{scheduling.CapacityTypeSpot}}, {Key: scheduling.LabelZone, Operator: corev1.NodeSelectorOpNotIn, Values: []string{"zone-a"}}}},
				}}}}
				return p
			}
		case 3: // toleration + team selector
			proto = func(i int) *corev1.Pod {
				p := mk(i, map[string]string{"plain": gl})
				p.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}
				if r.Intn(2) == 0 {
					p.Spec.NodeSelector = map[string]string{"team": "red"}
				}
				return p
			}
		case 4, 5: // spread on zone or hostname
			key := scheduling.LabelZone
			if kind == 5 {
				key = scheduling.LabelHostname
			}
			skew := int32(1 + r.Intn(2))
			lbls := map[string]string{"spread": gl}
			proto = func(i int) *corev1.Pod {
				p := mk(i, lbls)
				p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: skew, TopologyKey: key, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: lbls}}}
				return p
			}
		case 6: // zonal self affinity
			lbls := map[string]string{"aff": gl}
			proto = func(i int) *corev1.Pod {
				p := mk(i, lbls)
				p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{LabelSelector: &metav1.LabelSelector{MatchLabels: lbls}, TopologyKey: scheduling.LabelZone}}}}
				return p
			}
		case 7, 8: // anti-affinity on hostname or zone
			key := scheduling.LabelHostname
			if kind == 8 {
				key = scheduling.LabelZone
			}
			lbls := map[string]string{"anti": gl}
			proto = func(i int) *corev1.Pod {
				p := mk(i, lbls)
				p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{LabelSelector: &metav1.LabelSelector{MatchLabels: lbls}, TopologyKey: key}}}}
				return p
			}
		case 9: // host port
			port := int32(pick(r, 80, 443))
			proto = func(i int) *corev1.Pod {
				p := mk(i, map[string]string{"plain": gl})
				p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 8080, HostPort: port}}
				return p
			}
		case 10: // preferences (not checked as hard, but must not break hard ones)
			proto = func(i int) *corev1.Pod {
				p := mk(i, map[string]string{"pref": gl})
				p.Spec.Affinity = &corev1.Affinity{
					NodeAffinity:    &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 5, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: scheduling.LabelZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"zone-c"}}}}}}},
					PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 3, PodAffinityTerm: corev1.PodAffinityTerm{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"pref": gl}}, TopologyKey: scheduling.LabelHostname}}}},
				}
				p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: scheduling.LabelZone, WhenUnsatisfiable: corev1.ScheduleAnyway, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"pref": gl}}}}
				return p
			}
		case 11: // big pods
			proto = func(i int) *corev1.Pod {
				p := mk(i, map[string]string{"plain": gl})
				p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = *resource.NewMilliQuantity(int64(pick(r, 6000, 12000, 20000)), resource.DecimalSI)
				return p
			}
		default: // affinity to an earlier anti/affinity group is too entangled; use capacity-type selector
			proto = func(i int) *corev1.Pod {
				p := mk(i, map[string]string{"plain": gl})
				p.Spec.NodeSelector = map[string]string{scheduling.LabelCapacityType: pick(r, scheduling.CapacityTypeSpot, scheduling.CapacityTypeOnDemand)}
				return p
			}
		}
		for i := 0; i < size; i++ {
			pods = append(pods, proto(i))
		}
	}
	return pods
}

func genExisting(r *rand.Rand, its []*scheduling.InstanceType) []*scheduling.ExistingNode {
	n := r.Intn(4)
	var out []*scheduling.ExistingNode
	for i := 0; i < n; i++ {
		it := its[r.Intn(len(its))]
		name := fmt.Sprintf("node-%d", i)
		lbls := map[string]string{
			scheduling.LabelZone: pick(r, genZones...), scheduling.LabelHostname: name, scheduling.LabelInstanceType: it.Name,
			scheduling.LabelCapacityType: scheduling.CapacityTypeOnDemand, scheduling.LabelNodePool: "pool-0",
		}
		for k, v := range it.Requirements.Labels() {
			lbls[k] = v
		}
		node := &scheduling.ExistingNode{Name: name, Labels: lbls, Allocatable: it.Allocatable(), Initialized: r.Intn(4) != 0}
		if r.Intn(5) == 0 {
			node.Taints = []corev1.Taint{{Key: "dedicated", Value: "batch", Effect: corev1.TaintEffectNoSchedule}}
		}
		if !node.Initialized {
			node.Taints = append(node.Taints, corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule})
		}
		for j := 0; j < r.Intn(3); j++ {
			p := genPod(fmt.Sprintf("bound-%d-%d", i, j), r, map[string]string{"bound": "yes"})
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("100m")
			p.Spec.NodeName = name
			if r.Intn(3) == 0 {
				// repels the "anti" groups of new pods from this node
				p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
					LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "plain", Operator: metav1.LabelSelectorOpExists}}},
					TopologyKey:   scheduling.LabelHostname, NamespaceSelector: &metav1.LabelSelector{},
				}}}}
			}
			node.Pods = append(node.Pods, p)
		}
		out = append(out, node)
	}
	return out
}

func genInput(seed int64) *scheduling.Input {
	r := rand.New(rand.NewSource(seed))
	its := genInstanceTypes(r)
	in := &scheduling.Input{
		NodePools:     genPools(r, its),
		ExistingNodes: genExisting(r, its),
		Pods:          genPodGroups(r),
		Namespaces:    map[string]map[string]string{"default": {"env": "prod"}, "other": {"env": "dev"}},
	}
	if r.Intn(3) == 0 {
		ds := genPod("ds", r, nil)
		ds.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("200m")
		if r.Intn(2) == 0 {
			ds.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 9100, HostPort: 443}}
		}
		in.DaemonSetPods = []*corev1.Pod{ds}
	}
	if r.Intn(4) == 0 {
		in.Options.PreferencePolicy = scheduling.PreferencePolicyIgnore
	}
	// Some pods mount a volume bound to a zone, or an unbound claim whose class allows two zones.
	for i, p := range in.Pods {
		if r.Intn(8) != 0 {
			continue
		}
		name := fmt.Sprintf("vol-%d", i)
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "v", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}})
		claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: name}}
		if r.Intn(2) == 0 {
			claim.Spec.VolumeName = "pv-" + name
			in.PersistentVolumes = append(in.PersistentVolumes, &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-" + name}, Spec: corev1.PersistentVolumeSpec{
				NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
					{Key: scheduling.LabelZone, Operator: corev1.NodeSelectorOpIn, Values: []string{pick(r, genZones...)}}}}}}}}})
		} else {
			class := "two-zones"
			claim.Spec.StorageClassName = &class
		}
		in.PersistentVolumeClaims = append(in.PersistentVolumeClaims, claim)
	}
	in.StorageClasses = []*storagev1.StorageClass{{ObjectMeta: metav1.ObjectMeta{Name: "two-zones"}, AllowedTopologies: []corev1.TopologySelectorTerm{{
		MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{{Key: scheduling.LabelZone, Values: genZones[1:]}}}}}}
	// Some pools insist on a choice of instance types.
	for _, np := range in.NodePools {
		if r.Intn(5) == 0 {
			mv := 1 + r.Intn(3)
			req := scheduling.NewRequirement(scheduling.LabelInstanceType, corev1.NodeSelectorOpExists)
			req.MinValues = &mv
			np.Requirements = np.Requirements.With(req)
		}
	}
	if r.Intn(4) == 0 {
		in.Options.MinValuesPolicy = scheduling.MinValuesPolicyBestEffort
	}
	return in
}

func fingerprint(res *scheduling.Results) string {
	var b strings.Builder
	for _, pl := range res.ExistingNodes {
		fmt.Fprintf(&b, "%s:", pl.Node.Name)
		for _, p := range pl.Pods {
			b.WriteString(p.Name + ",")
		}
		b.WriteString("\n")
	}
	for _, c := range res.NewClaims {
		fmt.Fprintf(&b, "%s %s %.4f %v:", c.Hostname, c.Requirements, c.Price, len(c.InstanceTypes))
		for _, p := range c.Pods {
			b.WriteString(p.Name + ",")
		}
		b.WriteString("\n")
	}
	var errs []string
	for p, err := range res.PodErrors {
		errs = append(errs, p.Name+": "+err.Error())
	}
	sort.Strings(errs)
	b.WriteString(strings.Join(errs, "\n"))
	return b.String()
}

// checkSolve has the independent checker verify res, in's solve, and solves in again for the
// same result.
func checkSolve(t *testing.T, seed int64, in *scheduling.Input, res *scheduling.Results) {
	t.Helper()
	if errs := check(in, res); len(errs) > 0 {
		if len(errs) > 8 {
			errs = errs[:8]
		}
		t.Fatalf("seed %d: %d violations:\n%s\nresult:\n%s", seed, len(errs), strings.Join(errs, "\n"), fingerprint(res))
	}
	if again := scheduling.Solve(in); fingerprint(again) != fingerprint(res) {
		t.Fatalf("seed %d: non-deterministic result", seed)
	}
}

// TestRandomSnapshots solves thousands of generated snapshots and has the independent checker
// verify every hard constraint of every placement, that nothing is over-committed and that
// limits hold; it also asserts determinism and that the generator is not vacuous.
func TestRandomSnapshots(t *testing.T) {
	n := 3000
	if testing.Short() {
		n = 300
	}
	// SCHEDULING_PROPERTY_SEEDS=<first>:<count> explores other seeds (e.g. in a soak run).
	first := int64(0)
	if v := os.Getenv("SCHEDULING_PROPERTY_SEEDS"); v != "" {
		if _, err := fmt.Sscanf(v, "%d:%d", &first, &n); err != nil {
			t.Fatalf("SCHEDULING_PROPERTY_SEEDS=%q: %v", v, err)
		}
	}
	total, placed, claims := 0, 0, 0
	for seed := first; seed < first+int64(n); seed++ {
		in := genInput(seed)
		res := scheduling.Solve(in)
		checkSolve(t, seed, in, res)
		total += len(in.Pods)
		placed += len(in.Pods) - len(res.PodErrors)
		claims += len(res.NewClaims)
	}
	t.Logf("%d snapshots, %d pods, %d placed, %d new claims", n, total, placed, claims)
	if placed < total*6/10 {
		t.Fatalf("only %d of %d pods placed: generator too hostile to test placements", placed, total)
	}
}

// TestRandomSnapshotsRepacked solves the same generated snapshots with Options.Repack: the
// independent checker verifies every placement, the solve stays deterministic, it places the
// same pods as without repacking and never costs more; and on some snapshots it costs less.
func TestRandomSnapshotsRepacked(t *testing.T) {
	n := 3000
	if testing.Short() {
		n = 300
	}
	cheaper := 0
	saved := 0.0
	for seed := int64(0); seed < int64(n); seed++ {
		in := genInput(seed)
		plain := scheduling.Solve(in)
		in.Options.Repack = true
		res := scheduling.Solve(in)
		checkSolve(t, seed, in, res)
		if len(res.PodErrors) != len(plain.PodErrors) {
			t.Fatalf("seed %d: %d pods unplaced with repacking, %d without", seed, len(res.PodErrors), len(plain.PodErrors))
		}
		if res.TotalPrice() > plain.TotalPrice()+1e-9 {
			t.Fatalf("seed %d: repacked $%.4f/h, placed $%.4f/h", seed, res.TotalPrice(), plain.TotalPrice())
		}
		if res.TotalPrice() < plain.TotalPrice()-1e-9 {
			cheaper++
			saved += plain.TotalPrice() - res.TotalPrice()
		}
	}
	t.Logf("%d snapshots, %d cheaper repacked, $%.2f/h saved in all", n, cheaper, saved)
	if cheaper == 0 {
		t.Fatalf("repacking made no snapshot cheaper: the generator does not exercise it")
	}
}
