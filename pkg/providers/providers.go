// Package providers is the registry of the cloud providers compiled into the
// binary. cmd/karpenter imports only this package to offer them: Register adds
// --cloud-provider and every provider's settings to the command line, and
// returns the chosen Provider, whose Bundle the operator then runs.
//
// Adding a provider: write pkg/providers/<name> with a constructor
// returning a cloudprovider.Provider (see kwok.NewProvider: its settings, its
// Validate, New building the Bundle, Offline for kubectl-karpenter and
// ClusterRules for the chart), then add one line to All. kubectl-karpenter
// and the chart's RBAC (hack/chartrbac) take every provider from All.
package providers

import (
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/karpenter-go/karpenter/pkg/cloudprovider"
	"github.com/karpenter-go/karpenter/pkg/operator/options"
	"github.com/karpenter-go/karpenter/pkg/providers/aws"
	"github.com/karpenter-go/karpenter/pkg/providers/kwok"
)

// All returns a fresh value of every provider, the default of --cloud-provider
// first. Values are fresh because each holds the settings it parsed.
func All() []cloudprovider.Provider {
	return []cloudprovider.Provider{
		kwok.NewProvider(),
		aws.NewProvider(),
	}
}

// Register adds --cloud-provider (CLOUD_PROVIDER; default the first of All) to
// fs, writing the choice to core.CloudProvider, and every provider's own
// settings. Call the returned function after fs.Parse (and after the core
// settings were finished): it checks the choice and the chosen provider's
// settings, and returns that provider.
func Register(fs *flag.FlagSet, getenv func(string) string, core *options.Options) func() (cloudprovider.Provider, error) {
	all := All()
	names := make([]string, len(all))
	for i, p := range all {
		names[i] = p.Name()
	}
	fs.StringVar(&core.CloudProvider, "cloud-provider", options.NewEnv(getenv).String("CLOUD_PROVIDER", names[0]),
		"Cloud provider: "+oneOf(names)+".")
	// One Env per provider: a bad value of a provider not chosen is no error.
	envs := make([]*options.Env, len(all))
	for i, p := range all {
		envs[i] = options.NewEnv(getenv)
		p.AddFlags(fs, envs[i])
	}
	return func() (cloudprovider.Provider, error) {
		for i, p := range all {
			if p.Name() == core.CloudProvider {
				if err := errors.Join(envs[i].Err(), p.Validate()); err != nil {
					return nil, err
				}
				return p, nil
			}
		}
		return nil, fmt.Errorf("cloud-provider %q: must be %s", core.CloudProvider, oneOf(names))
	}
}

// oneOf lists names as "a or b", "a, b or c".
func oneOf(names []string) string {
	if len(names) == 1 {
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
