package overlay

import (
	"errors"
	"fmt"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	v1 "github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1"
	"github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1alpha1"
	"github.com/karpenter-go/karpenter/pkg/scheduling"
)

// ReasonRuntimeValidation and ReasonConflict are the reasons of a False
// ValidationSucceeded condition (upstream's).
const (
	ReasonRuntimeValidation = "RuntimeValidation"
	ReasonConflict          = "Conflict"
)

// capacityTypes are the values karpenter.sh/capacity-type can take.
var capacityTypes = []string{v1.CapacityTypeSpot, v1.CapacityTypeOnDemand, v1.CapacityTypeReserved}

// Validate checks what the CRD's schema cannot: that requirement keys are
// qualified names and values valid label values, that a capacity-type
// requirement names a capacity type that exists, that Gt/Lt/Gte/Lte carry one
// non-negative integer, that NotIn has a value, that capacity leaves cpu,
// memory, ephemeral-storage and pods alone, and that the price parses.
func Validate(o *v1alpha1.NodeOverlay) error {
	var errs []error
	for _, r := range o.Spec.Requirements {
		errs = append(errs, validateRequirement(r)...)
	}
	for name := range o.Spec.Capacity {
		switch name {
		case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage, corev1.ResourcePods:
			errs = append(errs, fmt.Errorf("capacity %s cannot be overlaid, only extended resources", name))
		}
	}
	if o.Spec.Price != nil && o.Spec.PriceAdjustment != nil {
		errs = append(errs, fmt.Errorf("price and priceAdjustment are mutually exclusive"))
	}
	for field, p := range map[string]*string{"price": o.Spec.Price, "priceAdjustment": o.Spec.PriceAdjustment} {
		if p == nil {
			continue
		}
		c, err := ParsePriceChange(*p)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%s: %w", field, err))
		case field == "price" && !c.Absolute:
			errs = append(errs, fmt.Errorf("price %q must be an amount without a sign", *p))
		case field == "priceAdjustment" && c.Absolute:
			errs = append(errs, fmt.Errorf("priceAdjustment %q must start with + or -", *p))
		}
	}
	return errors.Join(errs...)
}

func validateRequirement(r v1alpha1.NodeSelectorRequirement) []error {
	var errs []error
	key := r.Key
	if normalized, ok := v1.NormalizedLabels[key]; ok {
		key = normalized
	}
	for _, msg := range validation.IsQualifiedName(key) {
		errs = append(errs, fmt.Errorf("requirement key %s is not a qualified name, %s", key, msg))
	}
	for _, value := range r.Values {
		for _, msg := range validation.IsValidLabelValue(value) {
			errs = append(errs, fmt.Errorf("requirement %s: invalid value %q, %s", key, value, msg))
		}
	}
	switch r.Operator {
	case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
		if len(r.Values) == 0 {
			errs = append(errs, fmt.Errorf("requirement %s with operator %s must have a value", key, r.Operator))
		}
		if key == v1.CapacityTypeLabelKey && r.Operator == corev1.NodeSelectorOpIn && !slices.ContainsFunc(r.Values, func(v string) bool { return slices.Contains(capacityTypes, v) }) {
			errs = append(errs, fmt.Errorf("requirement %s: values %v name no capacity type, expected one of %v", key, r.Values, capacityTypes))
		}
	case corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist:
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt, scheduling.OpGte, scheduling.OpLte:
		if len(r.Values) != 1 {
			errs = append(errs, fmt.Errorf("requirement %s with operator %s must have a single non-negative integer value", key, r.Operator))
		} else if n, err := strconv.Atoi(r.Values[0]); err != nil || n < 0 {
			errs = append(errs, fmt.Errorf("requirement %s with operator %s must have a single non-negative integer value", key, r.Operator))
		}
	default:
		errs = append(errs, fmt.Errorf("requirement %s has an unsupported operator %s", key, r.Operator))
	}
	return errs
}

// requirements are the overlay's requirements in scheduling form.
func requirements(o *v1alpha1.NodeOverlay) scheduling.Requirements {
	rs := make([]scheduling.Requirement, 0, len(o.Spec.Requirements))
	for _, r := range o.Spec.Requirements {
		key := r.Key
		if normalized, ok := v1.NormalizedLabels[key]; ok {
			key = normalized
		}
		rs = append(rs, scheduling.NewRequirement(key, r.Operator, r.Values...))
	}
	return scheduling.NewRequirements(rs...)
}
