package legacy_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/karpenter-go/karpenter/pkg/apis/karpenter/v1alpha5"
	"github.com/karpenter-go/karpenter/pkg/controllers/legacy"
)

var legacyTaint = corev1.Taint{Key: "karpenter.sh/legacy", Value: "true", Effect: corev1.TaintEffectNoSchedule}

func TestDrift(t *testing.T) {
	base := func() (*v1alpha5.Machine, *v1alpha5.Provisioner) {
		p := &v1alpha5.Provisioner{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Spec: v1alpha5.ProvisionerSpec{
			Labels:      map[string]string{"team": "a"},
			Taints:      []corev1.Taint{{Key: "dedicated", Value: "x", Effect: corev1.TaintEffectNoSchedule}},
			ProviderRef: &v1alpha5.MachineTemplateRef{Name: "default"},
			// Requirements never drift a Machine: its own are narrowed at launch.
			Requirements: []corev1.NodeSelectorRequirement{{Key: "karpenter.sh/capacity-type", Operator: corev1.NodeSelectorOpIn, Values: []string{"spot", "on-demand"}}},
		}}
		m := &v1alpha5.Machine{ObjectMeta: metav1.ObjectMeta{Name: "default-abc", Labels: map[string]string{v1alpha5.ProvisionerNameLabelKey: "default", "team": "a"}},
			Spec: v1alpha5.MachineSpec{
				Taints:             []corev1.Taint{{Key: "dedicated", Value: "x", Effect: corev1.TaintEffectNoSchedule, TimeAdded: &metav1.Time{}}},
				MachineTemplateRef: &v1alpha5.MachineTemplateRef{Name: "default"},
				Requirements:       []corev1.NodeSelectorRequirement{{Key: "karpenter.sh/capacity-type", Operator: corev1.NodeSelectorOpIn, Values: []string{"spot"}}},
			}}
		return m, p
	}
	for _, tc := range []struct {
		name, reason, contains string
		change                 func(*v1alpha5.Machine, *v1alpha5.Provisioner) *v1alpha5.Provisioner
	}{
		{name: "unchanged", change: func(_ *v1alpha5.Machine, p *v1alpha5.Provisioner) *v1alpha5.Provisioner { return p }},
		{name: "taint added", reason: legacy.ReasonProvisionerDrifted, contains: "spec.taints: added karpenter.sh/legacy=true:NoSchedule",
			change: func(_ *v1alpha5.Machine, p *v1alpha5.Provisioner) *v1alpha5.Provisioner {
				p.Spec.Taints = append(p.Spec.Taints, legacyTaint)
				return p
			}},
		{name: "taint removed", reason: legacy.ReasonProvisionerDrifted, contains: "removed dedicated=x:NoSchedule",
			change: func(_ *v1alpha5.Machine, p *v1alpha5.Provisioner) *v1alpha5.Provisioner {
				p.Spec.Taints = nil
				return p
			}},
		{name: "startup taint", reason: legacy.ReasonProvisionerDrifted, contains: "spec.startupTaints",
			change: func(_ *v1alpha5.Machine, p *v1alpha5.Provisioner) *v1alpha5.Provisioner {
				p.Spec.StartupTaints = []corev1.Taint{legacyTaint}
				return p
			}},
		{name: "label", reason: legacy.ReasonProvisionerDrifted, contains: "spec.labels: team=b",
			change: func(_ *v1alpha5.Machine, p *v1alpha5.Provisioner) *v1alpha5.Provisioner {
				p.Spec.Labels["team"] = "b"
				return p
			}},
		{name: "providerRef", reason: legacy.ReasonProvisionerDrifted, contains: "spec.providerRef: other",
			change: func(_ *v1alpha5.Machine, p *v1alpha5.Provisioner) *v1alpha5.Provisioner {
				p.Spec.ProviderRef.Name = "other"
				return p
			}},
		{name: "requirements", change: func(_ *v1alpha5.Machine, p *v1alpha5.Provisioner) *v1alpha5.Provisioner {
			p.Spec.Requirements = nil
			return p
		}},
		{name: "gone", reason: legacy.ReasonProvisionerGone, contains: `provisioner "default" no longer exists`,
			change: func(*v1alpha5.Machine, *v1alpha5.Provisioner) *v1alpha5.Provisioner { return nil }},
		{name: "deleting", reason: legacy.ReasonProvisionerDeleted,
			change: func(_ *v1alpha5.Machine, p *v1alpha5.Provisioner) *v1alpha5.Provisioner {
				p.DeletionTimestamp = &metav1.Time{}
				return p
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, p := base()
			reason, msg := legacy.Drift(m, tc.change(m, p))
			if reason != tc.reason || !strings.Contains(msg, tc.contains) {
				t.Fatalf("Drift = %q %q, want %q containing %q", reason, msg, tc.reason, tc.contains)
			}
		})
	}
}
