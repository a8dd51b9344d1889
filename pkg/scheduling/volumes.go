package scheduling

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
)

// volumeIndex looks up PVCs, PVs and StorageClasses by name.
type volumeIndex struct {
	pvcs    map[string]*corev1.PersistentVolumeClaim // namespace/name
	pvs     map[string]*corev1.PersistentVolume
	classes map[string]*storagev1.StorageClass
}

func newVolumeIndex(in *Input) *volumeIndex {
	vi := &volumeIndex{
		pvcs:    map[string]*corev1.PersistentVolumeClaim{},
		pvs:     map[string]*corev1.PersistentVolume{},
		classes: map[string]*storagev1.StorageClass{},
	}
	for _, c := range in.PersistentVolumeClaims {
		vi.pvcs[c.Namespace+"/"+c.Name] = c
	}
	for _, v := range in.PersistentVolumes {
		vi.pvs[v.Name] = v
	}
	for _, s := range in.StorageClasses {
		vi.classes[s.Name] = s
	}
	return vi
}

// requirements returns the alternatives (OR) under which all the pod's volumes can be reached.
// Each volume contributes its own alternatives — a bound PV's node affinity terms, or for an
// unbound claim its StorageClass's allowedTopologies — and volumes combine by cross product.
// nil means "no constraint". Hostname terms of local volumes are ignored: a new node can never
// satisfy them and such pods are not Karpenter's to place.
func (vi *volumeIndex) requirements(pod *corev1.Pod) ([]Requirements, error) {
	var alts []Requirements
	for _, v := range pod.Spec.Volumes {
		var claimName string
		var ephemeralClass *string
		switch {
		case v.PersistentVolumeClaim != nil:
			claimName = v.PersistentVolumeClaim.ClaimName
		case v.Ephemeral != nil:
			claimName = pod.Name + "-" + v.Name
			if v.Ephemeral.VolumeClaimTemplate != nil {
				ephemeralClass = v.Ephemeral.VolumeClaimTemplate.Spec.StorageClassName
			}
		default:
			continue
		}
		var terms []corev1.NodeSelectorTerm
		pvc, ok := vi.pvcs[pod.Namespace+"/"+claimName]
		switch {
		case ok && pvc.Spec.VolumeName != "":
			pv, ok := vi.pvs[pvc.Spec.VolumeName]
			if !ok {
				return nil, fmt.Errorf("persistent volume %q bound to claim %q not found", pvc.Spec.VolumeName, claimName)
			}
			if pv.Spec.NodeAffinity != nil && pv.Spec.NodeAffinity.Required != nil {
				terms = pv.Spec.NodeAffinity.Required.NodeSelectorTerms
			}
		case ok || ephemeralClass != nil:
			class := ephemeralClass
			if ok {
				class = pvc.Spec.StorageClassName
			}
			if class == nil || *class == "" {
				continue
			}
			sc, found := vi.classes[*class]
			if !found {
				return nil, fmt.Errorf("storage class %q of claim %q not found", *class, claimName)
			}
			for _, t := range sc.AllowedTopologies {
				var reqs []corev1.NodeSelectorRequirement
				for _, e := range t.MatchLabelExpressions {
					reqs = append(reqs, corev1.NodeSelectorRequirement{Key: e.Key, Operator: corev1.NodeSelectorOpIn, Values: e.Values})
				}
				terms = append(terms, corev1.NodeSelectorTerm{MatchExpressions: reqs})
			}
		default:
			return nil, fmt.Errorf("persistent volume claim %q not found", claimName)
		}
		var volAlts []Requirements
		for _, t := range terms {
			var reqs []corev1.NodeSelectorRequirement
			for _, e := range t.MatchExpressions {
				if e.Key == LabelHostname {
					continue
				}
				reqs = append(reqs, e)
			}
			volAlts = append(volAlts, FromNodeSelectorRequirements(reqs...))
		}
		if len(volAlts) == 0 {
			continue
		}
		alts = crossRequirements(alts, volAlts)
	}
	return alts, nil
}

// crossRequirements ANDs every alternative of a with every alternative of b. nil a is "true".
func crossRequirements(a, b []Requirements) []Requirements {
	if a == nil {
		return b
	}
	if b == nil {
		return a
	}
	out := make([]Requirements, 0, len(a)*len(b))
	for _, x := range a {
		for _, y := range b {
			out = append(out, x.Intersect(y))
		}
	}
	return out
}
