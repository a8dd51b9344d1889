package kwok

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	kwokv1alpha1 "github.com/karpenter-go/karpenter/pkg/apis/kwok/v1alpha1"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// InstanceTypesFilePathEnv names the environment variable (flag
// --instance-types-file-path) that replaces the embedded catalog with a file in
// the same JSON shape.
const InstanceTypesFilePathEnv = "INSTANCE_TYPES_FILE_PATH"

// Zones the embedded catalog offers every instance type in.
var Zones = []string{"test-zone-a", "test-zone-b", "test-zone-c", "test-zone-d"}

//go:generate go run ./tools/gen -out instance_types.json

//go:embed instance_types.json
var embeddedCatalog []byte

// InstanceTypeOptions is one entry of the catalog, in upstream KWOK's JSON
// shape, so catalogs written for upstream load unchanged.
type InstanceTypeOptions struct {
	Name             string              `json:"name"`
	Offerings        []OfferingOptions   `json:"offerings"`
	Architecture     string              `json:"architecture"`
	OperatingSystems []corev1.OSName     `json:"operatingSystems"`
	Resources        corev1.ResourceList `json:"resources"`
}

// OfferingOptions is one way to buy an instance type. Zone and capacity type
// are requirements (keys topology.kubernetes.io/zone and karpenter.sh/capacity-type).
// The field names are capitalised in the JSON, as upstream writes them.
type OfferingOptions struct {
	Price        float64                          `json:"Price"`
	Available    bool                             `json:"Available"`
	Requirements []corev1.NodeSelectorRequirement `json:"Requirements"`
}

// Zone returns the single zone the offering requires, or "".
func (o OfferingOptions) Zone() string { return o.single(corev1.LabelTopologyZone) }

// CapacityType returns the single capacity type the offering requires, or "".
func (o OfferingOptions) CapacityType() string { return o.single(v1.CapacityTypeLabelKey) }

func (o OfferingOptions) single(key string) string {
	for _, r := range o.Requirements {
		if r.Key == key && r.Operator == corev1.NodeSelectorOpIn && len(r.Values) == 1 {
			return r.Values[0]
		}
	}
	return ""
}

// LoadInstanceTypes reads the catalog at path, or the embedded one when path
// is empty.
func LoadInstanceTypes(path string) ([]InstanceTypeOptions, error) {
	data := embeddedCatalog
	if path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("reading instance types from %s: %w", path, err)
		}
		data = b
	}
	var out []InstanceTypeOptions
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("parsing instance types: %w", err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("instance type catalog is empty")
	}
	seen := map[string]bool{}
	for _, it := range out {
		if it.Name == "" {
			return nil, fmt.Errorf("instance type without a name")
		}
		if seen[it.Name] {
			return nil, fmt.Errorf("instance type %q listed twice", it.Name)
		}
		seen[it.Name] = true
		for _, o := range it.Offerings {
			if o.Zone() == "" || o.CapacityType() == "" {
				return nil, fmt.Errorf("instance type %q has an offering without a single zone and capacity type", it.Name)
			}
		}
	}
	return out, nil
}

// LoadInstanceTypesFromEnv loads the file INSTANCE_TYPES_FILE_PATH names, or
// the embedded catalog when it is unset.
func LoadInstanceTypesFromEnv() ([]InstanceTypeOptions, error) {
	return LoadInstanceTypes(os.Getenv(InstanceTypesFilePathEnv))
}

// Overhead every simulated node reserves for the kubelet, so that allocatable
// is smaller than capacity as on real nodes.
var kubeReserved = corev1.ResourceList{
	corev1.ResourceCPU:    resource.MustParse("100m"),
	corev1.ResourceMemory: resource.MustParse("10Mi"),
}

// defaultPods is the pod capacity of an entry that does not state one.
const defaultPods = 110

// awsTypeName matches names in AWS's "<family>.<size>" form, whose size the
// instance-size label carries.
var awsTypeName = regexp.MustCompile(`^\w+\.(nano|micro|small|medium|large|\d*xlarge|metal)$`)

