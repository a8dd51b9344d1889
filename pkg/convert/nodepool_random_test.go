package convert_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1beta1"
	"github.com/karpenter-go/karpenter/pkg/apis/status"
	"github.com/karpenter-go/karpenter/pkg/convert"
)

// coreGen builds random karpenter.sh NodePools and NodeClaims that are valid
// for their version's schema, in the shape the apiserver hands a conversion
// webhook: decoded from JSON (durations keep their spelling, times have
// second precision), absent lists and maps nil.
type coreGen struct{ r *rand.Rand }

func newCoreGen(seed uint64) *coreGen {
	return &coreGen{r: rand.New(rand.NewPCG(seed, seed*0x2545f4914f6cdd1d+1))}
}

func (g *coreGen) coin() bool              { return g.r.IntN(2) == 0 }
func (g *coreGen) pick(s ...string) string { return s[g.r.IntN(len(s))] }
func (g *coreGen) word() string {
	const letters = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 1+g.r.IntN(8))
	for i := range b {
		b[i] = letters[g.r.IntN(len(letters))]
	}
	b[0] = 'a' + byte(g.r.IntN(26))
	return string(b)
}

func (g *coreGen) stringMap(max int, key func() string) map[string]string {
	n := g.r.IntN(max + 1)
	if n == 0 {
		return nil
	}
	m := map[string]string{}
	for range n {
		m[key()] = g.word()
	}
	return m
}

// duration returns a NillableDuration as decoded from JSON.
func (g *coreGen) duration(neverOK bool) v1.NillableDuration {
	choices := []string{"0s", "30s", "5m", "1h", "720h", "1440h", "2h30m", "90m", "720h0m0s"}
	if neverOK && g.r.IntN(5) == 0 {
		return v1.MustParseNillableDuration("Never")
	}
	return v1.MustParseNillableDuration(g.pick(choices...))
}

func (g *coreGen) metaDuration(choices ...string) *metav1.Duration {
	d, err := time.ParseDuration(g.pick(choices...))
	if err != nil {
		panic(err)
	}
	return &metav1.Duration{Duration: d}
}

func (g *coreGen) time() metav1.Time {
	return metav1.NewTime(time.Unix(1_700_000_000+g.r.Int64N(100_000_000), 0))
}

func (g *coreGen) meta() metav1.ObjectMeta {
	m := metav1.ObjectMeta{
		Name:            g.word(),
		UID:             types.UID(fmt.Sprintf("uid-%d", g.r.Int64())),
		ResourceVersion: fmt.Sprint(g.r.IntN(100000)),
		Generation:      g.r.Int64N(10),
		Labels:          g.stringMap(3, func() string { return "example.com/" + g.word() }),
		Annotations:     g.stringMap(3, func() string { return "example.com/" + g.word() }),
	}
	if g.coin() {
		m.Finalizers = []string{v1.TerminationFinalizer}
	}
	return m
}

func (g *coreGen) taints() []corev1.Taint {
	n := g.r.IntN(3)
	if n == 0 {
		return nil
	}
	out := make([]corev1.Taint, n)
	for i := range out {
		out[i] = corev1.Taint{Key: "example.com/" + g.word(), Effect: corev1.TaintEffect(g.pick("NoSchedule", "PreferNoSchedule", "NoExecute"))}
		if g.coin() {
			out[i].Value = g.word()
		}
	}
	return out
}

func (g *coreGen) requirements() []v1.NodeSelectorRequirementWithMinValues {
	n := g.r.IntN(5)
	out := make([]v1.NodeSelectorRequirementWithMinValues, n)
	for i := range out {
		r := v1.NodeSelectorRequirementWithMinValues{Key: g.pick("karpenter.sh/capacity-type", "topology.kubernetes.io/zone", "karpenter.k8s.aws/instance-family", "example.com/"+g.word())}
		switch g.r.IntN(4) {
		case 0:
			r.Operator = corev1.NodeSelectorOpIn
			r.Values = []string{g.word(), g.word(), g.word()}
			if g.coin() {
				r.MinValues = ptr.To(1 + g.r.IntN(3))
			}
		case 1:
			r.Operator = corev1.NodeSelectorOpNotIn
			r.Values = []string{g.word()}
		case 2:
			r.Operator = corev1.NodeSelectorOperator(g.pick("Exists", "DoesNotExist"))
		default:
			r.Operator = corev1.NodeSelectorOperator(g.pick("Gt", "Lt"))
			r.Values = []string{fmt.Sprint(g.r.IntN(100))}
		}
		out[i] = r
	}
	if n == 0 && g.coin() {
		return nil
	}
	return out
}

