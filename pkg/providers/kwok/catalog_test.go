package kwok_test

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	kwokv1alpha1 "github.com/karpenter-go/karpenter/pkg/apis/kwok/v1alpha1"
	"github.com/karpenter-go/karpenter/pkg/providers/kwok"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

func TestEmbeddedCatalogShape(t *testing.T) {
	catalog, err := kwok.LoadInstanceTypes("")
	if err != nil {
		t.Fatal(err)
	}
	if len(catalog) != 144 {
		t.Fatalf("expected 144 instance types (12 sizes x 3 families x 2 arches x 2 OSes), got %d", len(catalog))
	}
	families, arches, oses, cpus := map[string]bool{}, map[string]bool{}, map[corev1.OSName]bool{}, map[int64]bool{}
	for _, it := range catalog {
		families[it.Name[:1]] = true
		arches[it.Architecture] = true
		for _, os := range it.OperatingSystems {
			oses[os] = true
		}
		cpu := it.Resources.Cpu().Value()
		cpus[cpu] = true
		if len(it.Offerings) != 8 {
			t.Fatalf("%s: expected 8 offerings (4 zones x spot/on-demand), got %d", it.Name, len(it.Offerings))
		}
		onDemand := map[string]float64{}
		spot := map[string]float64{}
		for _, o := range it.Offerings {
			if !o.Available {
				t.Fatalf("%s: offering %s/%s unavailable", it.Name, o.Zone(), o.CapacityType())
			}
			switch o.CapacityType() {
			case v1.CapacityTypeOnDemand:
				onDemand[o.Zone()] = o.Price
			case v1.CapacityTypeSpot:
				spot[o.Zone()] = o.Price
			}
		}
		for _, z := range kwok.Zones {
			if math.Abs(spot[z]-0.7*onDemand[z]) > 1e-9 || onDemand[z] <= 0 {
				t.Fatalf("%s in %s: spot %v is not 70%% of on-demand %v", it.Name, z, spot[z], onDemand[z])
			}
		}
		wantOnDemand := 0.025*float64(cpu) + 0.001*float64(it.Resources.Memory().Value())/1e9
		if math.Abs(onDemand[kwok.Zones[0]]-wantOnDemand) > 1e-9 {
			t.Fatalf("%s: on-demand price %v, want %v", it.Name, onDemand[kwok.Zones[0]], wantOnDemand)
		}
	}
	if len(families) != 3 || !families["c"] || !families["s"] || !families["m"] {
		t.Fatalf("families %v", families)
	}
	if len(arches) != 2 || !arches["amd64"] || !arches["arm64"] || len(oses) != 2 || !oses[corev1.Linux] || !oses[corev1.Windows] {
		t.Fatalf("arches %v oses %v", arches, oses)
	}
	if !cpus[1] || !cpus[256] || len(cpus) != 12 {
		t.Fatalf("cpus %v", cpus)
	}
}

func TestInstanceTypesFilePathOverridesTheEmbeddedCatalog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "types.json")
	const one = `[{"name":"tiny-1x-amd64-linux","architecture":"amd64","operatingSystems":["linux"],
	  "resources":{"cpu":"1","memory":"1Gi"},
	  "offerings":[{"Price":0.5,"Available":false,"Requirements":[
	    {"key":"karpenter.sh/capacity-type","operator":"In","values":["on-demand"]},
	    {"key":"topology.kubernetes.io/zone","operator":"In","values":["zone-x"]}]}]}]`
	if err := os.WriteFile(path, []byte(one), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(kwok.InstanceTypesFilePathEnv, path)
	catalog, err := kwok.LoadInstanceTypesFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if len(catalog) != 1 || catalog[0].Name != "tiny-1x-amd64-linux" || catalog[0].Offerings[0].Zone() != "zone-x" {
		t.Fatalf("override not loaded: %+v", catalog)
	}
	cp := kwok.New(t.Context(), nil, nil, catalog)
	its, _ := cp.GetInstanceTypes(t.Context(), nil)
	if len(its) != 1 {
		t.Fatalf("expected one instance type, got %d", len(its))
	}
	it := its[0]
	// Pods default to 110; every offering is made available; labels derived from the name.
	if it.Capacity.Pods().Value() != 110 || !it.Offerings[0].Available {
		t.Fatalf("defaults not applied: pods %v available %v", it.Capacity.Pods(), it.Offerings[0].Available)
	}
	if !it.Requirements.Has("karpenter.kwok.sh/instance-family", "tiny") || !it.Requirements.Has("karpenter.kwok.sh/instance-memory", "1Gi") {
		t.Fatalf("derived labels missing: %s", it.Requirements)
	}
	if a := it.Allocatable(); a.Cpu().MilliValue() != 900 {
		t.Fatalf("allocatable cpu should be capacity minus 100m kube-reserved, got %v", a.Cpu())
	}

	for name, bad := range map[string]string{
		"not json":  `{`,
		"empty":     `[]`,
		"duplicate": `[{"name":"a"},{"name":"a"}]`,
		"zoneless":  `[{"name":"a","offerings":[{"Price":1,"Available":true,"Requirements":[]}]}]`,
	} {
		if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := kwok.LoadInstanceTypes(path); err == nil {
			t.Errorf("%s catalog was accepted", name)
		}
	}
	if _, err := kwok.LoadInstanceTypes(filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Error("missing file was accepted")
	}
}

