package legacy

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1alpha5"
)

// Condition types and reasons written on Machines.
const (
	// ConditionAdopted: this controller manages the Machine.
	ConditionAdopted = "Adopted"
	// ConditionDrifted is upstream v1alpha5's drift condition type.
	ConditionDrifted = "MachineDrifted"

	ReasonAdopted            = "Adopted"
	ReasonNoNodePool         = "NoNodePool"
	ReasonProvisionerDrifted = "ProvisionerDrifted"
	ReasonProvisionerGone    = "ProvisionerNotFound"
	ReasonProvisionerDeleted = "ProvisionerDeleting"
	ReasonNotDrifted         = "NotDrifted"
)

// Drift reports whether the Machine no longer matches its Provisioner (nil:
// deleted or never known), with a reason and a message naming what differs,
// or "" when it still matches. It compares what upstream v0.31's static
// drift hashed and a user changes to retire a Provisioner's nodes: taints,
// startup taints, labels and the provider reference. Requirements are not
// compared: the Machine's are narrowed at launch (one instance type, one
// zone), so they always differ from the Provisioner's.
func Drift(m *v1alpha5.Machine, p *v1alpha5.Provisioner) (reason, message string) {
	owner := m.Labels[v1alpha5.ProvisionerNameLabelKey]
	switch {
	case p == nil:
		return ReasonProvisionerGone, fmt.Sprintf("provisioner %q no longer exists", owner)
	case p.DeletionTimestamp != nil:
		return ReasonProvisionerDeleted, fmt.Sprintf("provisioner %q is being deleted", p.Name)
	}
	var diffs []string
	if d := taintDiff(p.Spec.Taints, m.Spec.Taints); d != "" {
		diffs = append(diffs, "spec.taints: "+d)
	}
	if d := taintDiff(p.Spec.StartupTaints, m.Spec.StartupTaints); d != "" {
		diffs = append(diffs, "spec.startupTaints: "+d)
	}
	keys := make([]string, 0, len(p.Spec.Labels))
	for k := range p.Spec.Labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if got, ok := m.Labels[k]; !ok || got != p.Spec.Labels[k] {
			diffs = append(diffs, fmt.Sprintf("spec.labels: %s=%s is not on the machine", k, p.Spec.Labels[k]))
		}
	}
	if p.Spec.ProviderRef != nil && m.Spec.MachineTemplateRef != nil && p.Spec.ProviderRef.Name != m.Spec.MachineTemplateRef.Name {
		diffs = append(diffs, fmt.Sprintf("spec.providerRef: %s, the machine was launched from %s", p.Spec.ProviderRef.Name, m.Spec.MachineTemplateRef.Name))
	}
	if len(diffs) == 0 {
		return "", ""
	}
	return ReasonProvisionerDrifted, fmt.Sprintf("provisioner %q changed: %s", p.Name, strings.Join(diffs, "; "))
}

// taintDiff compares taints as sets (timeAdded ignored) and says what the
// Provisioner has that the Machine lacks and the reverse.
func taintDiff(want, have []corev1.Taint) string {
	key := func(t corev1.Taint) string { return t.Key + "=" + t.Value + ":" + string(t.Effect) }
	w, h := map[string]bool{}, map[string]bool{}
	for _, t := range want {
		w[key(t)] = true
	}
	for _, t := range have {
		h[key(t)] = true
	}
	var added, removed []string
	for k := range w {
		if !h[k] {
			added = append(added, k)
		}
	}
	for k := range h {
		if !w[k] {
			removed = append(removed, k)
		}
	}
	sort.Strings(added)
	sort.Strings(removed)
	var parts []string
	if len(added) > 0 {
		parts = append(parts, "added "+strings.Join(added, ", "))
	}
	if len(removed) > 0 {
		parts = append(parts, "removed "+strings.Join(removed, ", "))
	}
	return strings.Join(parts, ", ")
}