func (g *coreGen) resources() corev1.ResourceList {
	if g.coin() {
		return nil
	}
	return corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse(g.pick("1", "2", "500m", "16")),
		corev1.ResourceMemory: resource.MustParse(g.pick("1Gi", "100Mi", "64Gi")),
	}
}

func (g *coreGen) conditions() []status.Condition {
	n := g.r.IntN(3)
	if n == 0 {
		return nil
	}
	out := make([]status.Condition, n)
	for i := range out {
		out[i] = status.Condition{Type: g.pick("Ready", "Launched", "Drifted", "NodeClassReady"), Status: metav1.ConditionStatus(g.pick("True", "False", "Unknown")),
			ObservedGeneration: g.r.Int64N(5), LastTransitionTime: g.time(), Reason: g.pick("Ready", "NotReady", "Drifted"), Message: g.word()}
	}
	return out
}

func (g *coreGen) v1beta1Ref() *v1beta1.NodeClassReference {
	return &v1beta1.NodeClassReference{
		Name:       g.word(),
		Kind:       g.pick("", "EC2NodeClass", "KWOKNodeClass", "Custom"),
		APIVersion: g.pick("", "karpenter.k8s.aws/v1beta1", "karpenter.k8s.aws/v1", "karpenter.kwok.sh/v1alpha1", "example.com/v2"),
	}
}

func (g *coreGen) kubelet() *v1beta1.KubeletConfiguration {
	if g.coin() {
		return nil
	}
	k := &v1beta1.KubeletConfiguration{}
	if g.coin() {
		k.ClusterDNS = []string{"10.0.0.10"}
	}
	if g.coin() {
		k.MaxPods = ptr.To(int32(g.r.IntN(250)))
	}
	if g.coin() {
		k.SystemReserved = map[string]string{"cpu": "100m", "memory": "100Mi"}
	}
	if g.coin() {
		k.EvictionSoft = map[string]string{"memory.available": "500Mi"}
		k.EvictionSoftGracePeriod = map[string]metav1.Duration{"memory.available": *g.metaDuration("1m", "90s", "2m")}
	}
	if g.coin() {
		k.ImageGCHighThresholdPercent, k.ImageGCLowThresholdPercent = ptr.To(int32(85)), ptr.To(int32(80))
	}
	if g.coin() {
		k.CPUCFSQuota = ptr.To(g.coin())
	}
	return k
}

func (g *coreGen) schedule(b *v1beta1.Budget) {
	if g.coin() {
		b.Schedule = ptr.To(g.pick("@daily", "0 9 * * mon-fri", "*/30 * * * *"))
		b.Duration = g.metaDuration("1h", "30m", "1h30m")
	}
}

