package providers

import (
	"errors"
	"flag"
	"strings"
	"testing"

	"github.com/karpenter-go/karpenter/pkg/operator/options"
)

// parse registers the core settings and every provider's on one flag set, as
// cmd/karpenter does; a flag two of them define would panic here.
func parse(t *testing.T, args []string, env map[string]string) (*options.Options, string, error) {
	t.Helper()
	fs := flag.NewFlagSet("karpenter", flag.ContinueOnError)
	getenv := func(k string) string { return env[k] }
	core, finish := options.Register(fs, getenv)
	choose := Register(fs, getenv, core)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	if err := finish(); err != nil {
		t.Fatal(err)
	}
	p, err := choose()
	if err != nil {
		return core, "", err
	}
	if p.Name() != core.CloudProvider {
		t.Fatalf("chose %q but core.CloudProvider is %q", p.Name(), core.CloudProvider)
	}
	return core, p.Name(), nil
}

func TestKWOKIsTheDefault(t *testing.T) {
	if _, name, err := parse(t, nil, nil); err != nil || name != "kwok" {
		t.Fatalf("default provider %q (%v), want kwok", name, err)
	}
}

func TestEnvironmentThenFlagChooses(t *testing.T) {
	_, _, err := parse(t, nil, map[string]string{"CLOUD_PROVIDER": "aws"})
	if !errors.Is(err, ErrNotImplemented) {
		t.Fatalf("CLOUD_PROVIDER=aws: %v, want the not-implemented error", err)
	}
	if _, name, err := parse(t, []string{"--cloud-provider=kwok"}, map[string]string{"CLOUD_PROVIDER": "aws"}); err != nil || name != "kwok" {
		t.Fatalf("the flag must win over the environment: %q, %v", name, err)
	}
}

func TestAWSSaysNotImplemented(t *testing.T) {
	_, _, err := parse(t, []string{"--cloud-provider=aws"}, nil)
	if !errors.Is(err, ErrNotImplemented) || err.Error() != "cloud provider aws is not implemented yet; use --cloud-provider=kwok" {
		t.Fatalf("error %v, want the not-implemented one", err)
	}
}

func TestUnknownProviderIsRejected(t *testing.T) {
	_, _, err := parse(t, []string{"--cloud-provider=gcp"}, nil)
	if err == nil || !strings.Contains(err.Error(), `cloud-provider "gcp": must be kwok or aws`) {
		t.Fatalf("error %v, want it to list kwok or aws", err)
	}
}

// TestProviderSettingsAreOnTheCommandLine: a provider's flags are accepted
// whichever provider is chosen, and only the chosen one's are checked.
func TestProviderSettingsAreOnTheCommandLine(t *testing.T) {
	if _, name, err := parse(t, []string{"--instance-types-file-path=/tmp/types.json"}, nil); err != nil || name != "kwok" {
		t.Fatalf("KWOK flag: %q, %v", name, err)
	}
	for _, p := range All() {
		if p.Name() == "" {
			t.Errorf("provider %T without a name", p)
		}
	}
}

func TestOneOf(t *testing.T) {
	for want, names := range map[string][]string{"a": {"a"}, "a or b": {"a", "b"}, "a, b or c": {"a", "b", "c"}} {
		if got := oneOf(names); got != want {
			t.Errorf("oneOf(%v) = %q, want %q", names, got, want)
		}
	}
}
