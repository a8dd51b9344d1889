package options

import (
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"
)

// SchedulerConfiguration is what --scheduler-config (SCHEDULER_CONFIG) holds:
// the parts of the cluster's kube-scheduler configuration Karpenter mirrors
// when it simulates scheduling, as upstream Karpenter defines it. The value is
// the YAML or JSON document itself (not a file path), with no apiVersion or
// kind; its fields have the shape of kube-scheduler's, so a fragment of a
// KubeSchedulerConfiguration can be pasted in, e.g.
//
//	podTopologySpread:
//	  defaultConstraints:
//	  - maxSkew: 1
//	    topologyKey: topology.kubernetes.io/zone
//	    whenUnsatisfiable: ScheduleAnyway
type SchedulerConfiguration struct {
	PodTopologySpread *PodTopologySpreadConfig `json:"podTopologySpread,omitempty"`
}

// PodTopologySpreadConfig mirrors the PodTopologySpread plugin's arguments.
type PodTopologySpreadConfig struct {
	// DefaultConstraints are the plugin's defaultConstraints (defaultingType
	// List): they apply to every pod that declares no topology spread
	// constraints of its own, each with the label selector deduced for the pod
	// from the Services and the ReplicationController, ReplicaSet or
	// StatefulSet that select it. As in kube-scheduler, a constraint here
	// carries no labelSelector and no matchLabelKeys.
	DefaultConstraints []corev1.TopologySpreadConstraint `json:"defaultConstraints,omitempty"`
}

// DefaultTopologySpreadConstraints returns the configured default constraints
// (none when c is nil or has no podTopologySpread).
func (c *SchedulerConfiguration) DefaultTopologySpreadConstraints() []corev1.TopologySpreadConstraint {
	if c == nil || c.PodTopologySpread == nil {
		return nil
	}
	return c.PodTopologySpread.DefaultConstraints
}

// ParseSchedulerConfiguration decodes and validates a --scheduler-config
// value. An empty value is no configuration (nil). Unknown fields are errors,
// and so is anything kube-scheduler would refuse in its PodTopologySpread
// arguments, so that a mistake stops the controller at start-up.
func ParseSchedulerConfiguration(raw string) (*SchedulerConfiguration, error) {
	if strings.TrimSpace(raw) == "" {
		return nil, nil
	}
	var scalar string
	if yaml.Unmarshal([]byte(raw), &scalar) == nil {
		return nil, fmt.Errorf("the value %q is not a YAML/JSON document; it must be the document itself (podTopologySpread.defaultConstraints), not a file path", scalar)
	}
	c := &SchedulerConfiguration{}
	if err := yaml.UnmarshalStrict([]byte(raw), c); err != nil {
		return nil, fmt.Errorf("decoding the YAML/JSON document: %w", err)
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// Validate applies kube-scheduler's checks of PodTopologySpread default
// constraints.
func (c *SchedulerConfiguration) Validate() error {
	var errs []error
	constraints := c.DefaultTopologySpreadConstraints()
	for i, tsc := range constraints {
		field := fmt.Sprintf("podTopologySpread.defaultConstraints[%d]", i)
		if tsc.MaxSkew <= 0 {
			errs = append(errs, fmt.Errorf("%s.maxSkew %d: must be greater than 0", field, tsc.MaxSkew))
		}
		if tsc.TopologyKey == "" {
			errs = append(errs, fmt.Errorf("%s.topologyKey: must be set", field))
		} else if msgs := validation.IsQualifiedName(tsc.TopologyKey); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("%s.topologyKey %q: not a valid label key: %s", field, tsc.TopologyKey, strings.Join(msgs, "; ")))
		}
		switch tsc.WhenUnsatisfiable {
		case corev1.DoNotSchedule, corev1.ScheduleAnyway:
		default:
			errs = append(errs, fmt.Errorf("%s.whenUnsatisfiable %q: must be %s or %s", field, tsc.WhenUnsatisfiable, corev1.DoNotSchedule, corev1.ScheduleAnyway))
		}
		if tsc.LabelSelector != nil {
			errs = append(errs, fmt.Errorf("%s.labelSelector: must not be set, the selector is deduced for each pod", field))
		}
		if len(tsc.MatchLabelKeys) > 0 {
			errs = append(errs, fmt.Errorf("%s.matchLabelKeys: must not be set, it has no effect on default constraints", field))
		}
		for j := range constraints[:i] {
			if constraints[j].TopologyKey == tsc.TopologyKey && constraints[j].WhenUnsatisfiable == tsc.WhenUnsatisfiable {
				errs = append(errs, fmt.Errorf("%s: repeats defaultConstraints[%d] (topologyKey %q, whenUnsatisfiable %s)", field, j, tsc.TopologyKey, tsc.WhenUnsatisfiable))
			}
		}
	}
	return errors.Join(errs...)
}