// V1beta1NodePool returns a random valid v1beta1 NodePool.
func (g *coreGen) V1beta1NodePool() *v1beta1.NodePool {
	np := &v1beta1.NodePool{
		TypeMeta:   metav1.TypeMeta{APIVersion: "karpenter.sh/v1beta1", Kind: "NodePool"},
		ObjectMeta: g.meta(),
	}
	s := &np.Spec
	s.Template.ObjectMeta = v1.ObjectMeta{
		Labels:      g.stringMap(3, func() string { return "example.com/" + g.word() }),
		Annotations: g.stringMap(2, g.word),
	}
	s.Template.Spec = v1beta1.NodeClaimSpec{
		Taints: g.taints(), StartupTaints: g.taints(), Requirements: g.requirements(),
		Kubelet: g.kubelet(), NodeClassRef: g.v1beta1Ref(),
	}
	s.Disruption.ExpireAfter = g.duration(true)
	if g.coin() {
		s.Disruption.ConsolidationPolicy = v1beta1.ConsolidationPolicyWhenEmpty
		d := g.duration(true)
		s.Disruption.ConsolidateAfter = &d
	} else {
		s.Disruption.ConsolidationPolicy = v1beta1.ConsolidationPolicyWhenUnderutilized
		if g.r.IntN(4) == 0 {
			d := v1.MustParseNillableDuration("Never")
			s.Disruption.ConsolidateAfter = &d
		}
	}
	if g.coin() {
		s.Disruption.Budgets = make([]v1beta1.Budget, 1+g.r.IntN(3))
		for i := range s.Disruption.Budgets {
			s.Disruption.Budgets[i].Nodes = g.pick("10%", "0", "5", "100%")
			g.schedule(&s.Disruption.Budgets[i])
		}
	}
	if l := g.resources(); l != nil {
		s.Limits = v1beta1.Limits(l)
	}
	if g.coin() {
		s.Weight = ptr.To(int32(1 + g.r.IntN(100)))
	}
	np.Status = v1beta1.NodePoolStatus{Resources: g.resources(), Conditions: g.conditions()}
	return np
}

// V1NodePool returns a random valid v1 NodePool, sometimes carrying the
// compatibility annotations that conversion from v1beta1 writes.
func (g *coreGen) V1NodePool() *v1.NodePool {
	np := &v1.NodePool{
		TypeMeta:   metav1.TypeMeta{APIVersion: "karpenter.sh/v1", Kind: "NodePool"},
		ObjectMeta: g.meta(),
	}
	s := &np.Spec
	s.Template.ObjectMeta = v1.ObjectMeta{
		Labels:      g.stringMap(3, func() string { return "example.com/" + g.word() }),
		Annotations: g.stringMap(2, g.word),
	}
	s.Template.Spec = v1.NodeClaimTemplateSpec{
		Taints: g.taints(), StartupTaints: g.taints(), Requirements: g.requirements(),
		NodeClassRef: &v1.NodeClassReference{Name: g.word(), Kind: g.pick("EC2NodeClass", "KWOKNodeClass"), Group: g.pick("karpenter.k8s.aws", "karpenter.kwok.sh", "example.com")},
		ExpireAfter:  g.duration(true),
	}
	if g.coin() {
		s.Template.Spec.TerminationGracePeriod = g.metaDuration("30s", "1h", "48h")
	}
	g.v1CompatAnnotations(&np.ObjectMeta, &s.Template.Spec.NodeClassRef)
	s.Disruption.ConsolidationPolicy = v1.ConsolidationPolicy(g.pick("WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced"))
	s.Disruption.ConsolidateAfter = g.duration(true)
	if g.coin() {
		s.Disruption.Budgets = make([]v1.Budget, 1+g.r.IntN(3))
		for i := range s.Disruption.Budgets {
			b := v1beta1.Budget{Nodes: g.pick("10%", "0", "5", "100%")}
			g.schedule(&b)
			s.Disruption.Budgets[i] = v1.Budget{Nodes: b.Nodes, Schedule: b.Schedule, Duration: b.Duration}
			if g.coin() {
				s.Disruption.Budgets[i].Reasons = []v1.DisruptionReason{v1.DisruptionReason(g.pick("Underutilized", "Empty", "Drifted", "Unhealthy"))}
			}
		}
	}
	if l := g.resources(); l != nil {
		s.Limits = v1.Limits(l)
	}
	if g.coin() {
		s.Weight = ptr.To(int32(1 + g.r.IntN(100)))
	} else if g.coin() {
		s.Replicas = ptr.To(int64(g.r.IntN(10)))
	}
	np.Status = v1.NodePoolStatus{Resources: g.resources(), Conditions: g.conditions()}
	return np
}

