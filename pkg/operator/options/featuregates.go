package options

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Feature gate names (upstream's).
const (
	FeatureNodeRepair                = "NodeRepair"
	FeatureReservedCapacity          = "ReservedCapacity"
	FeatureSpotToSpotConsolidation   = "SpotToSpotConsolidation"
	FeatureNodeOverlay               = "NodeOverlay"
	FeatureStaticCapacity            = "StaticCapacity"
	FeatureCapacityBuffer            = "CapacityBuffer"
	FeatureTerminateFirstDrift       = "TerminateFirstDrift"
	FeatureTerminateFirstRepair      = "TerminateFirstRepair"
	FeaturePodDeletionCostManagement = "PodDeletionCostManagement"
)

// Gate is one feature gate: its name, its default (upstream's), and whether
// this implementation acts on it.
type Gate struct {
	Name    string
	Default bool
	// Implemented: the gated feature exists here and the gate switches it as
	// upstream's does. A gate that is not implemented is still accepted (an
	// upstream chart sets every gate it knows), and enabling it logs a warning
	// at start-up.
	Implemented bool
	// Missing says what is absent when the gate is enabled but not
	// implemented; it ends the start-up warning.
	Missing string
	// DisabledMissing, when set, says what is absent when the gate is
	// disabled: a gate whose feature is built but cannot be turned off yet.
	// Disabling it then logs a warning. (No gate needs it today.)
	DisabledMissing string
}

// CoreGates are upstream v1.15's FEATURE_GATES (--feature-gates), in the order
// upstream's chart renders them, with upstream's defaults. ReservedCapacity
// (the AWS provider's reserved offerings and capacityReservationSelectorTerms),
// SpotToSpotConsolidation, NodeRepair (pkg/disruption's repair method),
// NodeOverlay (pkg/controllers/nodeoverlay),
// StaticCapacity (pkg/controllers/staticcapacity), CapacityBuffer
// (pkg/capacitybuffer), TerminateFirstDrift and TerminateFirstRepair
// (pkg/disruption's drift and repair methods) and PodDeletionCostManagement
// (pkg/controllers/deletioncost) are implemented: every one.
var CoreGates = []Gate{
	{Name: FeatureReservedCapacity, Default: true, Implemented: true},
	{Name: FeatureSpotToSpotConsolidation, Default: false, Implemented: true},
	{Name: FeatureNodeRepair, Default: false, Implemented: true},
	{Name: FeatureNodeOverlay, Default: false, Implemented: true},
	{Name: FeatureStaticCapacity, Default: false, Implemented: true},
	{Name: FeatureCapacityBuffer, Default: false, Implemented: true},
	{Name: FeatureTerminateFirstDrift, Default: false, Implemented: true},
	{Name: FeatureTerminateFirstRepair, Default: false, Implemented: true},
	{Name: FeaturePodDeletionCostManagement, Default: false, Implemented: true},
}

// DefaultFeatureGates are upstream's defaults of the core gates.
func DefaultFeatureGates() map[string]bool { return GateDefaults(CoreGates) }

// GateDefaults maps each gate of gates to its default.
func GateDefaults(gates []Gate) map[string]bool {
	out := make(map[string]bool, len(gates))
	for _, g := range gates {
		out[g.Name] = g.Default
	}
	return out
}

// GateSet is a parsed feature gate setting (FEATURE_GATES, or a provider's
// such as AWS_FEATURE_GATES): the gates it knows, the value of each, and the
// names it was given that it does not know.
type GateSet struct {
	// Flag and Env name the setting, e.g. feature-gates and FEATURE_GATES.
	Flag, Env string
	Gates     []Gate
	// Values has every known gate: its default unless the setting named it.
	Values map[string]bool
	// Unknown are the names the setting gave that no gate of Gates has, in
	// their order. Upstream ignores them; here each one is warned about.
	Unknown []string
}

// ParseGateSet parses s, "Gate=bool" pairs separated by commas, over the
// defaults of gates, as upstream's flag type does (whitespace around names
// and values is ignored, a pair without "=" or with a value that is not a
// boolean is an error). A name no gate has is kept in Unknown, not refused:
// an upstream chart may set gates this version does not know.
func ParseGateSet(flagName, envName string, gates []Gate, s string) (GateSet, error) {
	set := GateSet{Flag: flagName, Env: envName, Gates: gates, Values: GateDefaults(gates)}
	seen := map[string]bool{}
	for _, kv := range strings.Split(s, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return set, fmt.Errorf("%s (%s): %q is not Gate=bool", flagName, envName, kv)
		}
		k = strings.TrimSpace(k)
		b, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			return set, fmt.Errorf("%s (%s): %s=%q is not a boolean", flagName, envName, k, strings.TrimSpace(v))
		}
		if _, known := set.Values[k]; known {
			set.Values[k] = b
		} else if !seen[k] {
			set.Unknown = append(set.Unknown, k)
		}
		seen[k] = true
	}
	return set, nil
}

