// Command gen writes the KWOK provider's embedded instance type catalog:
// families c (2 GiB per vCPU), s (4 GiB) and m (8 GiB), 1 to 256 vCPUs, linux
// and windows, amd64 and arm64, each offered on-demand and spot (at 70% of the
// on-demand price) in four zones. Run it through `go generate ./pkg/providers/kwok`.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/providers/kwok"
)

var (
	cpus     = []int64{1, 2, 4, 8, 16, 32, 48, 64, 96, 128, 192, 256}
	families = []struct {
		name       string
		gibPerVCPU int64
	}{{"c", 2}, {"s", 4}, {"m", 8}}
	arches = []string{"amd64", "arm64"}
	oses   = []corev1.OSName{corev1.Linux, corev1.Windows}
)

// Prices: 0.025 per vCPU-hour plus 0.001 per 10^9 bytes of memory on demand;
// spot costs 70% of that. Upstream's generator adds the two terms in map order,
// so its committed catalog prices c-48x-arm64-windows and c-192x-arm64-linux one
// unit in the last place below what this fixed order gives; every other price
// is the same float.
const (
	pricePerVCPU     = 0.025
	pricePerGB       = 0.001
	spotDiscount     = 0.7
	maxPods          = 1024
	podsPerVCPU      = 16
	ephemeralStorage = "20Gi"
)

// Catalog builds the catalog in a fixed order, so regenerating is stable: by
// vCPUs, then family, operating system and architecture, as upstream KWOK's
// catalog lists its types.
func Catalog() []kwok.InstanceTypeOptions {
	var out []kwok.InstanceTypeOptions
	for _, cpu := range cpus {
		for _, fam := range families {
			for _, os := range oses {
				for _, arch := range arches {
					memBytes := cpu * fam.gibPerVCPU << 30
					onDemand := pricePerVCPU*float64(cpu) + pricePerGB*float64(memBytes)/1e9
					var offerings []kwok.OfferingOptions
					for _, zone := range kwok.Zones {
						for _, ct := range []struct {
							name  string
							price float64
						}{{v1.CapacityTypeSpot, onDemand * spotDiscount}, {v1.CapacityTypeOnDemand, onDemand}} {
							offerings = append(offerings, kwok.OfferingOptions{
								Price:     ct.price,
								Available: true,
								Requirements: []corev1.NodeSelectorRequirement{
									{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{ct.name}},
									{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{zone}},
								},
							})
						}
					}
					out = append(out, kwok.InstanceTypeOptions{
						Name:             fmt.Sprintf("%s-%dx-%s-%s", fam.name, cpu, arch, os),
						Offerings:        offerings,
						Architecture:     arch,
						OperatingSystems: []corev1.OSName{os},
						Resources: corev1.ResourceList{
							corev1.ResourceCPU:              *resource.NewQuantity(cpu, resource.DecimalSI),
							corev1.ResourceMemory:           *resource.NewQuantity(memBytes, resource.BinarySI),
							corev1.ResourceEphemeralStorage: resource.MustParse(ephemeralStorage),
							corev1.ResourcePods:             *resource.NewQuantity(min(podsPerVCPU*cpu, maxPods), resource.DecimalSI),
						},
					})
				}
			}
		}
	}
	return out
}

// Render is the file content: indented JSON with a trailing newline.
func Render() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(Catalog()); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func main() {
	out := flag.String("out", "instance_types.json", "file to write")
	flag.Parse()
	b, err := Render()
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(*out, b, 0o644); err != nil {
		log.Fatal(err)
	}
}