// v1CompatAnnotations sometimes makes the object look like one converted from
// v1beta1: a kubelet annotation and a nodeClassRef whose v1beta1 spelling had
// to be kept in an annotation.
func (g *coreGen) v1CompatAnnotations(meta *metav1.ObjectMeta, ref **v1.NodeClassReference) {
	set := func(k, v string) {
		if meta.Annotations == nil {
			meta.Annotations = map[string]string{}
		}
		meta.Annotations[k] = v
	}
	if k := g.kubelet(); k != nil {
		b, _ := json.Marshal(k)
		set(v1.KubeletCompatibilityAnnotationKey, string(b))
	}
	if g.r.IntN(3) == 0 {
		orig := &v1beta1.NodeClassReference{Name: g.word()}
		np := &v1beta1.NodePool{Spec: v1beta1.NodePoolSpec{Template: v1beta1.NodeClaimTemplate{Spec: v1beta1.NodeClaimSpec{NodeClassRef: orig}}}}
		np.Spec.Disruption.ConsolidationPolicy = v1beta1.ConsolidationPolicyWhenUnderutilized
		conv, err := convert.NodePoolV1beta1ToV1(np)
		if err != nil {
			panic(err)
		}
		*ref = conv.Spec.Template.Spec.NodeClassRef
		set(v1.NodeClassReferenceAnnotationKey, conv.Annotations[v1.NodeClassReferenceAnnotationKey])
	}
}

// V1beta1NodeClaim returns a random valid v1beta1 NodeClaim.
func (g *coreGen) V1beta1NodeClaim() *v1beta1.NodeClaim {
	nodeClaim := &v1beta1.NodeClaim{
		TypeMeta:   metav1.TypeMeta{APIVersion: "karpenter.sh/v1beta1", Kind: "NodeClaim"},
		ObjectMeta: g.meta(),
		Spec: v1beta1.NodeClaimSpec{
			Taints: g.taints(), StartupTaints: g.taints(), Requirements: g.requirements(),
			Resources: v1beta1.ResourceRequirements{Requests: g.resources()},
			Kubelet:   g.kubelet(), NodeClassRef: g.v1beta1Ref(),
		},
	}
	nodeClaim.Status = v1beta1.NodeClaimStatus{Capacity: g.resources(), Allocatable: g.resources(), Conditions: g.conditions()}
	if g.coin() {
		nodeClaim.Status.NodeName, nodeClaim.Status.ProviderID, nodeClaim.Status.ImageID = g.word(), "aws:///us-west-2a/i-"+g.word(), "ami-"+g.word()
	}
	return nodeClaim
}

// V1NodeClaim returns a random valid v1 NodeClaim.
func (g *coreGen) V1NodeClaim() *v1.NodeClaim {
	nodeClaim := &v1.NodeClaim{
		TypeMeta:   metav1.TypeMeta{APIVersion: "karpenter.sh/v1", Kind: "NodeClaim"},
		ObjectMeta: g.meta(),
		Spec: v1.NodeClaimSpec{
			Taints: g.taints(), StartupTaints: g.taints(), Requirements: g.requirements(),
			Resources:    v1.ResourceRequirements{Requests: g.resources()},
			NodeClassRef: &v1.NodeClassReference{Name: g.word(), Kind: g.pick("EC2NodeClass", "KWOKNodeClass"), Group: g.pick("karpenter.k8s.aws", "karpenter.kwok.sh", "example.com")},
			ExpireAfter:  g.duration(true),
		},
	}
	if g.coin() {
		nodeClaim.Spec.TerminationGracePeriod = g.metaDuration("30s", "1h", "48h")
	}
	g.v1CompatAnnotations(&nodeClaim.ObjectMeta, &nodeClaim.Spec.NodeClassRef)
	nodeClaim.Status = v1.NodeClaimStatus{Capacity: g.resources(), Allocatable: g.resources(), Conditions: g.conditions()}
	if g.coin() {
		nodeClaim.Status.NodeName, nodeClaim.Status.ProviderID, nodeClaim.Status.ImageID = g.word(), "kwok://"+g.word(), "ami-"+g.word()
		nodeClaim.Status.LastPodEventTime = g.time()
	}
	return nodeClaim
}
