package scheduling_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/karpenter-go/karpenter/pkg/scheduling"
	"github.com/karpenter-go/karpenter/pkg/test/fixtures"
)

// TestCheckerCatchesViolations makes sure the independent checker is not vacuous: each
// tampering of a valid result must be reported.
func TestCheckerCatchesViolations(t *testing.T) {
	web := withLabels("app", "web")
	base := func() (*scheduling.Input, *scheduling.Results) {
		np := pool("default", func(np *scheduling.NodePool) { np.Remaining = rl("cpu", "100") })
		in := &scheduling.Input{NodePools: []*scheduling.NodePool{np}, Pods: append(append(
			pods(2, "anti", "1", "1Gi", web, fixtures.WithPodAntiAffinity(affTerm(hostKey, sel("app", "web")))),
			pods(1, "zonal", "100m", "100Mi", withSelector(zoneKey, "us-west-2a"))...),
			pods(1, "port", "100m", "100Mi", fixtures.WithHostPort(80, "", ""))...)}
		return in, scheduling.Solve(in)
	}
	in, res := base()
	if errs := check(in, res); len(errs) != 0 {
		t.Fatalf("untampered result fails: %v", errs)
	}
	cases := []struct {
		name   string
		tamper func(in *scheduling.Input, r *scheduling.Results)
		want   string
	}{
		{"anti-affinity pods together", func(in *scheduling.Input, r *scheduling.Results) {
			var a, b *scheduling.NewClaim
			for _, c := range r.NewClaims {
				for _, p := range c.Pods {
					if strings.HasPrefix(p.Name, "anti") {
						if a == nil {
							a = c
						} else {
							b = c
						}
					}
				}
			}
			for i, p := range b.Pods {
				if strings.HasPrefix(p.Name, "anti") {
					a.Pods = append(a.Pods, p)
					b.Pods = append(b.Pods[:i], b.Pods[i+1:]...)
					break
				}
			}
		}, "anti-affinity"},
		{"pod dropped silently", func(in *scheduling.Input, r *scheduling.Results) {
			r.NewClaims[0].Pods = r.NewClaims[0].Pods[1:]
		}, "neither placed nor reported"},
		{"pod placed twice", func(in *scheduling.Input, r *scheduling.Results) {
			r.NewClaims[1].Pods = append(r.NewClaims[1].Pods, r.NewClaims[0].Pods[0])
		}, "placed 2 times"},
		{"overcommitted claim", func(in *scheduling.Input, r *scheduling.Results) {
			big := mkPod("big", "60", "1Gi")
			in.Pods = append(in.Pods, big)
			r.NewClaims[0].Pods = append(r.NewClaims[0].Pods, big)
		}, "overcommitted"},
		{"wrong zone", func(in *scheduling.Input, r *scheduling.Results) {
			for _, c := range r.NewClaims {
				for _, p := range c.Pods {
					if p.Name == "zonal-0" {
						c.Requirements = scheduling.NewRequirements(append(withoutKey(c.Requirements, zoneKey), scheduling.NewRequirement(zoneKey, corev1.NodeSelectorOpIn, "us-west-2b"))...)
					}
				}
			}
		}, "nodeSelector topology.kubernetes.io/zone=us-west-2a"},
		{"host port conflict", func(in *scheduling.Input, r *scheduling.Results) {
			p2 := mkPod("port2", "100m", "100Mi", fixtures.WithHostPort(80, "", ""))
			in.Pods = append(in.Pods, p2)
			for _, c := range r.NewClaims {
				for _, p := range c.Pods {
					if p.Name == "port-0" {
						c.Pods = append(c.Pods, p2)
						return
					}
				}
			}
		}, "host port"},
		{"limits exceeded", func(in *scheduling.Input, r *scheduling.Results) {
			in.NodePools[0].Remaining = rl("cpu", "1")
		}, "limit"},
		{"claim without types", func(in *scheduling.Input, r *scheduling.Results) {
			r.NewClaims[0].InstanceTypes = nil
		}, "no instance types"},
		{"wrong price", func(in *scheduling.Input, r *scheduling.Results) {
			r.NewClaims[0].Price += 1
		}, "price"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in, res := base()
			c.tamper(in, res)
			errs := check(in, res)
			if !strings.Contains(strings.Join(errs, "\n"), c.want) {
				t.Fatalf("checker missed %q: %v", c.want, errs)
			}
		})
	}
}

func withoutKey(r scheduling.Requirements, key string) []scheduling.Requirement {
	var out []scheduling.Requirement
	for _, x := range r.All() {
		if x.Key != key {
			out = append(out, x)
		}
	}
	return out
}
