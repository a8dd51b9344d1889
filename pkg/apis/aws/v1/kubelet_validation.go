package v1

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	sigsjson "sigs.k8s.io/json"
)

// EvictionSignals are the kubelet eviction signals Karpenter accepts as keys
// of the eviction maps.
var EvictionSignals = []string{"memory.available", "nodefs.available", "nodefs.inodesFree", "imagefs.available", "imagefs.inodesFree", "pid.available"}

// ReservableResources are the keys of kubeReserved and systemReserved.
var ReservableResources = []string{"cpu", "memory", "ephemeral-storage", "pid"}

// kubeletOwnedFields are kubelet fields Karpenter writes itself at bootstrap;
// a value set in spec.kubelet would be overwritten.
var kubeletOwnedFields = map[string]string{
	"registerWithTaints": "Karpenter sets it from the NodeClaim's taints",
}

// ValidateKubelet checks spec.kubelet: every key must be a field of the
// kubelet's KubeletConfiguration (v1beta1) with a value of its type, and
// the fields Karpenter reads must hold values the kubelet and Karpenter
// accept. Each message starts with the field path.
func ValidateKubelet(in *KubeletConfiguration) []string {
	if in == nil {
		return nil
	}
	var errs []string
	// A string maxPods is a CEL expression, checked where it is compiled
	// (the EC2NodeClass controller); for the kubelet's type it stands in as
	// an integer, so that it does not hide the other fields' errors.
	if _, ok := in.MaxPodsExpression(); ok {
		in = in.DeepCopy()
		delete(in.Extra, "maxPods")
		in.MaxPods = new(int32)
	}
	data, err := json.Marshal(in)
	if err != nil {
		return []string{fmt.Sprintf("spec.kubelet: %v", err)}
	}
	strict, err := sigsjson.UnmarshalStrict(data, &kubeletv1beta1.KubeletConfiguration{})
	var te *json.UnmarshalTypeError
	switch {
	case err == nil:
	case errors.As(err, &te) && te.Field != "":
		// A typed field is reported below with its value.
		if _, typed := in.Extra[te.Field]; !typed || !IsTypedKubeletField(te.Field) {
			errs = append(errs, fmt.Sprintf("spec.kubelet.%s: a %s where the kubelet expects type %s", te.Field, te.Value, te.Type.String()))
		}
	default:
		errs = append(errs, "spec.kubelet: "+err.Error())
	}
	for _, e := range strict {
		errs = append(errs, "spec.kubelet: "+e.Error())
	}
	// A typed field whose value did not decode into Karpenter's own view
	// (e.g. podsPerCore: "x") is reported even if the kubelet's type decode
	// above already stopped at another field.
	for _, key := range slices.Sorted(maps.Keys(in.Extra)) {
		if IsTypedKubeletField(key) {
			errs = append(errs, fmt.Sprintf("spec.kubelet.%s: %s is not a valid value", key, string(in.Extra[key].Raw)))
		}
	}
	for _, key := range slices.Sorted(maps.Keys(kubeletOwnedFields)) {
		if _, ok := in.Extra[key]; ok {
			errs = append(errs, fmt.Sprintf("spec.kubelet.%s: cannot be set, %s", key, kubeletOwnedFields[key]))
		}
	}
	// evictionMinimumReclaim is passed through, but holds thresholds too.
	var minimumReclaim map[string]string
	if raw, ok := in.Extra["evictionMinimumReclaim"]; ok {
		_ = json.Unmarshal(raw.Raw, &minimumReclaim)
	}
	for _, m := range []struct {
		name   string
		values map[string]string
	}{{"evictionHard", in.EvictionHard}, {"evictionSoft", in.EvictionSoft}, {"evictionMinimumReclaim", minimumReclaim}} {
		for _, k := range slices.Sorted(maps.Keys(m.values)) {
			if !slices.Contains(EvictionSignals, k) {
				errs = append(errs, fmt.Sprintf("spec.kubelet.%s: %q is not an eviction signal, valid keys are %s", m.name, k, strings.Join(EvictionSignals, ", ")))
			}
			if msg := evictionThreshold(m.values[k]); msg != "" {
				errs = append(errs, fmt.Sprintf("spec.kubelet.%s[%s]: %q %s", m.name, k, m.values[k], msg))
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(in.EvictionSoftGracePeriod)) {
		if !slices.Contains(EvictionSignals, k) {
			errs = append(errs, fmt.Sprintf("spec.kubelet.evictionSoftGracePeriod: %q is not an eviction signal, valid keys are %s", k, strings.Join(EvictionSignals, ", ")))
		}
		if in.EvictionSoftGracePeriod[k].Duration < 0 {
			errs = append(errs, fmt.Sprintf("spec.kubelet.evictionSoftGracePeriod[%s]: cannot be negative", k))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(in.EvictionSoft)) {
		if _, ok := in.EvictionSoftGracePeriod[k]; !ok {
			errs = append(errs, fmt.Sprintf("spec.kubelet.evictionSoft[%s]: has no matching evictionSoftGracePeriod", k))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(in.EvictionSoftGracePeriod)) {
		if _, ok := in.EvictionSoft[k]; !ok {
			errs = append(errs, fmt.Sprintf("spec.kubelet.evictionSoftGracePeriod[%s]: has no matching evictionSoft", k))
		}
	}
	for _, m := range []struct {
		name   string
		values map[string]string
	}{{"kubeReserved", in.KubeReserved}, {"systemReserved", in.SystemReserved}} {
		for _, k := range slices.Sorted(maps.Keys(m.values)) {
			if !slices.Contains(ReservableResources, k) {
				errs = append(errs, fmt.Sprintf("spec.kubelet.%s: %q is not a reservable resource, valid keys are %s", m.name, k, strings.Join(ReservableResources, ", ")))
			}
			// A value that is not a quantity is a CEL expression, compiled
			// by the EC2NodeClass controller; only a leading minus is
			// refused here, whichever of the two the value is.
			if strings.HasPrefix(m.values[k], "-") {
				errs = append(errs, fmt.Sprintf("spec.kubelet.%s[%s]: %q cannot be a negative resource quantity", m.name, k, m.values[k]))
			}
		}
	}
	for _, f := range []struct {
		name string
		v    *int32
	}{{"imageGCHighThresholdPercent", in.ImageGCHighThresholdPercent}, {"imageGCLowThresholdPercent", in.ImageGCLowThresholdPercent}} {
		if f.v != nil && (*f.v < 0 || *f.v > 100) {
			errs = append(errs, fmt.Sprintf("spec.kubelet.%s: %d must be between 0 and 100", f.name, *f.v))
		}
	}
	for _, f := range []struct {
		name string
		v    *int32
	}{{"maxPods", in.MaxPods}, {"podsPerCore", in.PodsPerCore}, {"evictionMaxPodGracePeriod", in.EvictionMaxPodGracePeriod}} {
		if f.v != nil && *f.v < 0 {
			errs = append(errs, fmt.Sprintf("spec.kubelet.%s: %d cannot be negative", f.name, *f.v))
		}
	}
	if h, l := in.ImageGCHighThresholdPercent, in.ImageGCLowThresholdPercent; h != nil && l != nil && *h <= *l {
		errs = append(errs, fmt.Sprintf("spec.kubelet.imageGCHighThresholdPercent: %d must be greater than imageGCLowThresholdPercent (%d)", *h, *l))
	}
	return errs
}

// evictionThreshold checks an eviction threshold: a percentage (0-100%) or
// a non-negative quantity. It returns "" when the value is valid.
func evictionThreshold(v string) string {
	if pct, ok := strings.CutSuffix(v, "%"); ok {
		f, err := strconv.ParseFloat(pct, 64)
		if err != nil || f < 0 || f > 100 {
			return "is not a percentage between 0% and 100%"
		}
		return ""
	}
	q, err := resource.ParseQuantity(v)
	if err != nil {
		return "is neither a quantity nor a percentage"
	}
	if q.Sign() < 0 {
		return "cannot be negative"
	}
	return ""
}
