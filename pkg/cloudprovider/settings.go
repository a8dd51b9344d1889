package cloudprovider

// SettingsReporter is implemented by a Provider with feature gates of its own
// (upstream AWS's AWS_FEATURE_GATES) or with settings it accepts for
// compatibility with upstream but does not act on yet. The operator asks the
// chosen provider once at start-up, after Validate: each gate is exposed as
// karpenter_feature_gate_enabled, and each warning is logged once.
type SettingsReporter interface {
	// FeatureGates are the provider's own gates, as parsed.
	FeatureGates() []FeatureGate
	// SettingWarnings name each provider setting, gates included, that is
	// set but whose upstream behaviour is not implemented here (an enabled
	// gate that is not implemented, an unknown gate name, ...).
	SettingWarnings() []string
}

// FeatureGate is one of a provider's feature gates as parsed.
type FeatureGate struct {
	Name string
	// Enabled: the gate is on.
	Enabled bool
	// Implemented: the provider acts on the gate as upstream's does.
	Implemented bool
}
