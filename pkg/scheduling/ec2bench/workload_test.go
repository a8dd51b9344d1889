package ec2bench_test

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/karpenter-go/karpenter/pkg/scheduling/ec2bench"
)

func TestPodsAreDeterministicForASeed(t *testing.T) {
	for _, v := range ec2bench.Variants() {
		a, b := ec2bench.Pods(7, v), ec2bench.Pods(7, v)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: two generations from seed 7 differ", v)
		}
	}
	if reflect.DeepEqual(ec2bench.Deployments(7, ec2bench.Unconstrained), ec2bench.Deployments(8, ec2bench.Unconstrained)) {
		t.Error("seeds 7 and 8 generate the same Deployments")
	}
}

func TestVariantsShareRequestsAndDifferInConstraints(t *testing.T) {
	base := ec2bench.Deployments(3, ec2bench.Unconstrained)
	for _, v := range ec2bench.Variants() {
		ds := ec2bench.Deployments(3, v)
		for i := range ds {
			if ds[i].Replicas != base[i].Replicas || ds[i].MilliCPU != base[i].MilliCPU || ds[i].MemoryBytes != base[i].MemoryBytes {
				t.Fatalf("%s: deployment %d is %+v, unconstrained's is %+v", v, i, ds[i], base[i])
			}
		}
	}
}

func TestRequestRangesAreRespected(t *testing.T) {
	const gib = float64(1 << 30)
	for seed := int64(0); seed < 50; seed++ {
		ds := ec2bench.Deployments(seed, ec2bench.Unconstrained)
		if len(ds) != ec2bench.DeploymentCount {
			t.Fatalf("seed %d: %d deployments, want %d", seed, len(ds), ec2bench.DeploymentCount)
		}
		total := 0
		for _, d := range ds {
			total += d.Replicas
			if d.Replicas < ec2bench.MinReplicas || d.Replicas > ec2bench.MaxReplicas {
				t.Errorf("seed %d %s: %d replicas", seed, d.Name, d.Replicas)
			}
			if d.MilliCPU < ec2bench.MinMilliCPU || d.MilliCPU > ec2bench.MaxMilliCPU {
				t.Errorf("seed %d %s: cpu %dm outside [%d, %d]m", seed, d.Name, d.MilliCPU, ec2bench.MinMilliCPU, ec2bench.MaxMilliCPU)
			}
			perCore := float64(d.MemoryBytes) / gib / (float64(d.MilliCPU) / 1000)
			if perCore < ec2bench.MinGiBPerCore || perCore > ec2bench.MaxGiBPerCore {
				t.Errorf("seed %d %s: %.3f GiB per core outside [%g, %g]", seed, d.Name, perCore, ec2bench.MinGiBPerCore, ec2bench.MaxGiBPerCore)
			}
		}
		if total < 700 || total > 1300 {
			t.Errorf("seed %d: %d pods, want about 1,000", seed, total)
		}
	}
}

func TestRequestsSpanTheRange(t *testing.T) {
	// Log-uniform over two orders of magnitude: both ends of the cpu range are reached.
	var small, large int
	for seed := int64(0); seed < 20; seed++ {
		for _, d := range ec2bench.Deployments(seed, ec2bench.Unconstrained) {
			if d.MilliCPU < 200 {
				small++
			}
			if d.MilliCPU > 1000 {
				large++
			}
		}
	}
	if small == 0 || large == 0 {
		t.Errorf("%d deployments under 200m, %d over 1 cpu: the range is not spanned", small, large)
	}
}

func TestPodsCarryTheirDeploymentsRequestsAndConstraints(t *testing.T) {
	for _, v := range ec2bench.Variants() {
		ds := ec2bench.Deployments(11, v)
		byName := map[string]ec2bench.Deployment{}
		want := 0
		anti := 0
		for _, d := range ds {
			byName[d.Name] = d
			want += d.Replicas
			if d.AntiAffinity {
				anti++
			}
		}
		if v == ec2bench.AntiAffinity && anti != ec2bench.DeploymentCount/ec2bench.AntiAffinityEvery {
			t.Errorf("%s: %d deployments with anti-affinity, want 20%% of %d", v, anti, ec2bench.DeploymentCount)
		}
		if v != ec2bench.AntiAffinity && anti != 0 {
			t.Errorf("%s: %d deployments with anti-affinity, want none", v, anti)
		}
		pods := ec2bench.Pods(11, v)
		if len(pods) != want {
			t.Fatalf("%s: %d pods, want %d", v, len(pods), want)
		}
		for _, p := range pods {
			d, ok := byName[p.Labels["app"]]
			if !ok {
				t.Fatalf("%s: pod %s has app=%q, no deployment", v, p.Name, p.Labels["app"])
			}
			req := p.Spec.Containers[0].Resources.Requests
			if req.Cpu().MilliValue() != d.MilliCPU || req.Memory().Value() != d.MemoryBytes {
				t.Errorf("%s: pod %s requests %v, deployment %+v", v, p.Name, req, d)
			}
			hasAnti := p.Spec.Affinity != nil && p.Spec.Affinity.PodAntiAffinity != nil &&
				len(p.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) == 1 &&
				p.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].TopologyKey == corev1.LabelHostname
			if hasAnti != d.AntiAffinity {
				t.Errorf("%s: pod %s hostname anti-affinity %v, want %v", v, p.Name, hasAnti, d.AntiAffinity)
			}
			hasSpread := len(p.Spec.TopologySpreadConstraints) == 1 && p.Spec.TopologySpreadConstraints[0].TopologyKey == corev1.LabelTopologyZone &&
				p.Spec.TopologySpreadConstraints[0].WhenUnsatisfiable == corev1.DoNotSchedule
			if hasSpread != (v == ec2bench.ZonalSpread) {
				t.Errorf("%s: pod %s zonal spread %v", v, p.Name, hasSpread)
			}
		}
	}
}

func TestNodePoolIsGettingStarted(t *testing.T) {
	cases := map[ec2bench.Variant]struct{ arch, capacity []string }{
		ec2bench.Unconstrained: {[]string{"amd64"}, []string{"on-demand"}},
		ec2bench.MultiArch:     {[]string{"amd64", "arm64"}, []string{"on-demand"}},
		ec2bench.SpotOnDemand:  {[]string{"amd64"}, []string{"on-demand", "spot"}},
	}
	for v, want := range cases {
		np := ec2bench.NodePool(v, nil)
		for key, values := range map[string][]string{
			corev1.LabelArchStable:                want.arch,
			"karpenter.sh/capacity-type":          want.capacity,
			"karpenter.k8s.aws/instance-category": {"c", "m", "r"},
			corev1.LabelOSStable:                  {"linux"},
		} {
			r, ok := np.Requirements.Get(key)
			if !ok || !reflect.DeepEqual(r.Values(), values) {
				t.Errorf("%s: %s is %v, want %v", v, key, r.Values(), values)
			}
		}
		for _, gen := range []struct {
			v  string
			ok bool
		}{{"2", false}, {"3", true}, {"8", true}} {
			if got := np.Requirements.Has("karpenter.k8s.aws/instance-generation", gen.v); got != gen.ok {
				t.Errorf("%s: generation %s admitted %v, want %v", v, gen.v, got, gen.ok)
			}
		}
	}
}