// ParseFeatureGates parses a FEATURE_GATES value over upstream's defaults.
// Names it does not know are ignored, as upstream ignores them (Options keeps
// them to warn about).
func ParseFeatureGates(s string) (map[string]bool, error) {
	set, err := ParseGateSet("feature-gates", "FEATURE_GATES", CoreGates, s)
	return set.Values, err
}

// Warnings are the start-up warnings of the set: one for each enabled gate
// that is not implemented, one for each disabled gate that cannot be turned
// off yet, and one for each unknown name.
func (s GateSet) Warnings() []string {
	var out []string
	for _, g := range s.Gates {
		on := s.Values[g.Name]
		switch {
		case on && !g.Implemented:
			out = append(out, fmt.Sprintf("feature gate %s is enabled (%s) but not implemented yet: %s", g.Name, s.Env, g.Missing))
		case !on && g.DisabledMissing != "":
			out = append(out, fmt.Sprintf("feature gate %s is disabled (%s) but disabling it is not implemented yet: %s", g.Name, s.Env, g.DisabledMissing))
		}
	}
	for _, name := range s.Unknown {
		out = append(out, fmt.Sprintf("feature gate %s (%s) is unknown and ignored: known gates are %s", name, s.Env, strings.Join(s.Names(), ", ")))
	}
	return out
}

// GateState is one known gate of a set, as parsed.
type GateState struct {
	Name                 string
	Enabled, Implemented bool
}

// States are the set's known gates, in the order of Gates.
func (s GateSet) States() []GateState {
	out := make([]GateState, len(s.Gates))
	for i, g := range s.Gates {
		out[i] = GateState{Name: g.Name, Enabled: s.Values[g.Name], Implemented: g.Implemented}
	}
	return out
}

// FeatureGateValue reports whether the core gate name is on in gates (a map
// such as Options.FeatureGates): its value there, else upstream's default.
func FeatureGateValue(gates map[string]bool, name string) bool {
	if v, ok := gates[name]; ok {
		return v
	}
	return DefaultFeatureGates()[name]
}

// Names are the known gates' names, sorted.
func (s GateSet) Names() []string {
	out := make([]string, 0, len(s.Gates))
	for _, g := range s.Gates {
		out = append(out, g.Name)
	}
	sort.Strings(out)
	return out
}

// DefaultString is the setting's default value as upstream writes it, e.g.
// "ReservedCapacity=true,SpotToSpotConsolidation=false,...".
func DefaultString(gates []Gate) string {
	parts := make([]string, len(gates))
	for i, g := range gates {
		parts[i] = fmt.Sprintf("%s=%t", g.Name, g.Default)
	}
	return strings.Join(parts, ",")
}

func gateNames() []string { return GateSet{Gates: CoreGates}.Names() }
