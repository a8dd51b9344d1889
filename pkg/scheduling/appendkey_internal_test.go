package scheduling

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// appendKey must render exactly as String: interning names requirement sets by it.
func TestAppendKeyMatchesString(t *testing.T) {
	two := 2
	sets := []Requirements{
		{},
		NewRequirements(NewRequirement("a", corev1.NodeSelectorOpIn, "x", "y")),
		NewRequirements(NewRequirement("a", corev1.NodeSelectorOpNotIn, "x"), NewRequirement("b", corev1.NodeSelectorOpExists)),
		NewRequirements(NewRequirement("c", corev1.NodeSelectorOpGt, "3"), NewRequirement("d", corev1.NodeSelectorOpDoesNotExist)),
		NewRequirements(NewRequirement("c", corev1.NodeSelectorOpGt, "3").Intersect(NewRequirement("c", corev1.NodeSelectorOpLt, "9")).Intersect(NewRequirement("c", corev1.NodeSelectorOpNotIn, "5"))),
		NewRequirements(NewRequirement("e", corev1.NodeSelectorOpLt, "7"), Requirement{Key: "f", values: []string{"v"}, MinValues: &two}),
	}
	for _, rs := range sets {
		if got, want := string(rs.appendKey(nil)), rs.String(); got != want {
			t.Errorf("appendKey %q, String %q", got, want)
		}
	}
}
