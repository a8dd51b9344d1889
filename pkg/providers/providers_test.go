package providers

import (
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
	if _, name, err := parse(t, nil, map[string]string{"CLOUD_PROVIDER": "aws", "CLUSTER_NAME": "demo"}); err != nil || name != "aws" {
		t.Fatalf("CLOUD_PROVIDER=aws: %q, %v", name, err)
	}
	if _, name, err := parse(t, []string{"--cloud-provider=kwok"}, map[string]string{"CLOUD_PROVIDER": "aws"}); err != nil || name != "kwok" {
		t.Fatalf("the flag must win over the environment: %q, %v", name, err)
	}
}

// TestAWSNeedsAClusterName: the aws provider tags and discovers by the
// cluster name, so choosing it without one stops start-up naming the
// setting; with one (flag or environment, the core's one flag) it validates.
func TestAWSNeedsAClusterName(t *testing.T) {
	_, _, err := parse(t, []string{"--cloud-provider=aws"}, nil)
	if err == nil || !strings.Contains(err.Error(), "cluster-name (CLUSTER_NAME) is required for the aws cloud provider") {
		t.Fatalf("error %v, want it to name CLUSTER_NAME", err)
	}
	for _, c := range []struct {
		args []string
		env  map[string]string
	}{
		{[]string{"--cloud-provider=aws", "--cluster-name=demo"}, nil},
		{[]string{"--cloud-provider=aws"}, map[string]string{"CLUSTER_NAME": "demo"}},
	} {
		core, name, err := parse(t, c.args, c.env)
		if err != nil || name != "aws" || core.ClusterName != "demo" {
			t.Errorf("%v %v: %q, cluster %q, %v", c.args, c.env, name, core.ClusterName, err)
		}
	}
}

// TestAWSSettingsAreCheckedWhenChosen: a malformed AWS variable is reported,
// named, only when aws is the provider.
func TestAWSSettingsAreCheckedWhenChosen(t *testing.T) {
	bad := map[string]string{"CLUSTER_NAME": "demo", "RESERVED_ENIS": "two"}
	if _, _, err := parse(t, []string{"--cloud-provider=aws"}, bad); err == nil || !strings.Contains(err.Error(), `RESERVED_ENIS="two" is not an integer`) {
		t.Fatalf("error %v, want it to name RESERVED_ENIS", err)
	}
	if _, name, err := parse(t, nil, bad); err != nil || name != "kwok" {
		t.Fatalf("kwok must not check the aws settings: %q, %v", name, err)
	}
	if _, _, err := parse(t, []string{"--cloud-provider=aws", "--vm-memory-overhead-percent=-2"}, bad); err == nil || !strings.Contains(err.Error(), "vm-memory-overhead-percent") {
		t.Fatalf("error %v, want it to name vm-memory-overhead-percent", err)
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
