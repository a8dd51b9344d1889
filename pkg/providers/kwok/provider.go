package kwok

import (
	"context"
	"flag"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"

	kwokv1alpha1 "github.com/karpenter-go/karpenter/pkg/apis/kwok/v1alpha1"
	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
)

// Options are the KWOK provider's settings (upstream KWOK's
// kwok/options/options.go).
type Options struct {
	// InstanceTypesFilePath names a JSON file of instance types replacing the
	// embedded catalog (--instance-types-file-path, INSTANCE_TYPES_FILE_PATH).
	InstanceTypesFilePath string
}

// AddFlags registers the settings on fs, with defaults from env.
func (o *Options) AddFlags(fs *flag.FlagSet, env cloudprovider.Env) {
	fs.StringVar(&o.InstanceTypesFilePath, "instance-types-file-path", env.String(InstanceTypesFilePathEnv, ""),
		"KWOK provider: JSON file of instance types replacing the embedded catalog.")
}

// Provider builds the KWOK bundle: the simulated CloudProvider over the
// catalog, the KWOKNodeClass readiness controller, the catalog's labels and
// the KWOKNodeClass label.
type Provider struct {
	Options Options
}

var _ cloudprovider.Provider = (*Provider)(nil)

// NewProvider returns the KWOK provider with its settings at their defaults.
func NewProvider() *Provider { return &Provider{} }

// Name is "kwok".
func (p *Provider) Name() string { return ProviderName }

// AddFlags registers the KWOK settings.
func (p *Provider) AddFlags(fs *flag.FlagSet, env cloudprovider.Env) { p.Options.AddFlags(fs, env) }

// Validate accepts every setting: the catalog file is read (and checked) by
// New.
func (p *Provider) Validate() error { return nil }

// New loads the catalog and builds the bundle.
func (p *Provider) New(ctx context.Context, deps cloudprovider.Deps) (*cloudprovider.Bundle, error) {
	catalog, err := LoadInstanceTypes(p.Options.InstanceTypesFilePath)
	if err != nil {
		return nil, fmt.Errorf("loading KWOK instance types: %w", err)
	}
	return &cloudprovider.Bundle{
		CloudProvider:     New(ctx, deps.KubeClient, deps.Clock, catalog),
		Controllers:       []cloudprovider.Controller{NewNodeClassController(deps.KubeClient, deps.Clock)},
		WellKnownLabels:   WellKnownLabels,
		NodeClassLabelKey: NodeClassLabelKey,
	}, nil
}

// ClusterRules: read KWOKNodeClasses and write their status, create the Node
// of a launched NodeClaim, and write a rebooted Node's boot ID.
func (p *Provider) ClusterRules() []cloudprovider.ClusterRule {
	return []cloudprovider.ClusterRule{
		{PolicyRule: rbacv1.PolicyRule{APIGroups: []string{kwokv1alpha1.Group}, Resources: []string{"kwoknodeclasses"}, Verbs: []string{"get", "list", "watch"}}},
		{PolicyRule: rbacv1.PolicyRule{APIGroups: []string{kwokv1alpha1.Group}, Resources: []string{"kwoknodeclasses/status"}, Verbs: []string{"patch", "update"}}},
		{PolicyRule: rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"create"}},
			Why: "The KWOK provider registers the Node of a launched NodeClaim itself (no kubelet does)."},
		{PolicyRule: rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"nodes/status"}, Verbs: []string{"patch"}},
			Why: "A KWOK reboot gives the Node a new boot ID, as a kubelet that booted again would."},
	}
}

// AdminRules: admins manage KWOKNodeClasses, with the verbs the AWS provider
// grants on EC2NodeClasses.
func (p *Provider) AdminRules() []cloudprovider.ClusterRule {
	return []cloudprovider.ClusterRule{
		{PolicyRule: rbacv1.PolicyRule{APIGroups: []string{kwokv1alpha1.Group}, Resources: []string{"kwoknodeclasses"}, Verbs: []string{"get", "list", "watch", "create", "delete", "patch"}}},
	}
}

// Offline plans with the KWOK catalog in-process (INSTANCE_TYPES_FILE_PATH
// as the controller reads it) and prices KWOK nodes from it.
func (p *Provider) Offline() cloudprovider.Offline { return offline{} }