// instanceSize is the karpenter.kwok.sh/instance-size value of a type: the size
// of an AWS-style name (m5.large gives "large"), otherwise its vCPU count as
// the catalog writes it (c-16x-amd64-linux with 16 vCPUs gives "16").
func instanceSize(name, cpu string) string {
	if m := awsTypeName.FindStringSubmatch(name); m != nil {
		return m[1]
	}
	return cpu
}

// instanceFamily is the karpenter.kwok.sh/instance-family value of a type: the
// name up to its first "." or "-" (c-16x-amd64-linux gives "c", m5.large
// "m5", n2-standard-8 "n2"), or its first character when it has neither.
func instanceFamily(name string) string {
	if name == "" {
		return ""
	}
	if i := strings.IndexAny(name, ".-"); i >= 0 {
		return name[:i]
	}
	return name[:1]
}

// instanceTypeLabels are the provider's four labels of a catalog entry. The cpu
// and memory values are the entry's quantities as Kubernetes prints them ("16",
// "32Gi", "2Ti"), empty when the entry states none.
func instanceTypeLabels(o InstanceTypeOptions) map[string]string {
	var cpu, memory string
	if q, ok := o.Resources[corev1.ResourceCPU]; ok {
		cpu = q.String()
	}
	if q, ok := o.Resources[corev1.ResourceMemory]; ok {
		memory = q.String()
	}
	return map[string]string{
		kwokv1alpha1.InstanceSizeLabelKey:   instanceSize(o.Name, cpu),
		kwokv1alpha1.InstanceFamilyLabelKey: instanceFamily(o.Name),
		kwokv1alpha1.InstanceCPULabelKey:    cpu,
		kwokv1alpha1.InstanceMemoryLabelKey: memory,
	}
}

// toSchedulingInstanceType converts a catalog entry to the solver's model.
// Offerings are all made available: the simulated cloud never runs out,
// whatever the file says, as upstream's KWOK provider does.
func toSchedulingInstanceType(o InstanceTypeOptions) *scheduling.InstanceType {
	capacity := corev1.ResourceList{}
	for k, v := range o.Resources {
		capacity[k] = v.DeepCopy()
	}
	if _, ok := capacity[corev1.ResourcePods]; !ok {
		capacity[corev1.ResourcePods] = *resource.NewQuantity(defaultPods, resource.DecimalSI)
	}
	oss := make([]string, 0, len(o.OperatingSystems))
	for _, os := range o.OperatingSystems {
		oss = append(oss, string(os))
	}
	reqs := []scheduling.Requirement{
		scheduling.NewRequirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, o.Name),
		scheduling.NewRequirement(corev1.LabelArchStable, corev1.NodeSelectorOpIn, o.Architecture),
		scheduling.NewRequirement(corev1.LabelOSStable, corev1.NodeSelectorOpIn, oss...),
	}
	labels := instanceTypeLabels(o)
	for _, k := range WellKnownLabels {
		reqs = append(reqs, scheduling.NewRequirement(k, corev1.NodeSelectorOpIn, labels[k]))
	}
	offerings := make([]scheduling.Offering, 0, len(o.Offerings))
	for _, off := range o.Offerings {
		offerings = append(offerings, scheduling.Offering{
			Zone:         off.Zone(),
			CapacityType: off.CapacityType(),
			Price:        off.Price,
			Available:    true,
		})
	}
	sort.SliceStable(offerings, func(i, j int) bool { return offerings[i].Price < offerings[j].Price })
	return &scheduling.InstanceType{
		Name:         o.Name,
		Requirements: scheduling.NewRequirements(reqs...),
		Offerings:    offerings,
		Capacity:     capacity,
		Overhead:     kubeReserved.DeepCopy(),
	}
}

// WellKnownLabels are the provider's labels that pods may select on although
// no NodePool mentions them (the solver treats them like zone or arch).
var WellKnownLabels = []string{
	kwokv1alpha1.InstanceSizeLabelKey,
	kwokv1alpha1.InstanceFamilyLabelKey,
	kwokv1alpha1.InstanceCPULabelKey,
	kwokv1alpha1.InstanceMemoryLabelKey,
}