// The provider's labels take upstream KWOK's values: instance-size is the size
// of an AWS-style name ("m5.large" gives "large") and otherwise the vCPU count,
// instance-family the name up to its first "." or "-" (else its first
// character), instance-cpu and instance-memory the catalog's quantities as
// Kubernetes prints them.
func TestInstanceTypeLabelsTakeUpstreamKWOKValues(t *testing.T) {
	embedded, err := kwok.LoadInstanceTypes("")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "types.json")
	const custom = `[
	  {"name":"m5.large","architecture":"amd64","operatingSystems":["linux"],"resources":{"cpu":"2","memory":"8Gi"}},
	  {"name":"c6g.12xlarge","architecture":"arm64","operatingSystems":["linux"],"resources":{"cpu":"48","memory":"96Gi"}},
	  {"name":"n2-standard-8","architecture":"amd64","operatingSystems":["linux"],"resources":{"cpu":"8","memory":"32768Mi"}},
	  {"name":"Standard_D4s_v3","architecture":"amd64","operatingSystems":["windows"],"resources":{"cpu":"4","memory":"16Gi"}},
	  {"name":"t3.weird","architecture":"amd64","operatingSystems":["linux"],"resources":{"cpu":"500m","memory":"512Mi"}}
	]`
	if err := os.WriteFile(path, []byte(custom), 0o644); err != nil {
		t.Fatal(err)
	}
	customCatalog, err := kwok.LoadInstanceTypes(path)
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]*scheduling.InstanceType{}
	for _, catalog := range [][]kwok.InstanceTypeOptions{embedded, customCatalog} {
		its, _ := kwok.New(t.Context(), nil, nil, catalog).GetInstanceTypes(t.Context(), nil)
		for _, it := range its {
			types[it.Name] = it
		}
	}
	for name, want := range map[string][4]string{ // size, family, cpu, memory
		"c-1x-amd64-linux":     {"1", "c", "1", "2Gi"},
		"c-16x-amd64-linux":    {"16", "c", "16", "32Gi"},
		"s-48x-arm64-windows":  {"48", "s", "48", "192Gi"},
		"m-128x-arm64-linux":   {"128", "m", "128", "1Ti"},
		"m-256x-amd64-windows": {"256", "m", "256", "2Ti"},
		"m5.large":             {"large", "m5", "2", "8Gi"},
		"c6g.12xlarge":         {"12xlarge", "c6g", "48", "96Gi"},
		"n2-standard-8":        {"8", "n2", "8", "32Gi"},
		"Standard_D4s_v3":      {"4", "S", "4", "16Gi"},
		"t3.weird":             {"500m", "t3", "500m", "512Mi"},
	} {
		it, ok := types[name]
		if !ok {
			t.Errorf("no instance type %s", name)
			continue
		}
		for i, key := range []string{kwokv1alpha1.InstanceSizeLabelKey, kwokv1alpha1.InstanceFamilyLabelKey, kwokv1alpha1.InstanceCPULabelKey, kwokv1alpha1.InstanceMemoryLabelKey} {
			r, found := it.Requirements.Get(key)
			got, single := r.Single()
			if !found || !single || r.Operator() != corev1.NodeSelectorOpIn || got != want[i] {
				t.Errorf("%s: %s is %s, want In [%s]", name, key, r, want[i])
			}
		}
	}

	// A NodePool admitting sizes below 32 (as upstream's KWOK suites write theirs)
	// admits the 16 vCPU types and not the 32 vCPU ones.
	below32 := scheduling.NewRequirements(scheduling.NewRequirement(kwokv1alpha1.InstanceSizeLabelKey, corev1.NodeSelectorOpLt, "32"))
	if err := types["c-16x-amd64-linux"].Requirements.Intersects(below32); err != nil {
		t.Errorf("instance-size Lt 32 rejects c-16x-amd64-linux: %v", err)
	}
	if err := types["c-32x-amd64-linux"].Requirements.Intersects(below32); err == nil {
		t.Error("instance-size Lt 32 admits c-32x-amd64-linux")
	}
}

// The embedded catalog lists its types in upstream KWOK's order: by vCPUs, then
// family (c, s, m), operating system (linux, windows), architecture (amd64, arm64).
func TestEmbeddedCatalogOrder(t *testing.T) {
	catalog, err := kwok.LoadInstanceTypes("")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, it := range catalog[:8] {
		got = append(got, it.Name)
	}
	want := []string{"c-1x-amd64-linux", "c-1x-arm64-linux", "c-1x-amd64-windows", "c-1x-arm64-windows",
		"s-1x-amd64-linux", "s-1x-arm64-linux", "s-1x-amd64-windows", "s-1x-arm64-windows"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("catalog starts %v, want %v", got, want)
	}
	if last := catalog[len(catalog)-1].Name; last != "m-256x-arm64-windows" {
		t.Fatalf("catalog ends with %s, want m-256x-arm64-windows", last)
	}
}
